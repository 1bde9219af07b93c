/*
 * t/json.c - the zarr.json parser: valid documents, every kind of
 * malformed one, hostile nesting and numbers, and random mutations that
 * must fail cleanly or parse, never crash.
 */
#include "json.h"
#include "tap.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Parse text from an exactly-sized heap copy, so that reading past its
 * end is a fault under a memory checker. */
static struct json_doc *parse_exact(const char *text, size_t n,
				    const struct json_limits *lim,
				    struct json_error *err)
{
	char *copy = malloc(n ? n : 1);
	struct json_doc *doc;

	if (copy == NULL)
		bail("out of memory");
	memcpy(copy, text, n);
	doc = json_parse(copy, n, lim, err);
	free(copy);
	return doc;
}

static struct json_doc *parse(const char *text, struct json_error *err)
{
	return parse_exact(text, strlen(text), NULL, err);
}

static void test_valid(void)
{
	struct json_error err;
	struct json_doc *doc;
	const struct json_value *root, *v;

	doc = parse(" {\"zarr_format\": 3, \"shape\": [10, 0, 18446744073709551615],"
		    " \"name\": \"a\\\"b\\\\c\\/\\b\\f\\n\\r\\t\", \"t\": true,"
		    " \"f\": false, \"n\": null, \"o\": {}, \"a\": [],"
		    " \"x\": -1.5e-3 }\n", &err);
	ok(doc != NULL, "a document with every kind of value parses");
	if (doc == NULL) {
		diag("error: %s", err.msg);
		return;
	}
	root = json_root(doc);
	is_int(root->type, JSON_OBJECT, "root is an object");
	is_int((long long)root->len, 9, "it has 9 members");
	v = json_get(root, "zarr_format");
	ok(v && v->type == JSON_NUMBER && (v->num_flags & JSON_INT_I64) &&
	   v->i == 3 && v->num == 3.0, "zarr_format is the integer 3");
	v = json_get(root, "shape");
	ok(v && v->len == 3 && json_at(v, 1)->u == 0 &&
	   json_at(v, 2)->u == UINT64_MAX &&
	   (json_at(v, 2)->num_flags & JSON_INT_U64) &&
	   !(json_at(v, 2)->num_flags & JSON_INT_I64),
	   "2^64-1 is held exactly as uint64 and not as int64");
	ok(json_at(v, 3) == NULL, "json_at past the end is NULL");
	ok(json_is_str(json_get(root, "name"), "a\"b\\c/\b\f\n\r\t"),
	   "simple escapes decode");
	is_int(json_get(root, "t")->type, JSON_TRUE, "true");
	is_int(json_get(root, "f")->type, JSON_FALSE, "false");
	is_int(json_get(root, "n")->type, JSON_NULL, "null");
	ok(json_get(root, "o")->type == JSON_OBJECT &&
	   json_get(root, "o")->len == 0, "empty object");
	ok(json_get(root, "a")->type == JSON_ARRAY &&
	   json_get(root, "a")->len == 0, "empty array");
	v = json_get(root, "x");
	ok(v->num == -1.5e-3 && v->num_flags == 0,
	   "-1.5e-3 is a double, not an integer");
	ok(json_get(root, "missing") == NULL, "absent member is NULL");
	ok(json_get(v, "x") == NULL, "json_get on a number is NULL");
	json_free(doc);

	/* Scalars as the whole document. */
	doc = parse("0", &err);
	ok(doc && json_root(doc)->type == JSON_NUMBER, "a bare 0 parses");
	json_free(doc);
	doc = parse(" \"s\" ", &err);
	ok(doc && json_is_str(json_root(doc), "s"), "a bare string parses");
	json_free(doc);
	doc = parse("null", &err);
	ok(doc && json_root(doc)->type == JSON_NULL, "a bare null parses");
	json_free(doc);
}

