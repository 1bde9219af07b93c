#include "attrs.h"

#include <stdlib.h>

#include "json.h"

/* What one attribute adds to zarr.json besides its key and value: the
 * line break, indent, ": " and comma of zarr_meta.c's layout. */
#define ATTR_OVERHEAD 8

/* The limits of the library's reader (src/reader_impl.h) less the two levels
 * of zarr.json around a value, so that every store written reads back. */
static const struct json_limits value_limits = {
	.max_depth = SHARDPIPE_MAX_ATTRIBUTE_DEPTH,
	.max_bytes = 64u << 20,
	.max_number_len = 1024,
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The start of the quoted key, cut at a character for a message. */
static int shown(const struct attr *a)
{
	int n = a->key_len > 48 ? 48 : (int)a->key_len;

	while (n < (int)a->key_len && ((unsigned char)a->key[n] & 0xc0) == 0x80)
		n--;
	return n;
}

/* "attribute \"key\"" in a message, a long key cut with "...". */
#define KEY_FMT "attribute %.*s%s"
#define KEY_ARGS(a)                                                           \
	shown(a), (a)->key, shown(a) < (int)(a)->key_len ? "...\"" : ""

static void attr_free(struct attr *a)
{
	free(a->key);
	free(a->value);
	memset(a, 0, sizeof(*a));
}

static int check_key(const char *key, struct attr *a, struct sp_err *err)
{
	size_t len, bad = 0;

	SP_RETURN_IF(key == NULL || *key == '\0', err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "an attribute needs a key (it is %s)",
		     key == NULL ? "NULL" : "empty");
	len = strlen(key);
	SP_RETURN_IF(len + 2 + ATTR_OVERHEAD > SHARDPIPE_MAX_ATTRIBUTES_BYTES,
		     err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "an attribute key of %zu bytes exceeds the %u bytes all "
		     "attributes may take", len,
		     (unsigned)SHARDPIPE_MAX_ATTRIBUTES_BYTES);
	a->key = malloc(JSON_QUOTE_MAX(len));
	SP_RETURN_IF(a->key == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for an attribute key of %zu bytes", len);
	a->key_len = json_quote(a->key, key, len, &bad);
	SP_RETURN_IF(a->key_len == 0, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "attribute key: byte %zu (0x%02x) is not UTF-8", bad,
		     (unsigned)(unsigned char)key[bad]);
	SP_RETURN_IF(strcmp(key, "ome") == 0, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "attribute \"ome\" is reserved for the library's "
		     "OME-NGFF metadata");
	return SHARDPIPE_OK;
}

static int check_value(const char *json, struct attr *a, struct sp_err *err)
{
	size_t len = strlen(json), start = 0;
	struct json_error je;
	struct json_doc *doc;

	SP_RETURN_IF(a->key_len + len + ATTR_OVERHEAD >
			     SHARDPIPE_MAX_ATTRIBUTES_BYTES,
		     err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     KEY_FMT ": %zu bytes of JSON exceed the %u bytes all "
		     "attributes may take", KEY_ARGS(a), len,
		     (unsigned)SHARDPIPE_MAX_ATTRIBUTES_BYTES);
	doc = json_parse(json, len, &value_limits, &je);
	SP_RETURN_IF(doc == NULL, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     KEY_FMT ": not one JSON value: %s at byte %zu",
		     KEY_ARGS(a), je.msg, je.offset);
	json_free(doc);
	/* Written as given, so numbers keep every digit; only the
	 * whitespace around the value goes. */
	while (is_space(json[start]))
		start++;
	while (len > start && is_space(json[len - 1]))
		len--;
	a->value_len = len - start;
	a->value = malloc(a->value_len + 1);
	SP_RETURN_IF(a->value == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for %zu bytes of attribute", a->value_len);
	memcpy(a->value, json + start, a->value_len);
	a->value[a->value_len] = '\0';
	return SHARDPIPE_OK;
}

/* Check key and json (NULL: the key alone) into *out. */
static int attr_check(const char *key, const char *json, struct attr *out,
		      struct sp_err *err)
{
	struct attr a = { 0 };
	int rc = check_key(key, &a, err);

	if (rc == SHARDPIPE_OK && json != NULL)
		rc = check_value(json, &a, err);
	if (rc != SHARDPIPE_OK)
		attr_free(&a);
	*out = a;
	return rc;
}

static size_t attr_bytes(const struct attr *a)
{
	return a->key_len + a->value_len + ATTR_OVERHEAD;
}

int attrs_set(struct attrs *set, const char *key, const char *json,
	      struct sp_err *err)
{
	struct attr a;
	size_t i, bytes;

	SP_FORWARD(attr_check(key, json, &a, err));
	for (i = 0; i < set->n; i++)
		if (set->v[i].key_len == a.key_len &&
		    memcmp(set->v[i].key, a.key, a.key_len) == 0)
			break;
	if (json == NULL) {
		attr_free(&a);
		if (i < set->n) {
			set->bytes -= attr_bytes(&set->v[i]);
			attr_free(&set->v[i]);
			memmove(set->v + i, set->v + i + 1,
				(set->n - i - 1) * sizeof(*set->v));
			set->n--;
		}
		return SHARDPIPE_OK;
	}
	bytes = set->bytes + attr_bytes(&a) -
		(i < set->n ? attr_bytes(&set->v[i]) : 0);
	if (bytes > SHARDPIPE_MAX_ATTRIBUTES_BYTES) {
		int rc = sp_err_set(err, SHARDPIPE_ERR_INVALID_ARGUMENT,
				    KEY_FMT ": the attributes would take %zu "
				    "bytes, more than the %u allowed",
				    KEY_ARGS(&a), bytes,
				    (unsigned)SHARDPIPE_MAX_ATTRIBUTES_BYTES);

		attr_free(&a);
		return rc;
	}
	if (i == set->n && set->n == set->cap) {
		size_t cap = set->cap ? 2 * set->cap : 8;
		struct attr *v = realloc(set->v, cap * sizeof(*v));

		if (v == NULL) {
			attr_free(&a);
			return sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					  "out of memory for %zu attributes",
					  cap);
		}
		set->v = v;
		set->cap = cap;
	}
	if (i < set->n)
		attr_free(&set->v[i]);
	else
		set->n++;
	set->v[i] = a;
	set->bytes = bytes;
	return SHARDPIPE_OK;
}

void attrs_free(struct attrs *set)
{
	for (size_t i = 0; i < set->n; i++)
		attr_free(&set->v[i]);
	free(set->v);
	memset(set, 0, sizeof(*set));
}
