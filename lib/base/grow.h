/* SPDX-License-Identifier: MIT */
/* Growing an array by doubling. */
#ifndef ENGY_GROW_H
#define ENGY_GROW_H

#include <stdbool.h>
#include <stdlib.h>

/* Room for @need elements of @elem bytes in *@p (capacity *@cap, in
 * elements; 64 at first, then doubled); false when out of memory, *@p
 * untouched. */
static inline bool engy_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t c = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return true;
	while (c < need)
		c *= 2;
	q = realloc(*p, c * elem);
	if (!q)
		return false;
	*p = q;
	*cap = c;
	return true;
}

#endif /* ENGY_GROW_H */
