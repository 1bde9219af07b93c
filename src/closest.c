/* closest.c - the nearest word by edit distance (see closest.h). */
#include <string.h>

#include "closest.h"

/* Edit distance between the len-byte s and the word w (both short). */
static size_t distance(const char *s, size_t len, const char *w)
{
	size_t wl = strlen(w), row[64], diag;

	if (len >= 64 || wl >= 64)
		return (size_t)-1;
	for (size_t j = 0; j <= wl; j++)
		row[j] = j;
	for (size_t i = 1; i <= len; i++) {
		diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= wl; j++) {
			size_t up = row[j], best = diag + (s[i - 1] != w[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[wl];
}

const char *sp_closest(const char *s, size_t len, const char *const *names,
		       int n)
{
	const char *best = NULL;
	size_t bestd = (size_t)-1;

	for (int i = 0; i < n; i++) {
		size_t d = distance(s, len, names[i]);

		if (d < bestd) {
			bestd = d;
			best = names[i];
		}
	}
	/* Past half the word it is a different word, not a typo. */
	if (best == NULL || bestd > (strlen(best) + 1) / 2)
		return NULL;
	return best;
}