static void test_numbers(void)
{
	struct json_error err;
	struct json_doc *doc;
	const struct json_value *v;

	doc = parse("[-9223372036854775808, 9223372036854775807, "
		    "9223372036854775808, 18446744073709551616, -9223372036854775809,"
		    " -0, 1E+2, 1e400, -1e400, 1e-400, 0.1, "
		    "1e99999999999999999999999, 123456789012345678901234567890]",
		    &err);
	ok(doc != NULL, "numbers parse");
	if (doc == NULL) {
		diag("error: %s", err.msg);
		return;
	}
	v = json_root(doc);
	ok(json_at(v, 0)->i == INT64_MIN &&
	   json_at(v, 0)->num_flags == JSON_INT_I64, "-2^63 is exact int64");
	ok(json_at(v, 1)->i == INT64_MAX &&
	   json_at(v, 1)->num_flags == (JSON_INT_I64 | JSON_INT_U64),
	   "2^63-1 fits both");
	ok(json_at(v, 2)->u == (uint64_t)1 << 63 &&
	   json_at(v, 2)->num_flags == JSON_INT_U64, "2^63 only as uint64");
	ok(json_at(v, 3)->num_flags == 0 && json_at(v, 3)->num == 0x1p64,
	   "2^64 is no integer but the double 2^64");
	ok(json_at(v, 4)->num_flags == 0, "-2^63-1 is no integer");
	ok(json_at(v, 5)->i == 0 && json_at(v, 5)->u == 0 &&
	   json_at(v, 5)->num_flags == (JSON_INT_I64 | JSON_INT_U64),
	   "-0 is the integer 0");
	ok(json_at(v, 6)->num == 100.0 && json_at(v, 6)->num_flags == 0,
	   "1E+2 is 100 but not an integer form");
	ok(isinf(json_at(v, 7)->num) && json_at(v, 7)->num > 0,
	   "1e400 is +inf");
	ok(isinf(json_at(v, 8)->num) && json_at(v, 8)->num < 0,
	   "-1e400 is -inf");
	ok(json_at(v, 9)->num == 0.0, "1e-400 underflows to 0");
	ok(json_at(v, 10)->num == 0.1, "0.1 is correctly rounded");
	ok(isinf(json_at(v, 11)->num), "an exponent of 25 digits is +inf");
	ok(json_at(v, 12)->num_flags == 0 &&
	   fabs(json_at(v, 12)->num - 1.2345678901234568e29) < 1e15,
	   "a 30-digit integer is a double");
	json_free(doc);
}

static void test_strings(void)
{
	struct json_error err;
	struct json_doc *doc;
	const struct json_value *v;

	doc = parse("[\"\\u00e9\\u20ac\\ud83d\\ude00\", \"a\\u0000b\", "
		    "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\", \"\\uD834\\uDD1E\"]",
		    &err);
	ok(doc != NULL, "unicode strings parse");
	if (doc == NULL) {
		diag("error: %s", err.msg);
		return;
	}
	v = json_root(doc);
	is_blob(json_at(v, 0)->str, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 10,
		"\\u escapes and a surrogate pair become UTF-8");
	is_int((long long)json_at(v, 0)->len, 9, "its length is 9 bytes");
	ok(json_at(v, 1)->len == 3 && memcmp(json_at(v, 1)->str, "a\0b", 3) == 0,
	   "\\u0000 is kept with its length");
	is_blob(json_at(v, 2)->str, json_at(v, 0)->str, 10,
		"raw UTF-8 equals the escaped form");
	is_blob(json_at(v, 3)->str, "\xf0\x9d\x84\x9e", 5,
		"upper-case hex surrogates decode");
	json_free(doc);
}

static const struct {
	const char *text;
	const char *why;
} bad[] = {
	{ "", "empty text" },
	{ "   ", "only whitespace" },
	{ "[", "unterminated array" },
	{ "]", "lone bracket" },
	{ "[1,]", "trailing comma in array" },
	{ "[,1]", "leading comma" },
	{ "[1 2]", "missing comma" },
	{ "{\"a\":}", "missing member value" },
	{ "{\"a\" 1}", "missing colon" },
	{ "{\"a\":1,}", "trailing comma in object" },
	{ "{1:2}", "non-string member name" },
	{ "{'a':1}", "single quotes" },
	{ "{\"a\":1", "unterminated object" },
	{ "{\"a\":1]", "mismatched bracket" },
	{ "01", "leading zero" },
	{ "-01", "negative leading zero" },
	{ "1.", "no fraction digits" },
	{ ".5", "no integer part" },
	{ "+1", "plus sign" },
	{ "1e", "no exponent digits" },
	{ "1e+", "signed exponent without digits" },
	{ "-", "lone minus" },
	{ "0x10", "hex number" },
	{ "NaN", "NaN literal" },
	{ "Infinity", "Infinity literal" },
	{ "tru", "truncated true" },
	{ "nul", "truncated null" },
	{ "True", "capitalised literal" },
	{ "\"abc", "unterminated string" },
	{ "\"abc\\\"", "escaped closing quote" },
	{ "\"\\x\"", "bad escape" },
	{ "\"\\u12\"", "short \\u escape" },
	{ "\"\\u12g4\"", "non-hex \\u escape" },
	{ "\"\\ud800\"", "lone high surrogate" },
	{ "\"\\udc00\"", "lone low surrogate" },
	{ "\"\\ud800\\u0041\"", "high surrogate with a non-surrogate" },
	{ "\"\\ud800\\ud800\"", "two high surrogates" },
	{ "\"a\tb\"", "raw tab in a string" },
	{ "\"\x01\"", "raw control character" },
	{ "\"\xff\"", "byte 0xff" },
	{ "\"\xc0\xaf\"", "overlong UTF-8" },
	{ "\"\xe0\x80\xaf\"", "overlong 3-byte UTF-8" },
	{ "\"\xed\xa0\x80\"", "UTF-8 surrogate" },
	{ "\"\xf4\x90\x80\x80\"", "above U+10FFFF" },
	{ "\"\xc3\"", "truncated UTF-8" },
	{ "[1] x", "trailing garbage" },
	{ "[1]]", "trailing bracket" },
	{ "1 2", "two values" },
	{ "{\"a\":1,\"a\":2}", "duplicate member" },
	{ "/* c */ 1", "comment" },
	{ "\xef\xbb\xbf{}", "byte order mark" },
	{ "[1,\0]", "NUL inside" },
};

