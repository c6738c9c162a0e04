/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"

static const char *entity(unsigned char c)
{
	switch (c) {
	case '&':
		return "&amp;";
	case '<':
		return "&lt;";
	case '>':
		return "&gt;";
	case '"':
		return "&quot;";
	case '\'':
		return "&#39;";
	case '\t':
	case '\n':
		return NULL;
	}
	return c < 0x20 || c == 0x7f ? "&#xFFFD;" : NULL;
}

size_t engy_html_escape(char *out, size_t cap, const char *s)
{
	size_t n = 0, k;
	bool full = false;
	const char *e;

	for (; s && *s; s++) {
		e = entity((unsigned char)*s);
		k = e ? strlen(e) : 1;
		if (!full && cap && n + k < cap) {
			if (e)
				memcpy(out + n, e, k);
			else
				out[n] = *s;
		} else if (!full) {
			full = true;
			if (cap)
				out[n] = '\0';
		}
		n += k;
	}
	if (!full && cap)
		out[n] = '\0';
	return n;
}

static bool room(struct engy_html *h, size_t more)
{
	size_t cap = h->cap ? h->cap : 4096;
	char *p;

	if (h->oom)
		return false;
	if (h->len + more + 1 <= h->cap)
		return true;
	while (cap < h->len + more + 1)
		cap *= 2;
	p = realloc(h->p, cap);
	if (!p) {
		h->oom = true;
		return false;
	}
	h->p = p;
	h->cap = cap;
	return true;
}

void engy_html_raw(struct engy_html *h, const char *markup)
{
	size_t n = strlen(markup);

	if (!room(h, n))
		return;
	memcpy(h->p + h->len, markup, n + 1);
	h->len += n;
}

void engy_html_printf(struct engy_html *h, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !room(h, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(h->p + h->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	h->len += (size_t)n;
}

void engy_html_text(struct engy_html *h, const char *s)
{
	size_t n;

	if (!s)
		return;
	n = engy_html_escape(NULL, 0, s);
	if (!room(h, n))
		return;
	engy_html_escape(h->p + h->len, n + 1, s);
	h->len += n;
}

char *engy_html_take(struct engy_html *h, size_t *len)
{
	char *p = h->oom ? NULL : h->p;

	if (!p && !h->oom)
		p = calloc(1, 1);
	if (h->oom)
		free(h->p);
	if (len)
		*len = p ? h->len : 0;
	memset(h, 0, sizeof(*h));
	return p;
}

void engy_html_free(struct engy_html *h)
{
	free(h->p);
	memset(h, 0, sizeof(*h));
}
