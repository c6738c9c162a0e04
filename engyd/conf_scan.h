/* SPDX-License-Identifier: MIT */
/* The plugin sections of a config text (see conf_scan.c). */
#ifndef ENGY_CORE_CONF_SCAN_H
#define ENGY_CORE_CONF_SCAN_H

#include <stddef.h>

struct engy_conf_body {
	char *title;	    /* "NAME" or "NAME:INSTANCE" */
	size_t open, close; /* offsets of its '{' and matching '}' */
	int line;	    /* the line of its '{' */
};

/*
 * engy_conf_scan() - every top-level `plugin "TITLE" { ... }` of @text.
 * Text libconfuse would refuse (an unterminated string) ends the scan
 * quietly: the strict parse reports it.
 */
int engy_conf_scan(const char *text, struct engy_conf_body **out, size_t *n);
/* @text with the bodies' characters blanked, newlines kept; malloc'd. */
char *engy_conf_blank(const char *text, const struct engy_conf_body *b,
		      size_t n);
/* One body alone, preceded by newlines so its lines keep their numbers. */
char *engy_conf_body_text(const char *text, const struct engy_conf_body *b);
/*
 * engy_conf_top_sections() - the names of every top-level `NAME { ... }`
 * section of @text other than plugin's (a role's), NULL-terminated in a
 * malloc'd vector of malloc'd strings (*@n of them; NULL when none).
 */
int engy_conf_top_sections(const char *text, char ***out, size_t *n);
void engy_conf_scan_free(struct engy_conf_body *b, size_t n);

#endif /* ENGY_CORE_CONF_SCAN_H */
