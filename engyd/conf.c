/* SPDX-License-Identifier: MIT */
#include <confuse.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsutil.h"
#include "conf.h"
#include "conf_scan.h"
#include "conf_value.h"

#define CONFIG_MAX (1u << 20)

void engy_errs_add(struct engy_errs *e, const char *fmt, ...)
{
	char buf[1024], **v;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	v = realloc(e->v, (e->n + 1) * sizeof(*v));
	if (!v)
		return;
	e->v = v;
	e->v[e->n] = strdup(buf);
	if (e->v[e->n])
		e->n++;
}

void engy_errs_free(struct engy_errs *e)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		free(e->v[i]);
	free(e->v);
	e->v = NULL;
	e->n = 0;
}

const char *engy_opt_type_name(uint32_t type)
{
	switch (type) {
	case ENGY_OPT_STR:
		return "string";
	case ENGY_OPT_INT:
		return "integer";
	case ENGY_OPT_BOOL:
		return "bool";
	case ENGY_OPT_FLOAT:
		return "float";
	case ENGY_OPT_STR_LIST:
		return "string list";
	}
	return "unknown";
}

/*
 * libconfuse has no user data for its error callback: the parse in
 * progress on this thread names its error list here.
 */
static _Thread_local struct engy_errs *parse_errs;
static _Thread_local const char *parse_path;

/* libconfuse reports through here; we keep "file:line: message". */
static void on_cfg_error(cfg_t *cfg, const char *fmt, va_list ap)
{
	char msg[768];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (parse_errs)
		engy_errs_add(parse_errs, "%s:%d: %s",
			      parse_path      ? parse_path
			      : cfg->filename ? cfg->filename
					      : "?",
			      cfg->line, msg);
}

/* Parse @text (all or part of the file at @path: errors name it and the line). */
static int parse_text(cfg_opt_t *opts, int flags, const char *path,
		      const char *text, struct engy_errs *e, cfg_t **out)
{
	cfg_t *cfg = cfg_init(opts, flags);
	int rc;

	*out = cfg;
	if (!cfg)
		return -ENOMEM;
	cfg_set_error_function(cfg, on_cfg_error);
	parse_errs = e;
	parse_path = path;
	rc = cfg_parse_buf(cfg, text);
	parse_errs = NULL;
	parse_path = NULL;
	if (rc != CFG_SUCCESS) {
		if (!e->n)
			engy_errs_add(e, "%s: cannot parse config", path);
		return -EINVAL;
	}
	return 0;
}

/* The line where `plugin "TITLE"` opens (libconfuse keeps the end line). */
static int section_line(const char *text, const char *title, int fallback)
{
	const char *p = text;
	size_t tl = strlen(title);
	int line = 1;

	for (; *p; p++) {
		if (*p == '\n') {
			line++;
			continue;
		}
		if (strncmp(p, "plugin", 6) == 0 &&
		    (p == text || p[-1] == '\n' || p[-1] == ' ' ||
		     p[-1] == '\t')) {
			const char *q = p + 6;

			while (*q == ' ' || *q == '\t')
				q++;
			if (*q == '"' && strncmp(q + 1, title, tl) == 0 &&
			    q[1 + tl] == '"')
				return line;
		}
	}
	return fallback;
}

/* The line of `name =` inside the section starting at @from, else @from. */
static int opt_line(const char *text, int from, const char *name)
{
	const char *p = text;
	size_t nl = strlen(name);
	int line = 1;

	while (*p && line < from) {
		if (*p++ == '\n')
			line++;
	}
	for (; *p; line++) {
		const char *q = p;

		while (*q && *q != '\n') {
			if (strncmp(q, name, nl) == 0 &&
			    (q == p || q[-1] == ' ' || q[-1] == '\t' ||
			     q[-1] == '{')) {
				const char *r = q + nl;

				while (*r == ' ' || *r == '\t')
					r++;
				if (*r == '=')
					return line;
			}
			q++;
		}
		p = *q ? q + 1 : q;
	}
	return from;
}

