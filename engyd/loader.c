/* SPDX-License-Identifier: MIT */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <engy/proof.h>

#include "kind.h"
#include "loader.h"

/* The frozen header, read before anything else of the descriptor. */
struct header {
	uint32_t magic;
	uint16_t abi_major;
	uint16_t abi_minor;
	uint32_t size;
	uint32_t kind;
};

_Static_assert(offsetof(struct engy_plugin, magic) == 0, "frozen header");
_Static_assert(offsetof(struct engy_plugin, abi_major) == 4, "frozen header");
_Static_assert(offsetof(struct engy_plugin, abi_minor) == 6, "frozen header");
_Static_assert(offsetof(struct engy_plugin, size) == 8, "frozen header");
_Static_assert(offsetof(struct engy_plugin, kind) == 12, "frozen header");
_Static_assert(sizeof(struct header) == 16, "frozen header");

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

bool engy_plugin_name_valid(const char *name)
{
	const char *p;

	if (!name || !*name || strlen(name) > 64)
		return false;
	if (!((*name >= 'a' && *name <= 'z') || (*name >= '0' && *name <= '9')))
		return false;
	for (p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		      *p == '-' || *p == '_'))
			return false;
	return true;
}

static int check_ops(const char *who, struct engy_loaded *l, char *err,
		     size_t errlen)
{
	const struct engy_kind_info *k = l->kind;
	uint32_t ops_size;
	size_t i;

	if (!l->desc.ops)
		return fail(err, errlen, -EINVAL,
			    "plugin '%s': kind %s but no ops table", who,
			    k->name);
	memcpy(&ops_size, l->desc.ops, sizeof(ops_size));
	if (ops_size < k->ops_min)
		return fail(
			err, errlen, -EINVAL,
			"plugin '%s': %s ops table of %u bytes is smaller than the %zu of ABI 1.0",
			who, k->name, ops_size, k->ops_min);
	l->ops = calloc(1, k->ops_size);
	if (!l->ops)
		return fail(err, errlen, -ENOMEM, "plugin '%s': out of memory",
			    who);
	memcpy(l->ops, l->desc.ops,
	       ops_size < k->ops_size ? ops_size : k->ops_size);
	for (i = 0; k->required[i].name; i++) {
		void *p;

		memcpy(&p, (char *)l->ops + k->required[i].offset, sizeof(p));
		if (!p)
			return fail(err, errlen, -EINVAL,
				    "plugin '%s': missing required %s op '%s'",
				    who, k->name, k->required[i].name);
	}
	if (k->kind == ENGY_KIND_PROOF) {
		/* A scheme proves and verifies, or is challenged and
		 * checks (1.4), or both. */
		const struct engy_proof_ops *p = l->ops;
		const char *miss = NULL;

		if (p->challenge || p->check)
			miss = !p->challenge ? "challenge"
			       : !p->check   ? "check"
					     : NULL;
		else
			miss = !p->prove    ? "prove"
			       : !p->verify ? "verify"
					    : NULL;
		if (miss)
			return fail(err, errlen, -EINVAL,
				    "plugin '%s': missing required %s op '%s'",
				    who, k->name, miss);
	}
	return 0;
}

int engy_loader_open(const char *path, const char *expect_name,
		     struct engy_loaded *l, char *err, size_t errlen)
{
	const char *who = expect_name ? expect_name : path;
	const struct header *h;
	const void *sym;
	struct stat st;
	int rc;