static void test_malformed(void)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct json_error err;
		size_t n = strlen(bad[i].text);
		struct json_doc *doc;

		/* One case holds a NUL: give it its full length. */
		if (strcmp(bad[i].why, "NUL inside") == 0)
			n = 5;
		doc = parse_exact(bad[i].text, n, NULL, &err);
		ok(doc == NULL && err.msg[0] != '\0', "refused: %s (%s)",
		   bad[i].why, doc ? "parsed" : err.msg);
		json_free(doc);
	}
}

static void test_duplicates_large(void)
{
	char text[4096];
	size_t n = 0;
	struct json_error err;
	struct json_doc *doc;

	/* Above the quadratic-check size, through the sorted path. */
	n += (size_t)snprintf(text + n, sizeof(text) - n, "{");
	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "%s\"k%d\":%d", i ? "," : "", i, i);
	snprintf(text + n, sizeof(text) - n, "}");
	doc = parse(text, &err);
	ok(doc != NULL && json_root(doc)->len == 40,
	   "an object of 40 distinct members parses");
	json_free(doc);
	text[n] = '\0';
	snprintf(text + n, sizeof(text) - n, ",\"k17\":0}");
	doc = parse(text, &err);
	ok(doc == NULL && strstr(err.msg, "k17") != NULL,
	   "a repeat among 41 members is refused by name (%s)", err.msg);
	json_free(doc);
}

static void test_nesting(void)
{
	size_t n = 100000;
	char *text = malloc(2 * n + 1);
	struct json_error err;
	struct json_doc *doc;

	if (text == NULL)
		bail("out of memory");
	memset(text, '[', n);
	doc = parse_exact(text, n, NULL, &err);
	ok(doc == NULL && strstr(err.msg, "nesting") != NULL,
	   "100000 '[' refused for depth (%s)", err.msg);
	is_int((long long)err.offset, json_default_limits.max_depth,
	       "the fault is at the first bracket too deep");

	memset(text + n, ']', n);
	doc = parse_exact(text, 2 * n, NULL, &err);
	ok(doc == NULL, "100000 balanced brackets refused too");

	n = (size_t)json_default_limits.max_depth;
	memset(text, '[', n);
	memset(text + n, ']', n);
	doc = parse_exact(text, 2 * n, NULL, &err);
	ok(doc != NULL, "nesting at exactly the limit (%zu) parses", n);
	json_free(doc);
	memset(text, '[', n + 1);
	memset(text + n + 1, ']', n + 1);
	doc = parse_exact(text, 2 * n + 2, NULL, &err);
	ok(doc == NULL, "one level beyond the limit is refused");

	/* Objects count as nesting too. */
	n = 300;
	for (size_t i = 0; i < n; i++)
		memcpy(text + 5 * i, "{\"a\":", 5);
	doc = parse_exact(text, 5 * n, NULL, &err);
	ok(doc == NULL && strstr(err.msg, "nesting") != NULL,
	   "300 nested objects refused for depth");
	free(text);
}

