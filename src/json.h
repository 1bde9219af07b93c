/*
 * json.h - a small JSON parser (RFC 8259) for zarr.json.
 *
 * The text parsed is untrusted: nesting depth, the memory the tree may use
 * and the length of one number are bounded by the caller's limits, every
 * failure is reported with its byte offset, and nothing is read outside
 * the given buffer (which need not be NUL-terminated).
 *
 * The tree lives in one arena owned by the returned document; json_free()
 * releases all of it at once.
 */
#ifndef SHARDPIPE_JSON_H
#define SHARDPIPE_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

enum json_type {
	JSON_NULL = 0,
	JSON_FALSE,
	JSON_TRUE,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT
};

/* Flags of a number: which exact integer forms hold its value.  Only a
 * number written without fraction or exponent counts as an integer, so
 * that "1.0" and "1e0" are never mistaken for sizes. */
#define JSON_INT_I64 1u /* .i holds the value exactly */
#define JSON_INT_U64 2u /* .u holds the value exactly */

struct json_value {
	enum json_type type;
	unsigned int num_flags;   /* JSON_INT_* for a number */
	/* Bytes of a string (which may hold NUL from "\u0000"), or the
	 * number of children of an array or object. */
	size_t len;
	/* The member name when this value sits in an object. */
	const char *key;
	size_t key_len;
	struct json_value *next;  /* next sibling, NULL at the end */
	struct json_value *child; /* first child of an array or object */
	const char *str;          /* NUL-terminated after len bytes */
	/* The value's text in the parsed buffer, as written (a reopened
	 * array keeps its attributes' digits, doc/design.md §29): valid
	 * while that buffer is, which the caller keeps for as long. */
	const char *raw;
	size_t raw_len;
	/* A number as a double: correctly rounded, +-HUGE_VAL when its
	 * magnitude is beyond double's range. */
	double num;
	int64_t i;
	uint64_t u;
};

struct json_limits {
	int max_depth;         /* arrays and objects nested at most this deep */
	size_t max_bytes;      /* memory the tree may use, all in all */
	size_t max_number_len; /* characters of one number token */
};

/* The limits used when a caller passes NULL: depth 256, 64 MiB, 1024. */
SP_INTERNAL extern const struct json_limits json_default_limits;

struct json_doc;

struct json_error {
	size_t offset;   /* byte offset of the fault in the text */
	int line, col;   /* 1-based, counted in bytes */
	char msg[160];
};

/*
 * Parse exactly one JSON value from text[0..len), allowing whitespace
 * around it and nothing else.  On success returns the document, whose
 * root is json_root(); on failure returns NULL and fills *err (when not
 * NULL).  Objects with a repeated member name are refused, since a reader
 * could not tell which one the writer meant.
 */
SP_INTERNAL struct json_doc *json_parse(const char *text, size_t len,
					const struct json_limits *limits,
					struct json_error *err);
SP_INTERNAL const struct json_value *json_root(const struct json_doc *doc);
SP_INTERNAL void json_free(struct json_doc *doc);

/* The member `key` of an object, or NULL when v is not an object or has
 * no such member. */
SP_INTERNAL const struct json_value *json_get(const struct json_value *v,
					      const char *key);

/* Element i of an array, or NULL (linear in i). */
SP_INTERNAL const struct json_value *json_at(const struct json_value *v,
					     size_t i);

/* Nonzero when v is a string equal to s. */
SP_INTERNAL int json_is_str(const struct json_value *v, const char *s);

/*
 * Write s[0..len) as a JSON string, quotes included, to out, which holds
 * at least JSON_QUOTE_MAX(len) bytes: '"' and '\\' escaped, control
 * characters as \u00XX, everything else as it is.  Returns the length
 * written, or 0 when s is not well-formed UTF-8 (*bad: the offset of the
 * first byte that is not).
 */
#define JSON_QUOTE_MAX(len) (6 * (len) + 2)
SP_INTERNAL size_t json_quote(char *out, const char *s, size_t len,
			      size_t *bad);

/* "null", "boolean", "number", "string", "array" or "object". */
SP_INTERNAL const char *json_type_name(const struct json_value *v);

#endif