static int split_title(const char *title, struct engy_conf_section *s)
{
	const char *colon = strchr(title, ':');

	if (colon) {
		s->plugin = strndup(title, (size_t)(colon - title));
		s->instance = strdup(colon + 1);
	} else {
		s->plugin = strdup(title);
		s->instance = strdup(title);
	}
	return s->plugin && s->instance ? 0 : -ENOMEM;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

#define CORE_OPTS                                                              \
	CFG_STR("role", NULL, CFGF_NODEFAULT),                                 \
		CFG_STR("plugin_dir", NULL, CFGF_NODEFAULT),                   \
		CFG_STR("log_level", "info", CFGF_NONE),                       \
		CFG_STR("log_file", NULL, CFGF_NODEFAULT),                     \
		CFG_STR("metrics_listen", NULL, CFGF_NODEFAULT),               \
		CFG_STR("state_dir", NULL, CFGF_NODEFAULT),                    \
		CFG_INT("workers", 0, CFGF_NONE),                              \
		CFG_INT("shutdown_timeout", 10, CFGF_NONE),                    \
		CFG_BOOL("log_sync", cfg_false, CFGF_NONE)

#define N_CORE_OPTS 9

int engy_config_load(const char *path, const char *const *role_sections,
		     struct engy_config *c, struct engy_errs *e)
{
	cfg_opt_t none[] = { CFG_END() };
	cfg_opt_t core[] = { CORE_OPTS };
	cfg_opt_t *opts = NULL;
	struct stat st;
	size_t len, i, n_roles = 0, k;
	cfg_t *cfg = NULL;
	char **found = NULL;
	size_t n_found = 0;
	int rc;

	memset(c, 0, sizeof(*c));
	c->path = strdup(path);
	rc = engy_read_file(path, CONFIG_MAX, (uint8_t **)&c->text, &len);
	if (rc) {
		engy_errs_add(e, "%s: cannot read config: %s", path,
			      strerror(-rc));
		return -EINVAL;
	}
	/* Without a list, any top-level section may be the role's: pass 2
	 * parses strictly with the role's own table. */
	if (!role_sections) {
		rc = engy_conf_top_sections(c->text, &found, &n_found);
		if (rc)
			return rc;
		role_sections = (const char *const *)found;
	}
	while (role_sections && role_sections[n_roles])
		n_roles++;
	opts = calloc(N_CORE_OPTS + n_roles + 2, sizeof(*opts));
	if (!opts)
		return -ENOMEM;
	memcpy(opts, core, sizeof(core));
	k = N_CORE_OPTS;
	for (i = 0; i < n_roles; i++)
		opts[k++] =
			(cfg_opt_t)CFG_SEC(role_sections[i], none, CFGF_NONE);
	opts[k++] = (cfg_opt_t)CFG_SEC(
		"plugin", none, CFGF_MULTI | CFGF_TITLE | CFGF_NO_TITLE_DUPES);
	opts[k] = (cfg_opt_t)CFG_END();
	c->private_file = stat(path, &st) == 0 && !(st.st_mode & 077);
	rc = parse_text(opts, CFGF_IGNORE_UNKNOWN, path, c->text, e, &cfg);
	if (rc)
		goto out;
	c->role = dup_or_null(cfg_getstr(cfg, "role"));
	c->plugin_dir = dup_or_null(cfg_getstr(cfg, "plugin_dir"));
	c->log_level = dup_or_null(cfg_getstr(cfg, "log_level"));
	c->log_file = dup_or_null(cfg_getstr(cfg, "log_file"));
	c->metrics_listen = dup_or_null(cfg_getstr(cfg, "metrics_listen"));
	c->state_dir = dup_or_null(cfg_getstr(cfg, "state_dir"));
	c->workers = cfg_getint(cfg, "workers");
	c->shutdown_timeout = cfg_getint(cfg, "shutdown_timeout");
	c->log_sync = cfg_getbool(cfg, "log_sync");
	if (!c->role)
		engy_errs_add(
			e,
			"%s: no role (role = \"NAME\" loads role-NAME.so: miner, gateway, auditor, validator, serve ...)",
			path);
	if (c->workers < 0 || c->workers > 1024)
		engy_errs_add(e, "%s: workers = %ld is out of range 0..1024",
			      path, c->workers);
	if (c->shutdown_timeout < 0 || c->shutdown_timeout > 3600)
		engy_errs_add(
			e, "%s: shutdown_timeout = %ld is out of range 0..3600",
			path, c->shutdown_timeout);
	c->n_secs = cfg_size(cfg, "plugin");
	c->secs = calloc(c->n_secs ? c->n_secs : 1, sizeof(*c->secs));
	if (!c->secs) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < c->n_secs; i++) {
		cfg_t *s = cfg_getnsec(cfg, "plugin", (unsigned)i);

		if (split_title(cfg_title(s), &c->secs[i]) < 0) {
			rc = -ENOMEM;
			goto out;
		}
		c->secs[i].line = section_line(c->text, cfg_title(s), s->line);
		if (!*c->secs[i].instance)
			engy_errs_add(
				e, "%s:%d: plugin \"%s\": empty instance name",
				path, s->line, cfg_title(s));
	}
	rc = e->n ? -EINVAL : 0;
out:
	if (cfg)
		cfg_free(cfg);
	free(opts);
	for (i = 0; i < n_found; i++)
		free(found[i]);
	free(found);
	return rc;
}

