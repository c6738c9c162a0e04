/* SPDX-License-Identifier: MIT */
/*
 * Option values: config text (env twins, defaults, secret files) and
 * libconfuse values into a plugin's or role's conf struct (conf.c).
 */
#include <confuse.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "conf_value.h"
#include "fsutil.h"

static char *trim_dup(const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' ||
		     s[n - 1] == '\r'))
		n--;
	return strndup(s, n);
}

void engy_conf_free_strv(struct engy_strv *sv)
{
	size_t i;

	for (i = 0; i < sv->n; i++)
		free((char *)sv->v[i]);
	free((void *)sv->v);
	sv->v = NULL;
	sv->n = 0;
}

/* Set @o in @conf from config text (env, default, file). */
int engy_conf_parse_bool(const char *text, bool *out)
{
	if (!strcmp(text, "true") || !strcmp(text, "yes") ||
	    !strcmp(text, "on") || !strcmp(text, "1"))
		*out = true;
	else if (!strcmp(text, "false") || !strcmp(text, "no") ||
		 !strcmp(text, "off") || !strcmp(text, "0"))
		*out = false;
	else
		return -EINVAL;
	return 0;
}

int engy_conf_set_text(const char *who, const char *where,
		       const struct engy_opt *o, void *conf, const char *text,
		       struct engy_errs *e)
{
	char *slot = (char *)conf + o->offset, *end;
	long long ll;
	double d;

	switch (o->type) {
	case ENGY_OPT_STR: {
		char *s = strdup(text);

		if (!s)
			return -ENOMEM;
		free(*(char **)slot);
		*(char **)slot = s;
		return 0;
	}
	case ENGY_OPT_INT:
		errno = 0;
		ll = strtoll(text, &end, 0);
		if (errno || end == text || *end) {
			engy_errs_add(
				e,
				"%s: plugin \"%s\": option '%s' wants an integer, got '%s'",
				where, who, o->name, text);
			return -EINVAL;
		}
		*(int64_t *)slot = ll;
		return 0;
	case ENGY_OPT_BOOL:
		if (engy_conf_parse_bool(text, (bool *)slot) < 0) {
			engy_errs_add(
				e,
				"%s: plugin \"%s\": option '%s' wants true or false, got '%s'",
				where, who, o->name, text);
			return -EINVAL;
		}
		return 0;
	case ENGY_OPT_FLOAT:
		errno = 0;
		d = strtod(text, &end);
		if (errno || end == text || *end) {
			engy_errs_add(
				e,
				"%s: plugin \"%s\": option '%s' wants a number, got '%s'",
				where, who, o->name, text);
			return -EINVAL;
		}
		*(double *)slot = d;
		return 0;
	case ENGY_OPT_STR_LIST: {
		struct engy_strv *sv = (struct engy_strv *)slot;
		const char *p = text, *comma;
		char **v = NULL, **nv;
		size_t n = 0;

		engy_conf_free_strv(sv);
		while (*p) {
			comma = strchr(p, ',');
			if (!comma)
				comma = p + strlen(p);
			nv = realloc(v, (n + 1) * sizeof(*v));
			if (!nv)
				goto oom;
			v = nv;
			v[n] = trim_dup(p, (size_t)(comma - p));
			if (!v[n])
				goto oom;
			if (*v[n])
				n++;
			else
				free(v[n]);
			p = *comma ? comma + 1 : comma;
		}
		sv->v = (const char *const *)v;
		sv->n = n;
		return 0;
	oom:
		while (n)
			free(v[--n]);
		free(v);
		return -ENOMEM;
	}
	}
	return -EINVAL;
}

int engy_conf_set_cfg(const char *who, const char *where,
		      const struct engy_opt *o, void *conf, cfg_t *sec,
		      struct engy_errs *e)
{
	char *slot = (char *)conf + o->offset;
	unsigned i, n;

	switch (o->type) {
	case ENGY_OPT_STR:
		if (cfg_size(sec, o->name) > 1) {
			engy_errs_add(
				e,
				"%s: plugin \"%s\": option '%s' takes one value",
				where, who, o->name);
			return -EINVAL;
		}
		return engy_conf_set_text(who, where, o, conf,
					  cfg_getstr(sec, o->name), e);
	case ENGY_OPT_INT:
		*(int64_t *)slot = cfg_getint(sec, o->name);
		return 0;
	case ENGY_OPT_BOOL:
		*(bool *)slot = cfg_getbool(sec, o->name) == cfg_true;
		return 0;
	case ENGY_OPT_FLOAT:
		*(double *)slot = cfg_getfloat(sec, o->name);
		return 0;
	case ENGY_OPT_STR_LIST: {
		struct engy_strv *sv = (struct engy_strv *)slot;
		char **v;

		engy_conf_free_strv(sv);
		n = cfg_size(sec, o->name);
		v = calloc(n ? n : 1, sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (i = 0; i < n; i++) {
			v[i] = strdup(cfg_getnstr(sec, o->name, i));
			if (!v[i]) {
				while (i)
					free(v[--i]);
				free(v);
				return -ENOMEM;
			}
		}
		sv->v = (const char *const *)v;
		sv->n = n;
		return 0;
	}
	}
	return -EINVAL;
}

/* First line of a secret file, without its newline. */
char *engy_conf_read_secret(const char *path, struct engy_errs *e,
			    const char *who, const char *name)
{
	uint8_t *buf;
	size_t len;
	char *nl;
	int rc = engy_read_file(path, 65536, &buf, &len);

	if (rc) {
		engy_errs_add(e, "plugin \"%s\": %s_file %s: %s", who, name,
			      path, strerror(-rc));
		return NULL;
	}
	nl = strpbrk((char *)buf, "\r\n");
	if (nl)
		*nl = '\0';
	return (char *)buf;
}
