/* SPDX-License-Identifier: MIT */
/*
 * The pinned weight commitment (specs/auditor.md, "The pinned checkpoint"):
 * before the auditor audits anything, every backend's local checkpoint is
 * hashed into its Merkle root (specs/model-commitment.md, one SHA-256 pass
 * over its bytes on every CPU) and compared with the root pinned for it:
 * the auditor's own spec_root option and the spec_root the store keeps
 * beside the model's accepted hello identities.  A checkpoint that is not
 * the pinned one would judge honest miners by the wrong weights: the
 * auditor refuses to start.  With no pin at all nothing is hashed and a
 * warning says so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "auditor_int.h"
#include "hex.h"
#include "modelspec.h"

int aud_pin_parse(const char *s, uint8_t out[32])
{
	return s && !engy_hex_parse(s, out, 32) ? 0 : -EINVAL;
}

struct progress {
	struct aud *a;
	const char *model;
};

static void on_progress(void *arg, uint64_t done, uint64_t total)
{
	struct progress *p = arg;

	aud_log(p->a, ENGY_LOG_INFO,
		"event=spec_root_progress model=%s done_mb=%llu total_mb=%llu",
		p->model, (unsigned long long)(done >> 20),
		(unsigned long long)(total >> 20));
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The store's pinned roots for @model (non-zero spec_roots), malloc'd. */
static int store_pins(struct aud *a, const char *model, uint8_t (**out)[32],
		      size_t *n)
{
	static const uint8_t zero[32];
	struct engy_model_root *r = NULL;
	size_t nr = 0, i;
	int rc;

	*out = NULL;
	*n = 0;
	if (!a->st->model_root_list)
		return 0;
	rc = a->st->model_root_list(a->sti, model, &r, &nr);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	*out = calloc(nr + 1, 32);
	if (!*out) {
		free(r);
		return -ENOMEM;
	}
	for (i = 0; i < nr; i++)
		if (memcmp(r[i].spec_root, zero, 32))
			memcpy((*out)[(*n)++], r[i].spec_root, 32);
	free(r);
	return 0;
}

/* One backend's checkpoint against its pins. */
static int check_one(struct aud *a, struct aud_backend *b, const uint8_t *conf)
{
	struct engy_model_info mi = { .size = sizeof(mi) };
	struct progress pg = { a, b->name };
	uint8_t(*pins)[32] = NULL;
	char err[256], got[65], want[65];
	const uint8_t *root;
	struct engy_ms *m = NULL;
	size_t np = 0, i;
	int64_t t0;
	int rc;

	rc = store_pins(a, b->name, &pins, &np);
	if (rc) {
		aud_log(a, ENGY_LOG_ERR,
			"event=spec_root_failed model=%s error=\"the store's roots: %s\"",
			b->name, strerror(-rc));
		return rc;
	}
	if (!conf && !np) {
		aud_log(a, ENGY_LOG_WARNING,
			"event=spec_root_unpinned model=%s effect=\"the checkpoint is not checked against a pinned Merkle root (set auditor { spec_root } or the model root's spec_root)\"",
			b->name);
		free(pins);
		return 0;
	}
	if (b->ops->info(b->inst, &mi) || !mi.path[0] ||
	    snprintf(err, sizeof(err), "%s/config.json", mi.path) >=
		    (int)sizeof(err) ||
	    access(err, R_OK)) {
		/* a remote serve's model path, or none */
		aud_log(a, ENGY_LOG_WARNING,
			"event=spec_root_unchecked model=%s path=%s reason=\"the backend names no local checkpoint\"",
			b->name, mi.path[0] ? mi.path : "-");
		free(pins);
		return 0;
	}
	aud_log(a, ENGY_LOG_NOTICE,
		"event=spec_root_check model=%s path=%s note=\"hashing the whole checkpoint (one SHA-256 pass over its bytes on every CPU): a large checkpoint takes a while\"",
		b->name, mi.path);
	t0 = mono_ms();
	rc = engy_ms_open(mi.path, &m, err, sizeof(err));
	if (!rc)
		rc = engy_ms_build(m, 0, on_progress, &pg, 2000, err,
				   sizeof(err));
	if (rc) {
		aud_log(a, ENGY_LOG_ERR,
			"event=spec_root_failed model=%s path=%s error=\"%s\"",
			b->name, mi.path, err);
		engy_ms_close(m);
		free(pins);
		return rc < 0 ? rc : -EIO;
	}
	root = engy_ms_model_root(m);
	engy_hex_print(root, 32, got);
	rc = 0;
	if (conf && memcmp(root, conf, 32)) {
		engy_hex_print(conf, 32, want);
		aud_log(a, ENGY_LOG_ERR,
			"event=spec_root_mismatch model=%s path=%s spec_root=%s pinned=%s source=config error=\"the checkpoint's Merkle root is not the pinned one (auditor { spec_root }): refusing to start\"",
			b->name, mi.path, got, want);
		rc = -EBADMSG;
	}
	for (i = 0; !rc && np && i < np; i++)
		if (!memcmp(root, pins[i], 32))
			break;
	if (!rc && np && i == np) {
		engy_hex_print(pins[0], 32, want);
		aud_log(a, ENGY_LOG_ERR,
			"event=spec_root_mismatch model=%s path=%s spec_root=%s pinned=%s source=store pinned_n=%zu error=\"the checkpoint's Merkle root is none the store pins for the model: refusing to start\"",
			b->name, mi.path, got, want, np);
		rc = -EBADMSG;
	}
	if (!rc)
		aud_log(a, ENGY_LOG_NOTICE,
			"event=spec_root_ok model=%s spec_root=%s bytes=%llu ms=%lld source=%s",
			b->name, got,
			(unsigned long long)engy_ms_total_bytes(m),
			(long long)(mono_ms() - t0),
			conf && np ? "config+store"
			: conf	   ? "config"
				   : "store");
	engy_ms_close(m);
	free(pins);
	return rc;
}

int aud_pin_check(struct aud *a)
{
	uint8_t conf[32];
	unsigned i;
	int rc;

	if (a->c->spec_root && *a->c->spec_root &&
	    aud_pin_parse(a->c->spec_root, conf)) {
		aud_log(a, ENGY_LOG_ERR,
			"event=bad_option option=spec_root reason=\"not 64 hex digits\"");
		return -EINVAL;
	}
	for (i = 0; i < a->n_be; i++) {
		rc = check_one(a, &a->be[i],
			       a->c->spec_root && *a->c->spec_root ? conf
								   : NULL);
		if (rc)
			return rc;
	}
	return 0;
}