static void test_limits(void)
{
	struct json_limits lim = json_default_limits;
	struct json_error err;
	struct json_doc *doc;
	size_t n = 2000000;
	char *text = malloc(2 * n + 2);
	char num[2100];

	if (text == NULL)
		bail("out of memory");
	/* A million zeros: about 80 MB of tree. */
	text[0] = '[';
	for (size_t i = 0; i < n / 2; i++) {
		text[1 + 2 * i] = '0';
		text[2 + 2 * i] = ',';
	}
	text[n] = ']';
	lim.max_bytes = 1 << 20;
	doc = parse_exact(text, n + 1, &lim, &err);
	ok(doc == NULL && strstr(err.msg, "memory") != NULL,
	   "a tree beyond max_bytes is refused (%s)", err.msg);
	/* Ten thousand zeros: about a megabyte of tree, in many arena
	 * blocks, each filled before the next is taken. */
	text[20000] = ']';
	lim.max_bytes = 4 << 20;
	doc = parse_exact(text, 20001, &lim, &err);
	ok(doc != NULL && json_root(doc)->len == 10000,
	   "a tree of many arena blocks fits a limit a few times its size "
	   "(%s)", doc != NULL ? "parsed" : err.msg);
	json_free(doc);
	free(text);

	memset(num, '1', 2000);
	num[2000] = '\0';
	doc = parse(num, &err);
	ok(doc == NULL && strstr(err.msg, "longer") != NULL,
	   "a 2000-digit number is refused by default (%s)", err.msg);
	lim = json_default_limits;
	lim.max_number_len = 4000;
	doc = parse_exact(num, 2000, &lim, &err);
	ok(doc != NULL && json_root(doc)->num_flags == 0 &&
	   isinf(json_root(doc)->num),
	   "with a higher limit it is +inf, not an integer");
	json_free(doc);

	/* A long string takes a block of its own. */
	text = malloc(300002);
	if (text == NULL)
		bail("out of memory");
	text[0] = '"';
	memset(text + 1, 'x', 300000);
	text[300001] = '"';
	doc = parse_exact(text, 300002, NULL, &err);
	ok(doc != NULL && json_root(doc)->len == 300000,
	   "a 300000-byte string parses");
	json_free(doc);
	free(text);
}

static void test_errors_position(void)
{
	struct json_error err;
	struct json_doc *doc = parse("{\n  \"a\": [1,\n  2 x]}", &err);

	ok(doc == NULL && err.line == 3 && err.col == 5,
	   "the error says line 3 column 5 (got %d:%d)", err.line, err.col);
	ok(parse_exact("tr", 2, NULL, NULL) == NULL,
	   "a NULL error record is allowed");
}

static const char *seed_doc =
	"{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[10,20],"
	"\"data_type\":\"float32\",\"chunk_grid\":{\"name\":\"regular\","
	"\"configuration\":{\"chunk_shape\":[4,4]}},\"fill_value\":\"NaN\","
	"\"codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":"
	"\"little\"}}],\"attributes\":{\"s\":\"\\u00e9\\ud83d\\ude00\","
	"\"n\":[1.5e3,-0,true,false,null]}}";

static void test_fuzz(void)
{
	uint64_t st = test_seed();
	size_t n = strlen(seed_doc);
	char *buf = malloc(n + 64);
	int parsed = 0, refused = 0;
	static const char alphabet[] = "{}[]\",:\\u0123456789eE+-.tfnul \t\n";

	if (buf == NULL)
		bail("out of memory");
	for (int it = 0; it < 20000; it++) {
		size_t len = n;
		struct json_error err;
		struct json_doc *doc;
		int edits = 1 + (int)(test_rand(&st) % 4);

		memcpy(buf, seed_doc, n);
		for (int e = 0; e < edits && len > 0; e++) {
			size_t at = (size_t)(test_rand(&st) % len);
			uint64_t k = test_rand(&st) % 4;

			if (k == 0)
				buf[at] = (char)test_rand(&st);
			else if (k == 1)
				buf[at] = alphabet[test_rand(&st) %
						   (sizeof(alphabet) - 1)];
			else if (k == 2 && len > 1)
				memmove(buf + at, buf + at + 1, --len - at);
			else
				len = at; /* truncate */
		}
		doc = parse_exact(buf, len, NULL, &err);
		if (doc != NULL)
			parsed++;
		else
			refused++;
		json_free(doc);
	}
	ok(parsed + refused == 20000,
	   "20000 mutated documents: %d parsed, %d refused, none crashed",
	   parsed, refused);
	free(buf);
}

int main(void)
{
	plan_lazy();
	test_valid();
	test_numbers();
	test_strings();
	test_malformed();
	test_duplicates_large();
	test_nesting();
	test_limits();
	test_errors_position();
	test_fuzz();
	return done_testing();
}