/*
 * Resolve every option of one instance in priority order: environment
 * twin, config value, <name>_file for secrets, default.  @sec may be NULL
 * (text mode); @get then supplies config values.
 */
static int fill_one(const char *who, const char *path, int line,
		    const char *text, bool private_file,
		    const struct engy_opt *opts, void *conf, cfg_t *sec,
		    const char *(*get)(void *, const char *), void *arg,
		    struct engy_errs *e)
{
	const struct engy_opt *o;
	char where[512];
	size_t before = e->n;

	for (o = opts; o && o->name; o++) {
		const char *env = o->env ? getenv(o->env) : NULL;
		int oline = sec ? opt_line(text, line, o->name) : line;
		bool in_cfg = sec ? cfg_size(sec, o->name) > 0
				  : get && get(arg, o->name);
		char fname[128];
		const char *file = NULL;
		int rc = 0;

		snprintf(where, sizeof(where), "%s:%d", path, oline);
		snprintf(fname, sizeof(fname), "%s_file", o->name);
		if (o->flags & ENGY_OPT_SECRET)
			file = sec ? (cfg_size(sec, fname)
					      ? cfg_getstr(sec, fname)
					      : NULL)
				   : (get ? get(arg, fname) : NULL);
		if ((o->flags & ENGY_OPT_SECRET) && in_cfg && !private_file) {
			engy_errs_add(
				e,
				"%s: plugin \"%s\": secret option '%s' in a file others can read; use %s%s%s%s_file, or chmod 600 the config",
				where, who, o->name, o->env ? "$" : "",
				o->env ? o->env : "", o->env ? ", " : "",
				o->name);
			continue;
		}
		if (env && *env) {
			rc = engy_conf_set_text(who, o->env, o, conf, env, e);
		} else if (in_cfg) {
			rc = sec ? engy_conf_set_cfg(who, where, o, conf, sec,
						     e)
				 : engy_conf_set_text(who, where, o, conf,
						      get(arg, o->name), e);
		} else if (file) {
			char *s = engy_conf_read_secret(file, e, who, o->name);

			if (s)
				rc = engy_conf_set_text(who, where, o, conf, s,
							e);
			free(s);
		} else if (o->def) {
			rc = engy_conf_set_text(who, "default", o, conf, o->def,
						e);
		} else if (o->flags & ENGY_OPT_REQUIRED) {
			engy_errs_add(
				e,
				"%s:%d: plugin \"%s\": option '%s' is required%s%s%s",
				path, line, who, o->name,
				o->env ? " (or set $" : "",
				o->env ? o->env : "", o->env ? ")" : "");
			continue;
		}
		if (rc == -ENOMEM)
			return rc;
		if (!rc && o->type == ENGY_OPT_INT && (o->min || o->max)) {
			int64_t v = *(int64_t *)((char *)conf + o->offset);

			if (v < o->min || v > o->max)
				engy_errs_add(
					e,
					"%s: plugin \"%s\": option '%s' = %lld is out of range %lld..%lld",
					env && *env ? o->env : where, who,
					o->name, (long long)v,
					(long long)o->min, (long long)o->max);
		}
	}
	return e->n > before ? -EINVAL : 0;
}

static cfg_opt_t make_opt(const char *name, uint32_t type)
{
	cfg_opt_t s = CFG_STR(name, NULL, CFGF_NODEFAULT);
	cfg_opt_t i = CFG_INT(name, 0, CFGF_NODEFAULT);
	cfg_opt_t b = CFG_BOOL(name, cfg_false, CFGF_NODEFAULT);
	cfg_opt_t f = CFG_FLOAT(name, 0, CFGF_NODEFAULT);
	cfg_opt_t l = CFG_STR_LIST(name, NULL, CFGF_NODEFAULT);

	switch (type) {
	case ENGY_OPT_INT:
		return i;
	case ENGY_OPT_BOOL:
		return b;
	case ENGY_OPT_FLOAT:
		return f;
	case ENGY_OPT_STR_LIST:
		return l;
	default:
		return s;
	}
}

