/*
 * json.c - recursive-descent JSON parser into an arena-allocated tree.
 *
 * Written for untrusted zarr.json files: every read is bounded by the
 * buffer end, recursion by limits->max_depth, memory by limits->max_bytes
 * (counted over the arena's blocks, so a document of many tiny values
 * cannot make the tree grow past it), and a number token by
 * limits->max_number_len (strtod's cost grows with the digits it reads).
 */
#define _GNU_SOURCE
#include "json.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

const struct json_limits json_default_limits = {
	.max_depth = 256,
	.max_bytes = 64u << 20,
	.max_number_len = 1024,
};

/* Arena blocks: small allocations share 64 KiB blocks; a large string
 * gets a block of its own so no block is mostly empty. */
#define ARENA_BLOCK (64u << 10)

struct arena_block {
	struct arena_block *next;
	size_t used, cap;
	alignas(max_align_t) unsigned char data[];
};

struct json_doc {
	struct arena_block *blocks;
	size_t bytes;
	size_t max_bytes;
	struct json_value *root;
};

struct parser {
	const char *start, *p, *end;
	struct json_doc *doc;
	const struct json_limits *lim;
	struct json_error *err;
	int depth;
};

/* Record the first failure at position `at`; the parse then unwinds. */
__attribute__((format(printf, 3, 4)))
static int fail(struct parser *ps, const char *at, const char *fmt, ...)
{
	struct json_error *e = ps->err;
	va_list ap;

	if (e == NULL)
		return -1;
	e->offset = (size_t)(at - ps->start);
	e->line = 1;
	e->col = 1;
	for (const char *q = ps->start; q < at; q++) {
		if (*q == '\n') {
			e->line++;
			e->col = 1;
		} else {
			e->col++;
		}
	}
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}

static void *arena_alloc(struct parser *ps, size_t n)
{
	struct json_doc *d = ps->doc;
	struct arena_block *b = d->blocks;
	const size_t align = alignof(max_align_t);
	size_t need, cap;

	if (n > SIZE_MAX / 2) {
		fail(ps, ps->p, "document needs more memory than allowed");
		return NULL;
	}
	need = (n + align - 1) & ~(align - 1);
	if (b != NULL && b->cap - b->used >= need) {
		void *r = b->data + b->used;

		b->used += need;
		return r;
	}
	cap = need > ARENA_BLOCK / 4 ? need : ARENA_BLOCK;
	if (d->bytes + sizeof(*b) + cap > d->max_bytes) {
		fail(ps, ps->p, "document needs more than %zu bytes of memory",
		     d->max_bytes);
		return NULL;
	}
	b = malloc(sizeof(*b) + cap);
	if (b == NULL) {
		fail(ps, ps->p, "out of memory");
		return NULL;
	}
	d->bytes += sizeof(*b) + cap;
	b->cap = cap;
	b->used = need;
	/* A block of its own goes behind the current one, so the current
	 * block keeps serving small allocations; a fresh arena block
	 * becomes the current one. */
	if (need == cap && d->blocks != NULL) {
		b->next = d->blocks->next;
		d->blocks->next = b;
	} else {
		b->next = d->blocks;
		d->blocks = b;
	}
	return b->data;
}

static struct json_value *new_value(struct parser *ps, enum json_type t)
{
	struct json_value *v = arena_alloc(ps, sizeof(*v));

	if (v != NULL) {
		memset(v, 0, sizeof(*v));
		v->type = t;
	}
	return v;
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' ||
		*ps->p == '\r'))
		ps->p++;
}

static int parse_value(struct parser *ps, struct json_value **out);

