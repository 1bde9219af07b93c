/*
 * json.c - libFuzzer target: src/json.c's json_parse on any bytes, with
 * the default limits and with tight ones, then every accessor over the
 * tree it returns.  The text is handed over without a terminating NUL in
 * a buffer of exactly its size, so a read past the end is an ASan report.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-common.h"
#include "json.h"

static size_t walk(const struct json_value *v, int depth)
{
	size_t n = 1;

	if (v == NULL || depth > 300)
		return 0;
	(void)json_type_name(v);
	if (v->type == JSON_STRING && v->len > 0)
		n += (unsigned char)v->str[v->len - 1] == 0xff;
	if (v->type == JSON_OBJECT && v->child != NULL) {
		/* Look each member up by its name (NUL-free names only). */
		char key[64];

		if (v->child->key_len < sizeof(key) &&
		    memchr(v->child->key, 0, v->child->key_len) == NULL) {
			memcpy(key, v->child->key, v->child->key_len);
			key[v->child->key_len] = '\0';
			n += json_get(v, key) != NULL;
		}
		n += json_is_str(json_get(v, "name"), "bytes");
	}
	if (v->type == JSON_ARRAY)
		n += json_at(v, v->len ? v->len - 1 : 0) != NULL;
	for (const struct json_value *c = v->child; c != NULL; c = c->next)
		n += walk(c, depth + 1);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct json_limits tight = {
		.max_depth = 8, .max_bytes = 1 << 16, .max_number_len = 40
	};
	struct json_error err;
	char *text = malloc(size ? size : 1);
	struct json_doc *doc;

	if (text == NULL)
		return 0;
	if (size > 0)
		memcpy(text, data, size);
	doc = json_parse(text, size, NULL, &err);
	if (doc != NULL) {
		walk(json_root(doc), 0);
		json_free(doc);
	}
	doc = json_parse(text, size, &tight, NULL);
	if (doc != NULL) {
		walk(json_root(doc), 0);
		json_free(doc);
	}
	free(text);
	return 0;
}