/*
 * libconfuse options for one option table, each secret with its NAME_file
 * twin.  @names keeps the twins' names alive; free both with free_table().
 */
static cfg_opt_t *opt_table(const struct engy_opt *opts, char ***names)
{
	const struct engy_opt *o;
	size_t n = 0, k = 0, f = 0;
	cfg_opt_t *t;

	for (o = opts; o && o->name; o++)
		n += (o->flags & ENGY_OPT_SECRET) ? 2 : 1;
	t = calloc(n + 1, sizeof(*t));
	*names = calloc(n + 1, sizeof(**names));
	if (!t || !*names) {
		free(t);
		free(*names);
		*names = NULL;
		return NULL;
	}
	for (o = opts; o && o->name; o++) {
		t[k++] = make_opt(o->name, o->type);
		if (o->flags & ENGY_OPT_SECRET) {
			size_t l = strlen(o->name) + 6;

			(*names)[f] = malloc(l);
			if (!(*names)[f])
				goto oom;
			snprintf((*names)[f], l, "%s_file", o->name);
			t[k++] = make_opt((*names)[f++], ENGY_OPT_STR);
		}
	}
	t[k] = (cfg_opt_t)CFG_END();
	return t;
oom:
	while (f)
		free((*names)[--f]);
	free(*names);
	*names = NULL;
	free(t);
	return NULL;
}

static void free_table(cfg_opt_t *t, char **names)
{
	size_t i;

	for (i = 0; names && names[i]; i++)
		free(names[i]);
	free(names);
	free(t);
}

/* The line where a role's `NAME {` section opens, or 1. */
static int role_line(const char *text, const char *name)
{
	const char *p = text;
	size_t nl = strlen(name);
	int line = 1;

	for (; *p; p++) {
		if (*p == '\n') {
			line++;
			continue;
		}
		if ((p == text || p[-1] == '\n') && strncmp(p, name, nl) == 0) {
			const char *q = p + nl;

			while (*q == ' ' || *q == '\t')
				q++;
			if (*q == '{')
				return line;
		}
	}
	return 1;
}

/* Section @i's plugin options: its body parsed with its own table. */
static int fill_plugin(const struct engy_config *c, size_t i,
		       const struct engy_conf_body *bodies, size_t n_bodies,
		       const struct engy_opt *opts, size_t conf_size,
		       void **conf, struct engy_errs *e)
{
	const struct engy_conf_section *s = &c->secs[i];
	const struct engy_conf_body *body = NULL;
	char title[256], *text = NULL, **names = NULL;
	cfg_opt_t *table = NULL;
	cfg_t *cfg = NULL;
	size_t j;
	int rc;

	snprintf(title, sizeof(title), "%s%s%s", s->plugin,
		 strcmp(s->plugin, s->instance) ? ":" : "",
		 strcmp(s->plugin, s->instance) ? s->instance : "");
	for (j = 0; j < n_bodies && !body; j++)
		if (strcmp(bodies[j].title, title) == 0)
			body = &bodies[j];
	table = opt_table(opts, &names);
	text = body ? engy_conf_body_text(c->text, body) : strdup("");
	if (!table || !text) {
		rc = -ENOMEM;
		goto out;
	}
	rc = parse_text(table, CFGF_NONE, c->path, text, e, &cfg);
	if (rc)
		goto out;
	if (conf_size) {
		*conf = calloc(1, conf_size);
		if (!*conf) {
			rc = -ENOMEM;
			goto out;
		}
	}
	rc = fill_one(s->instance, c->path, s->line, c->text, c->private_file,
		      opts, *conf, cfg, NULL, NULL, e);
out:
	if (cfg)
		cfg_free(cfg);
	free_table(table, names);
	free(text);
	return rc;
}

