/* SPDX-License-Identifier: MIT */
/*
 * Finds the `plugin "TITLE" { ... }` sections of a config text, so that
 * each body can be parsed with its own plugin's option table (libconfuse
 * gives every section of one name the same table, and two plugins may
 * well give one option name two types).  The lexer knows what
 * libconfuse's does about comments and strings, nothing more.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "conf_scan.h"

/* Skip blanks and comments from @p; returns where a token starts. */
static const char *skip_space(const char *p)
{
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
			p++;
		if (*p == '#' || (p[0] == '/' && p[1] == '/')) {
			while (*p && *p != '\n')
				p++;
		} else if (p[0] == '/' && p[1] == '*') {
			const char *end = strstr(p + 2, "*/");

			p = end ? end + 2 : p + strlen(p);
		} else {
			return p;
		}
	}
}

/* Past a quoted string starting at @p (its quote); NULL if unterminated. */
static const char *skip_string(const char *p)
{
	char q = *p++;

	while (*p && *p != q) {
		if (q == '"' && *p == '\\' && p[1])
			p++;
		p++;
	}
	return *p ? p + 1 : NULL;
}

static int line_of(const char *text, const char *at)
{
	int line = 1;

	for (; text < at; text++)
		if (*text == '\n')
			line++;
	return line;
}

static int add(struct engy_conf_body **v, size_t *n, const char *text,
	       const char *title, size_t tlen, const char *open,
	       const char *close)
{
	struct engy_conf_body *nv = realloc(*v, (*n + 1) * sizeof(**v));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n].title = strndup(title, tlen);
	if (!nv[*n].title)
		return -ENOMEM;
	nv[*n].open = (size_t)(open - text);
	nv[*n].close = (size_t)(close - text);
	nv[*n].line = line_of(text, open);
	(*n)++;
	return 0;
}

int engy_conf_scan(const char *text, struct engy_conf_body **out, size_t *n)
{
	const char *p = text;
	int depth = 0, rc;

	*out = NULL;
	*n = 0;
	while (*(p = skip_space(p))) {
		if (*p == '"' || *p == '\'') {
			p = skip_string(p);
			if (!p)
				return 0; /* libconfuse will say where */
		} else if (*p == '{') {
			depth++;
			p++;
		} else if (*p == '}') {
			depth -= depth > 0;
			p++;
		} else if (depth == 0 && strncmp(p, "plugin", 6) == 0 &&
			   !(p[6] >= 'a' && p[6] <= 'z') && p[6] != '_' &&
			   p[6] != '-' &&
			   (p == text || !((p[-1] >= 'a' && p[-1] <= 'z') ||
					   p[-1] == '_' || p[-1] == '-'))) {
			const char *t = skip_space(p + 6), *te, *open, *q;
			int d = 1;

			p += 6;
			if (*t != '"')
				continue;
			te = skip_string(t);
			if (!te)
				return 0;
			open = skip_space(te);
			if (*open != '{')
				continue;
			/* Find the matching brace, strings and comments aside. */
			for (q = open + 1; d && *(q = skip_space(q));) {
				if (*q == '"' || *q == '\'') {
					q = skip_string(q);
					if (!q)
						return 0;
				} else {
					d += *q == '{';
					d -= *q == '}';
					q++;
				}
			}
			if (d)
				return 0;
			rc = add(out, n, text, t + 1, (size_t)(te - t - 2),
				 open, q - 1);
			if (rc) {
				engy_conf_scan_free(*out, *n);
				*out = NULL;
				*n = 0;
				return rc;
			}
			p = q;
		} else {
			p++;
		}
	}
	return 0;
}

char *engy_conf_blank(const char *text, const struct engy_conf_body *b,
		      size_t n)
{
	char *s = strdup(text);
	size_t i, j;

	if (!s)
		return NULL;
	for (i = 0; i < n; i++)
		for (j = b[i].open + 1; j < b[i].close; j++)
			if (s[j] != '\n')
				s[j] = ' ';
	return s;
}

char *engy_conf_body_text(const char *text, const struct engy_conf_body *b)
{
	size_t lines = (size_t)(b->line - 1), len = b->close - b->open - 1;
	char *s = malloc(lines + len + 2);

	if (!s)
		return NULL;
	memset(s, '\n', lines);
	memcpy(s + lines, text + b->open + 1, len);
	s[lines + len] = '\n';
	s[lines + len + 1] = '\0';
	return s;
}

void engy_conf_scan_free(struct engy_conf_body *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(b[i].title);
	free(b);
}

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '-';
}

int engy_conf_top_sections(const char *text, char ***out, size_t *n)
{
	const char *p = text;
	char **v = NULL, **nv;
	int depth = 0;

	*out = NULL;
	*n = 0;
	while (*(p = skip_space(p))) {
		const char *s = p, *after;

		if (*p == '"' || *p == '\'') {
			p = skip_string(p);
			if (!p)
				break;
			continue;
		}
		if (*p == '{' || *p == '}') {
			depth += *p == '{' ? 1 : -(depth > 0);
			p++;
			continue;
		}
		if (!ident_char(*p)) {
			p++;
			continue;
		}
		while (ident_char(*p))
			p++;
		after = skip_space(p);
		if (depth || *after != '{' ||
		    ((size_t)(p - s) == 6 && strncmp(s, "plugin", 6) == 0))
			continue;
		nv = realloc(v, (*n + 2) * sizeof(*v));
		if (!nv)
			goto oom;
		v = nv;
		v[*n] = strndup(s, (size_t)(p - s));
		if (!v[*n])
			goto oom;
		v[++*n] = NULL;
	}
	*out = v;
	return 0;
oom:
	while (*n)
		free(v[--*n]);
	free(v);
	return -ENOMEM;
}