static int hex4(const char *p, unsigned *out)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0.
 */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned c = p[0];
	size_t n;
	unsigned cp, min;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if ((size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

size_t json_quote(char *out, const char *s, size_t len, size_t *bad)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	char *o = out;

	*o++ = '"';
	while (p < end) {
		size_t n = utf8_len(p, end);

		if (n == 0) {
			*bad = (size_t)(p - (const unsigned char *)s);
			return 0;
		}
		if (*p == '"' || *p == '\\') {
			*o++ = '\\';
			*o++ = (char)*p;
		} else if (*p < 0x20) {
			memcpy(o, "\\u00", 4);
			o[4] = hex[*p >> 4];
			o[5] = hex[*p & 15];
			o += 6;
		} else {
			memcpy(o, p, n);
			o += n;
		}
		p += n;
	}
	*o++ = '"';
	return (size_t)(o - out);
}

/*
 * A string starting at the opening quote.  The raw text bounds the
 * decoded length (every escape shrinks or keeps its size), so one arena
 * allocation of the raw length suffices.
 */
static int parse_string(struct parser *ps, const char **out, size_t *out_len)
{
	const char *q = ps->p + 1, *close;
	char *buf, *o;

	for (close = q; close < ps->end && *close != '"'; close++)
		if (*close == '\\' && close + 1 < ps->end)
			close++;
	if (close >= ps->end)
		return fail(ps, ps->p, "unterminated string");
	buf = arena_alloc(ps, (size_t)(close - q) + 1);
	if (buf == NULL)
		return -1;
	o = buf;
	while (q < close) {
		unsigned char c = (unsigned char)*q;

		if (c < 0x20)
			return fail(ps, q, "control character 0x%02x in string",
				    c);
		if (c >= 0x80) {
			size_t n = utf8_len((const unsigned char *)q,
					    (const unsigned char *)close);

			if (n == 0)
				return fail(ps, q, "invalid UTF-8 in string");
			memcpy(o, q, n);
			o += n;
			q += n;
			continue;
		}
		if (c != '\\') {
			*o++ = (char)c;
			q++;
			continue;
		}
		/* The scan above guarantees a character after '\\'. */
		switch (q[1]) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '/': *o++ = '/'; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			unsigned cp, lo;

			if (close - q < 6 || hex4(q + 2, &cp) != 0)
				return fail(ps, q, "bad \\u escape");
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return fail(ps, q, "lone low surrogate \\u%04x",
					    cp);
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (close - q < 12 || q[6] != '\\' ||
				    q[7] != 'u' || hex4(q + 8, &lo) != 0 ||
				    lo < 0xdc00 || lo > 0xdfff)
					return fail(ps, q,
						    "high surrogate \\u%04x without "
						    "a low one", cp);
				cp = 0x10000 + ((cp - 0xd800) << 10) +
				     (lo - 0xdc00);
				q += 6;
			}
			o += put_utf8(o, cp);
			q += 6;
			continue;
		}
		default:
			return fail(ps, q, "bad escape \\%c",
				    q[1] >= 0x20 && q[1] < 0x7f ? q[1] : '?');
		}
		q += 2;
	}
	*o = '\0';
	*out = buf;
	*out_len = (size_t)(o - buf);
	ps->p = close + 1;
	return 0;
}

/* strtod in the "C" locale, whatever the program's locale: a host that
 * set LC_NUMERIC to a comma locale must still read "0.5". */
