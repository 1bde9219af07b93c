/* closest.c - the nearest word by edit distance (see closest.h). */
#include <string.h>

#include "closest.h"

/*
 * Edit distance between the len-byte s and the word w (both short), with
 * two adjacent letters swapped counting as one edit: the commonest typo
 * ("medain") must be nearer its word than to a shorter one it shares
 * letters with ("mean").  Three rows of the table: the one being filled,
 * the one above and the one above that, which a swap looks back to.
 */
static size_t distance(const char *s, size_t len, const char *w)
{
	size_t wl = strlen(w), r[3][64];

	if (len >= 64 || wl >= 64)
		return (size_t)-1;
	for (size_t j = 0; j <= wl; j++)
		r[0][j] = j;
	for (size_t i = 1; i <= len; i++) {
		size_t *cur = r[i % 3], *up = r[(i - 1) % 3];
		const size_t *up2 = r[(i + 1) % 3];

		cur[0] = i;
		for (size_t j = 1; j <= wl; j++) {
			size_t best = up[j - 1] + (s[i - 1] != w[j - 1]);

			if (up[j] + 1 < best)
				best = up[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			if (i > 1 && j > 1 && s[i - 1] == w[j - 2] &&
			    s[i - 2] == w[j - 1] && up2[j - 2] + 1 < best)
				best = up2[j - 2] + 1;
			cur[j] = best;
		}
	}
	return r[len % 3][wl];
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