int engy_config_fill(const struct engy_config *c,
		     const struct engy_opt *const *opts,
		     const size_t *conf_size, void **confs,
		     struct engy_conf_role *role, struct engy_errs *e)
{
	struct engy_conf_body *bodies = NULL;
	size_t n_bodies = 0, i, k;
	cfg_opt_t none[] = { CFG_END() };
	cfg_opt_t core[] = { CORE_OPTS };
	cfg_opt_t root[N_CORE_OPTS + 3], *role_opts = NULL;
	char *top = NULL, **role_names = NULL;
	cfg_t *cfg = NULL;
	int rc;

	for (i = 0; i < c->n_secs; i++)
		confs[i] = NULL;
	if (role)
		role->conf = NULL;
	rc = engy_conf_scan(c->text, &bodies, &n_bodies);
	if (rc)
		goto oom;
	/* The file with plugin bodies blanked, strictly: core and role. */
	top = engy_conf_blank(c->text, bodies, n_bodies);
	if (!top)
		goto oom;
	memcpy(root, core, sizeof(core));
	k = N_CORE_OPTS;
	if (role) {
		role_opts = opt_table(role->opts, &role_names);
		if (!role_opts)
			goto oom;
		root[k++] =
			(cfg_opt_t)CFG_SEC(role->name, role_opts, CFGF_NONE);
	}
	root[k++] = (cfg_opt_t)CFG_SEC(
		"plugin", none, CFGF_MULTI | CFGF_TITLE | CFGF_NO_TITLE_DUPES);
	root[k] = (cfg_opt_t)CFG_END();
	rc = parse_text(root, CFGF_NONE, c->path, top, e, &cfg);
	if (rc)
		goto out;
	for (i = 0; i < c->n_secs; i++)
		if (fill_plugin(c, i, bodies, n_bodies, opts[i], conf_size[i],
				&confs[i], e) == -ENOMEM)
			goto oom;
	if (role) {
		cfg_t *sec = cfg_size(cfg, role->name)
				     ? cfg_getsec(cfg, role->name)
				     : NULL;

		if (role->conf_size) {
			role->conf = calloc(1, role->conf_size);
			if (!role->conf)
				goto oom;
		}
		if (fill_one(role->name, c->path,
			     role_line(c->text, role->name), c->text,
			     c->private_file, role->opts, role->conf, sec, NULL,
			     NULL, e) == -ENOMEM)
			goto oom;
	}
	rc = e->n ? -EINVAL : 0;
	goto out;
oom:
	rc = -ENOMEM;
	engy_errs_add(e, "%s: out of memory", c->path);
out:
	if (rc) {
		for (i = 0; i < c->n_secs; i++) {
			engy_conf_free(opts[i], confs[i]);
			confs[i] = NULL;
		}
		if (role) {
			engy_conf_free(role->opts, role->conf);
			role->conf = NULL;
		}
	}
	if (cfg)
		cfg_free(cfg);
	free_table(role_opts, role_names);
	free(top);
	engy_conf_scan_free(bodies, n_bodies);
	return rc;
}

int engy_conf_from_text(const char *who, const struct engy_opt *opts,
			size_t conf_size,
			const char *(*get)(void *arg, const char *name),
			void *arg, void **conf, struct engy_errs *e)
{
	int rc;

	*conf = conf_size ? calloc(1, conf_size) : NULL;
	if (conf_size && !*conf)
		return -ENOMEM;
	rc = fill_one(who, who, 0, "", true, opts, *conf, NULL, get, arg, e);
	if (rc) {
		engy_conf_free(opts, *conf);
		*conf = NULL;
	}
	return rc;
}

void engy_conf_free(const struct engy_opt *opts, void *conf)
{
	const struct engy_opt *o;

	if (!conf)
		return;
	for (o = opts; o && o->name; o++) {
		char *slot = (char *)conf + o->offset;

		if (o->type == ENGY_OPT_STR)
			free(*(char **)slot);
		else if (o->type == ENGY_OPT_STR_LIST)
			engy_conf_free_strv((struct engy_strv *)slot);
	}
	free(conf);
}

void engy_config_free(struct engy_config *c)
{
	size_t i;

	for (i = 0; i < c->n_secs; i++) {
		free(c->secs[i].plugin);
		free(c->secs[i].instance);
	}
	free(c->secs);
	free(c->path);
	free(c->role);
	free(c->plugin_dir);
	free(c->log_level);
	free(c->log_file);
	free(c->metrics_listen);
	free(c->state_dir);
	free(c->text);
	memset(c, 0, sizeof(*c));
}