static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void make_c_locale(void)
{
	c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int parse_number(struct parser *ps, struct json_value *v)
{
	const char *s = ps->p, *q = s;
	uint64_t mag = 0;
	int neg = 0, integral = 1, overflow = 0;
	size_t n;
	char small[64], *copy = small;

	if (q < ps->end && *q == '-') {
		neg = 1;
		q++;
	}
	if (q >= ps->end || !is_digit(*q))
		return fail(ps, s, "bad number");
	if (*q == '0') {
		q++;
		if (q < ps->end && is_digit(*q))
			return fail(ps, s, "number with a leading zero");
	} else {
		while (q < ps->end && is_digit(*q)) {
			unsigned d = (unsigned)(*q - '0');

			if (mag > (UINT64_MAX - d) / 10)
				overflow = 1;
			else
				mag = mag * 10 + d;
			q++;
		}
	}
	if (q < ps->end && *q == '.') {
		integral = 0;
		q++;
		if (q >= ps->end || !is_digit(*q))
			return fail(ps, s, "no digit after the decimal point");
		while (q < ps->end && is_digit(*q))
			q++;
	}
	if (q < ps->end && (*q == 'e' || *q == 'E')) {
		integral = 0;
		q++;
		if (q < ps->end && (*q == '+' || *q == '-'))
			q++;
		if (q >= ps->end || !is_digit(*q))
			return fail(ps, s, "no digit in the exponent");
		while (q < ps->end && is_digit(*q))
			q++;
	}
	n = (size_t)(q - s);
	if (n > ps->lim->max_number_len)
		return fail(ps, s, "number longer than %zu characters",
			    ps->lim->max_number_len);

	v->num_flags = 0;
	if (integral && !overflow) {
		if (!neg) {
			v->u = mag;
			v->num_flags |= JSON_INT_U64;
			if (mag <= (uint64_t)INT64_MAX) {
				v->i = (int64_t)mag;
				v->num_flags |= JSON_INT_I64;
			}
		} else if (mag <= (uint64_t)INT64_MAX + 1) {
			/* -2^63 has no positive int64 twin: negate in
			 * unsigned arithmetic. */
			v->i = (int64_t)(0 - mag);
			v->num_flags |= JSON_INT_I64;
			if (mag == 0) {
				v->u = 0;
				v->num_flags |= JSON_INT_U64;
			}
		}
	}

	/* strtod needs a terminated copy: the buffer may end right after
	 * the digits. */
	if (n >= sizeof(small)) {
		copy = malloc(n + 1);
		if (copy == NULL)
			return fail(ps, s, "out of memory");
	}
	memcpy(copy, s, n);
	copy[n] = '\0';
	pthread_once(&c_locale_once, make_c_locale);
	if (c_locale != (locale_t)0)
		v->num = strtod_l(copy, NULL, c_locale);
	else
		v->num = strtod(copy, NULL);
	if (copy != small)
		free(copy);
	ps->p = q;
	return 0;
}

static int cmp_members(const void *a, const void *b)
{
	const struct json_value *x = *(const struct json_value *const *)a;
	const struct json_value *y = *(const struct json_value *const *)b;
	size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
	int c = memcmp(x->key, y->key, n);

	if (c != 0)
		return c;
	return (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

static int same_key(const struct json_value *a, const struct json_value *b)
{
	return a->key_len == b->key_len &&
	       memcmp(a->key, b->key, a->key_len) == 0;
}

/* Refuse repeated member names: quadratic for small objects, a sort of
 * pointers for large ones so a hostile object cannot cost n^2. */
static int check_duplicates(struct parser *ps, const char *at,
			    struct json_value *obj)
{
	const struct json_value *dup = NULL;

	if (obj->len <= 16) {
		for (const struct json_value *a = obj->child; a && !dup;
		     a = a->next)
			for (const struct json_value *b = a->next; b; b = b->next)
				if (same_key(a, b)) {
					dup = a;
					break;
				}
	} else {
		const struct json_value **v = malloc(obj->len * sizeof(*v));
		size_t i = 0;

		if (v == NULL)
			return fail(ps, at, "out of memory");
		for (const struct json_value *a = obj->child; a; a = a->next)
			v[i++] = a;
		qsort(v, obj->len, sizeof(*v), cmp_members);
		for (i = 1; i < obj->len && !dup; i++)
			if (same_key(v[i - 1], v[i]))
				dup = v[i];
		free(v);
	}
	if (dup != NULL)
		return fail(ps, at, "member \"%.*s\" appears twice",
			    (int)(dup->key_len > 60 ? 60 : dup->key_len),
			    dup->key);
	return 0;
}

static int enter(struct parser *ps)
{
	if (++ps->depth > ps->lim->max_depth)
		return fail(ps, ps->p, "nesting deeper than %d levels",
			    ps->lim->max_depth);
	ps->p++; /* the bracket */
	skip_ws(ps);
	return 0;
}

static int parse_array(struct parser *ps, struct json_value *arr)
{
	struct json_value **tail = &arr->child;

	if (enter(ps) != 0)
		return -1;
	if (ps->p < ps->end && *ps->p == ']') {
		ps->p++;
		ps->depth--;
		return 0;
	}
	for (;;) {
		struct json_value *item;

		if (parse_value(ps, &item) != 0)
			return -1;
		*tail = item;
		tail = &item->next;
		arr->len++;
		skip_ws(ps);
		if (ps->p >= ps->end)
			return fail(ps, ps->p, "unterminated array");
		if (*ps->p == ']')
			break;
		if (*ps->p != ',')
			return fail(ps, ps->p, "expected ',' or ']' in array");
		ps->p++;
	}
	ps->p++;
	ps->depth--;
	return 0;
}

static int parse_object(struct parser *ps, struct json_value *obj)
{
	struct json_value **tail = &obj->child;
	const char *open = ps->p;

	if (enter(ps) != 0)
		return -1;
	if (ps->p < ps->end && *ps->p == '}') {
		ps->p++;
		ps->depth--;
		return 0;
	}
	for (;;) {
		struct json_value *item;
		const char *key;
		size_t key_len;

		skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != '"')
			return fail(ps, ps->p, "expected a member name");
		if (parse_string(ps, &key, &key_len) != 0)
			return -1;
		skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != ':')
			return fail(ps, ps->p, "expected ':' after member name");
		ps->p++;
		if (parse_value(ps, &item) != 0)
			return -1;
		item->key = key;
		item->key_len = key_len;
		*tail = item;
		tail = &item->next;
		obj->len++;
		skip_ws(ps);
		if (ps->p >= ps->end)
			return fail(ps, ps->p, "unterminated object");
		if (*ps->p == '}')
			break;
		if (*ps->p != ',')
			return fail(ps, ps->p, "expected ',' or '}' in object");
		ps->p++;
	}
	ps->p++;
	ps->depth--;
	return check_duplicates(ps, open, obj);
}

static int literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return fail(ps, ps->p, "unexpected character '%c'",
			    *ps->p >= 0x20 && *ps->p < 0x7f ? *ps->p : '?');
	ps->p += n;
	return 0;
}

