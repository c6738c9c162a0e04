/* SPDX-License-Identifier: MIT */
/*
 * Deliberately broken plugins, one per -DBROKEN_<what>.  Each must be
 * refused by the loader with its own reason, before any of its code runs
 * (create() aborts to prove it never ran, except in BROKEN_CREATE_FAILS).
 */
#include <errno.h>
#include <stdlib.h>

#include <engy/engy.h>

static int br_create(const struct engy_host *h, const void *conf, void **out)
{
#ifdef BROKEN_CREATE_FAILS
	engy_err(h, "event=create_refused reason=\"this plugin always fails\"");
	return -EINVAL;
#else
	abort();
#endif
}

static __attribute__((unused)) void br_destroy(void *inst)
{
}

static __attribute__((unused)) int
br_prove(void *inst, const struct engy_rows *rows, char **json)
{
	return -ENOTSUP;
}

static __attribute__((unused)) int
br_verify(void *inst, const struct engy_rows *rows, const char *json,
	  size_t len, const struct engy_proof_limits *limits,
	  struct engy_proof_result *out)
{
	return -ENOTSUP;
}

static __attribute__((unused)) int br_check(const struct engy_host *h,
					    const void *conf, void *inst,
					    const struct engy_check_sink *s)
{
	return -EIO;
}

static __attribute__((unused)) int
br_challenge(void *inst, const char *c, size_t len, const char *rid,
	     const uint8_t nonce[32], const struct engy_proof_limits *limits,
	     char **json, struct engy_proof_result *out)
{
	return -ENOTSUP;
}

static __attribute__((unused)) int
br_gcheck(void *inst, const char *c, size_t len, const char *rid,
	  const uint8_t nonce[32], const char *opening, size_t olen,
	  const struct engy_proof_limits *limits, struct engy_proof_result *out)
{
	return -ENOTSUP;
}

static const struct engy_proof_ops ops = {
	.size = sizeof(ops),
	.scheme = "broken",
#if defined(BROKEN_CHALLENGE_ONLY) || defined(BROKEN_HALF_CHALLENGE)
	/* 1.4: a challenged scheme, no prove()/verify(). */
	.challenge = br_challenge,
#ifndef BROKEN_HALF_CHALLENGE
	.check = br_gcheck,
#endif
#else
	.prove = br_prove,
#ifndef BROKEN_MISSING_OP
	.verify = br_verify,
#endif
#endif
};

#ifdef BROKEN_NO_SYMBOL
#define SYMBOL engy_plugin_typo
#else
#define SYMBOL engy_plugin
#endif

ENGY_EXPORT extern const struct engy_plugin SYMBOL;
ENGY_EXPORT const struct engy_plugin SYMBOL = {
#ifdef BROKEN_BAD_MAGIC
	.magic = 0xdeadbeefu,
#else
	.magic = ENGY_PLUGIN_MAGIC,
#endif
#ifdef BROKEN_BAD_MAJOR
	.abi_major = ENGY_ABI_MAJOR + 1,
#else
	.abi_major = ENGY_ABI_MAJOR,
#endif
#ifdef BROKEN_NEWER_MINOR
	.abi_minor = ENGY_ABI_MINOR + 1,
#elif defined(BROKEN_OLD_STORE)
	.abi_minor = 3, /* a store from before engy_model grew */
#else
	.abi_minor = ENGY_ABI_MINOR,
#endif
#ifdef BROKEN_SHORT_SIZE
	.size = 24,
#elif defined(BROKEN_SIZE_1_0)
	/* A 1.0 descriptor: what follows ops is not the plugin's. */
	.size = ENGY_PLUGIN_SIZE_1_0,
#else
	.size = sizeof(struct engy_plugin),
#endif
#ifdef BROKEN_BAD_KIND
	.kind = 99,
#elif defined(BROKEN_OLD_STORE)
	.kind = ENGY_KIND_STORE,
#else
	.kind = ENGY_KIND_PROOF,
#endif
	.name = BROKEN_NAME,
	.version = "0",
	.create = br_create,
#ifndef BROKEN_NO_DESTROY
	.destroy = br_destroy,
#endif
	.ops = &ops,
#ifdef BROKEN_SIZE_1_0
	.check = br_check,
#endif
};
