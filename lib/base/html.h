/* SPDX-License-Identifier: MIT */
/*
 * Server-rendered HTML pages: a growing buffer that keeps trusted markup
 * apart from text.  Every string that did not come from the program
 * itself (a miner's label, a hotkey, a model name, anything read from the
 * store or the network) goes through engy_html_text(), which escapes it
 * for both element content and quoted attribute values.
 */
#ifndef ENGY_HTML_H
#define ENGY_HTML_H

#include <stdbool.h>
#include <stddef.h>

struct engy_html {
	char *p; /* NUL-terminated while !oom */
	size_t len, cap;
	bool oom; /* an append failed: the page is lost */
};

/*
 * engy_html_escape() - @s escaped into @out (@cap bytes, NUL-terminated,
 * truncated at a whole entity): & < > " ' as entities, control bytes
 * other than tab and newline (and DEL) as U+FFFD.  Returns the length the
 * whole escaped text needs (without the NUL), as snprintf does.
 */
size_t engy_html_escape(char *out, size_t cap, const char *s);

/* Trusted markup, appended as is. */
void engy_html_raw(struct engy_html *h, const char *markup);
/* Trusted format (numbers; %s only for trusted markup). */
void engy_html_printf(struct engy_html *h, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Untrusted text, escaped; NULL appends nothing. */
void engy_html_text(struct engy_html *h, const char *s);
/* The page (malloc'd, *@len its length), or NULL after an out-of-memory;
 * @h is empty again either way. */
char *engy_html_take(struct engy_html *h, size_t *len);
void engy_html_free(struct engy_html *h);

#endif /* ENGY_HTML_H */
