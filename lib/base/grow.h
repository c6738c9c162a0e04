/* SPDX-License-Identifier: MIT */
/* Growing an array by doubling, with the size arithmetic checked. */
#ifndef ENGY_GROW_H
#define ENGY_GROW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * engy_grow() - room for @need elements of @elem bytes in the array whose
 * pointer is at @pp (a T **, passed as void * so that any T will do) and
 * whose capacity, in elements, is *@cap: 64 at first, doubled until it
 * holds @need (or exactly @need where doubling would overflow).  Returns
 * false, with the array and *@cap untouched, when out of memory or when
 * @need elements would not fit in a size_t.
 */
static inline bool engy_grow(void *pp, size_t *cap, size_t need, size_t elem)
{
	size_t c = *cap ? *cap : 64;
	void *p, *q;

	if (need <= *cap)
		return true;
	if (elem && need > SIZE_MAX / elem)
		return false;
	while (c < need)
		c = c > SIZE_MAX / 2 ? need : c * 2;
	if (elem && c > SIZE_MAX / elem)
		c = need;
	/* The pointer is read and written as bytes: @pp may point to any
	 * object pointer type without breaking the aliasing rules. */
	memcpy(&p, pp, sizeof(p));
	q = realloc(p, c * elem);
	if (!q)
		return false;
	memcpy(pp, &q, sizeof(q));
	*cap = c;
	return true;
}

/* engy_grow_by() - engy_grow() for @len + @more elements; false too
 * when that sum overflows. */
static inline bool engy_grow_by(void *pp, size_t *cap, size_t len, size_t more,
				size_t elem)
{
	if (more > SIZE_MAX - len)
		return false;
	return engy_grow(pp, cap, len + more, elem);
}

/* ENGY_GROW(arr, cap, need): engy_grow() for the array lvalue @arr. */
#define ENGY_GROW(arr, cap, need)                                              \
	engy_grow(&(arr), &(cap), (need), sizeof(*(arr)))
/* ENGY_GROW_BY(arr, cap, len, more): room for @len + @more elements. */
#define ENGY_GROW_BY(arr, cap, len, more)                                      \
	engy_grow_by(&(arr), &(cap), (len), (more), sizeof(*(arr)))

#endif /* ENGY_GROW_H */
