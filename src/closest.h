/*
 * closest.h - the nearest of a list of words, for "did you mean" messages.
 * Compiled into the library (codec strings) and into the program (option
 * names), which cannot call the library's hidden functions.
 */
#ifndef SP_CLOSEST_H
#define SP_CLOSEST_H

#include <stddef.h>

/* The word of names[0..n-1] closest to the len-byte s, or NULL when none
 * is near enough to be a typo of it. */
const char *sp_closest(const char *s, size_t len, const char *const *names,
		       int n);

#endif