static int parse_value(struct parser *ps, struct json_value **out)
{
	struct json_value *v;
	const char *at;

	skip_ws(ps);
	if (ps->p >= ps->end)
		return fail(ps, ps->p, "unexpected end of text");
	at = ps->p;
	switch (*ps->p) {
	case '{':
		v = new_value(ps, JSON_OBJECT);
		if (v == NULL || parse_object(ps, v) != 0)
			return -1;
		break;
	case '[':
		v = new_value(ps, JSON_ARRAY);
		if (v == NULL || parse_array(ps, v) != 0)
			return -1;
		break;
	case '"':
		v = new_value(ps, JSON_STRING);
		if (v == NULL || parse_string(ps, &v->str, &v->len) != 0)
			return -1;
		break;
	case 't':
		v = new_value(ps, JSON_TRUE);
		if (v == NULL || literal(ps, "true") != 0)
			return -1;
		break;
	case 'f':
		v = new_value(ps, JSON_FALSE);
		if (v == NULL || literal(ps, "false") != 0)
			return -1;
		break;
	case 'n':
		v = new_value(ps, JSON_NULL);
		if (v == NULL || literal(ps, "null") != 0)
			return -1;
		break;
	default:
		if (*ps->p != '-' && !is_digit(*ps->p))
			return fail(ps, ps->p, "unexpected character '%c'",
				    *ps->p >= 0x20 && *ps->p < 0x7f ? *ps->p
								     : '?');
		v = new_value(ps, JSON_NUMBER);
		if (v == NULL || parse_number(ps, v) != 0)
			return -1;
		break;
	}
	v->raw = at;
	v->raw_len = (size_t)(ps->p - at);
	*out = v;
	return 0;
}

struct json_doc *json_parse(const char *text, size_t len,
			    const struct json_limits *limits,
			    struct json_error *err)
{
	struct json_doc *doc = calloc(1, sizeof(*doc));
	struct parser ps = {
		.start = text,
		.p = text,
		.end = text + len,
		.doc = doc,
		.lim = limits ? limits : &json_default_limits,
		.err = err,
	};

	if (err != NULL) {
		err->offset = 0;
		err->line = err->col = 0;
		err->msg[0] = '\0';
	}
	if (doc == NULL) {
		if (err != NULL)
			snprintf(err->msg, sizeof(err->msg), "out of memory");
		return NULL;
	}
	if (text == NULL && len != 0) {
		fail(&ps, text, "no text");
		free(doc);
		return NULL;
	}
	doc->max_bytes = ps.lim->max_bytes;
	if (parse_value(&ps, &doc->root) != 0) {
		json_free(doc);
		return NULL;
	}
	skip_ws(&ps);
	if (ps.p != ps.end) {
		fail(&ps, ps.p, "trailing characters after the value");
		json_free(doc);
		return NULL;
	}
	return doc;
}

const struct json_value *json_root(const struct json_doc *doc)
{
	return doc ? doc->root : NULL;
}

void json_free(struct json_doc *doc)
{
	struct arena_block *b, *next;

	if (doc == NULL)
		return;
	for (b = doc->blocks; b != NULL; b = next) {
		next = b->next;
		free(b);
	}
	free(doc);
}

const struct json_value *json_get(const struct json_value *v, const char *key)
{
	size_t n;

	if (v == NULL || v->type != JSON_OBJECT || key == NULL)
		return NULL;
	n = strlen(key);
	for (const struct json_value *m = v->child; m; m = m->next)
		if (m->key_len == n && memcmp(m->key, key, n) == 0)
			return m;
	return NULL;
}

const struct json_value *json_at(const struct json_value *v, size_t i)
{
	const struct json_value *m;

	if (v == NULL || v->type != JSON_ARRAY || i >= v->len)
		return NULL;
	for (m = v->child; i > 0; i--)
		m = m->next;
	return m;
}

int json_is_str(const struct json_value *v, const char *s)
{
	return v != NULL && v->type == JSON_STRING && strlen(s) == v->len &&
	       memcmp(v->str, s, v->len) == 0;
}

const char *json_type_name(const struct json_value *v)
{
	static const char *const names[] = {
		[JSON_NULL] = "null",     [JSON_FALSE] = "boolean",
		[JSON_TRUE] = "boolean",  [JSON_NUMBER] = "number",
		[JSON_STRING] = "string", [JSON_ARRAY] = "array",
		[JSON_OBJECT] = "object",
	};

	return v ? names[v->type] : "nothing";
}