	memset(l, 0, sizeof(*l));
	if (stat(path, &st) < 0)
		return fail(err, errlen, -errno, "plugin '%s': %s: %s", who,
			    path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return fail(err, errlen, -EINVAL,
			    "plugin '%s': %s is not a regular file", who, path);
	/* RTLD_LOCAL: plugins never see each other's symbols. */
	l->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!l->dl)
		return fail(
			err, errlen, -ENOEXEC,
			"plugin '%s': cannot load: %s (not a shared object, or a missing dependency? try ldd)",
			who, dlerror());
	l->path = strdup(path);
	if (!l->path) {
		rc = fail(err, errlen, -ENOMEM, "plugin '%s': out of memory",
			  who);
		goto out;
	}
	sym = dlsym(l->dl, ENGY_PLUGIN_SYMBOL);
	if (!sym) {
		rc = fail(
			err, errlen, -ENOENT,
			"plugin '%s': %s does not export '%s': not an engy plugin",
			who, path, ENGY_PLUGIN_SYMBOL);
		goto out;
	}
	h = sym;
	if (h->magic != ENGY_PLUGIN_MAGIC) {
		rc = fail(
			err, errlen, -EINVAL,
			"plugin '%s': bad magic 0x%08x (expected 0x%08x): not an engy plugin, or corrupt",
			who, h->magic, ENGY_PLUGIN_MAGIC);
		goto out;
	}
	if (h->abi_major != ENGY_ABI_MAJOR) {
		rc = fail(
			err, errlen, -EPROTO,
			"plugin '%s': built for plugin ABI %u.%u, this engyd speaks %d.%d: rebuild the plugin against this SDK",
			who, h->abi_major, h->abi_minor, ENGY_ABI_MAJOR,
			ENGY_ABI_MINOR);
		goto out;
	}
	if (h->abi_minor > ENGY_ABI_MINOR) {
		rc = fail(
			err, errlen, -EPROTO,
			"plugin '%s': built for plugin ABI %u.%u, newer than this engyd's %d.%d: upgrade engyd",
			who, h->abi_major, h->abi_minor, ENGY_ABI_MAJOR,
			ENGY_ABI_MINOR);
		goto out;
	}
	if (h->size < ENGY_PLUGIN_SIZE_1_0) {
		rc = fail(
			err, errlen, -EINVAL,
			"plugin '%s': descriptor of %u bytes is smaller than the %zu of ABI 1.0",
			who, h->size, (size_t)ENGY_PLUGIN_SIZE_1_0);
		goto out;
	}
	memcpy(&l->desc, sym,
	       h->size < sizeof(l->desc) ? h->size : sizeof(l->desc));
	l->kind = engy_kind_info(l->desc.kind);
	if (!l->kind) {
		rc = fail(err, errlen, -EINVAL, "plugin '%s': unknown kind %u",
			  who, l->desc.kind);
		goto out;
	}
	if (h->abi_minor < l->kind->min_minor) {
		rc = fail(
			err, errlen, -EPROTO,
			"plugin '%s': a %s plugin built for plugin ABI %u.%u, older than %d.%u: %s; rebuild the plugin against this SDK",
			who, l->kind->name, h->abi_major, h->abi_minor,
			ENGY_ABI_MAJOR, l->kind->min_minor, l->kind->min_why);
		goto out;
	}
	if (!l->desc.name || !engy_plugin_name_valid(l->desc.name)) {
		rc = fail(err, errlen, -EINVAL,
			  "plugin '%s': descriptor has no valid name", who);
		goto out;
	}
	if (expect_name && strcmp(l->desc.name, expect_name) != 0) {
		rc = fail(
			err, errlen, -EINVAL,
			"plugin '%s': %s calls itself '%s'; the name must equal the file stem",
			who, path, l->desc.name);
		goto out;
	}
	if (!l->desc.create) {
		rc = fail(err, errlen, -EINVAL,
			  "plugin '%s': missing required op 'create'", who);
		goto out;
	}
	if (!l->desc.destroy) {
		rc = fail(err, errlen, -EINVAL,
			  "plugin '%s': missing required op 'destroy'", who);
		goto out;
	}
	if (l->desc.opts && !l->desc.conf_size) {
		rc = fail(err, errlen, -EINVAL,
			  "plugin '%s': has options but conf_size is 0", who);
		goto out;
	}
	rc = check_ops(who, l, err, errlen);
out:
	if (rc)
		engy_loader_close(l, true);
	return rc;
}

int engy_loader_open_named(const char *dir, const char *name,
			   struct engy_loaded *out, char *err, size_t errlen)
{
	char path[4096];

	memset(out, 0, sizeof(*out));
	if (!engy_plugin_name_valid(name))
		return fail(err, errlen, -EINVAL,
			    "plugin '%s': invalid name (use [a-z0-9_-])", name);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s.so", dir, name) >=
	    sizeof(path))
		return fail(err, errlen, -ENAMETOOLONG,
			    "plugin '%s': plugin_dir path too long", name);
	if (access(path, F_OK) < 0)
		return fail(err, errlen, -ENOENT,
			    "plugin '%s': not found (no %s)", name, path);
	return engy_loader_open(path, name, out, err, errlen);
}

void engy_loader_close(struct engy_loaded *l, bool unload)
{
	if (l->dl && unload)
		dlclose(l->dl);
	free(l->ops);
	free(l->path);
	memset(l, 0, sizeof(*l));
}
