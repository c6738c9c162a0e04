/* SPDX-License-Identifier: MIT */
/*
 * engy plugin ABI: the one descriptor every plugin exports.
 *
 * A plugin is a shared object that exports exactly one symbol, the constant
 * data object `engy_plugin` (declare it with ENGY_PLUGIN()).  The host reads
 * the frozen header (magic, abi_major, abi_minor, size, kind) and checks it
 * before it calls any plugin code:
 *   - magic must be ENGY_PLUGIN_MAGIC;
 *   - abi_major must equal the host's ENGY_ABI_MAJOR;
 *   - abi_minor must not exceed the host's ENGY_ABI_MINOR;
 *   - size must cover at least the 1.0 descriptor;
 *   - kind must be known, ops must be present, ops->size must cover the
 *     kind's 1.0 table, and every required op must be non-NULL;
 *   - name must equal the file stem (verifier-toploc.so -> "verifier-toploc").
 * The host copies min(size, sizeof) of the descriptor and of the ops table
 * into zeroed structs, so a trailing op an older plugin lacks reads as NULL.
 *
 * Versioning: appending a field or an op bumps ENGY_ABI_MINOR; anything else
 * (removing, reordering, resizing, changing meaning) bumps ENGY_ABI_MAJOR.
 * The ABI never depends on configure options: installed headers include no
 * config.h and never change shape under #ifdef.
 *
 * Ownership: data passed into a plugin is borrowed for the duration of the
 * call; what a plugin keeps, it copies.  A function that takes ownership says
 * so in its name (*_take).  Strings a plugin returns through a `char **out`
 * are allocated with malloc() and released by the caller with free().
 * Errors are 0 or a negative errno.
 *
 * Threading: create/start/stop/destroy and every callback run on the host's
 * loop thread unless an op's comment says otherwise.  Work that blocks or
 * burns CPU goes through engy_host.work().
 *
 * Changelog (dated; append only):
 *   1.0  2026-11-30  First ABI: descriptor header, option table with env
 *                    twins, host services v1 (log, event base, timers,
 *                    worker pool, metrics, peers, state dir), ops tables for
 *                    the six kinds.  Until 1.0 is tagged, ops of kinds
 *                    still being built may be appended without a bump.
 *   1.1  2026-12-03  The role kind (7); host services peer_at(),
 *                    shutdown() and notify() (sd_notify READY/WATCHDOG);
 *                    engy_model_info.serve_urls; the descriptor's
 *                    optional check op (engy/check.h) and the host
 *                    service opt_source(); transport ops client_tls()
 *                    and ws_set_max_message().
 *   1.2  2026-12-03  Constrained decoding: engy_gen_params.cons_schema,
 *                    cons_prefix, cons_suffix and engy_model_info.constraints
 *                    (engy/backend.h); the role op abort() (engy/role.h:
 *                    the drain reached shutdown_timeout); engy_model's
 *                    toploc_mant_mean_centi and toploc_mant_median_centi
 *                    (in what was padding: sizes and offsets unchanged).
 *   1.3  2026-12-03  Chain: commit_weights() (timelocked commit-reveal);
 *                    the metagraph's cr_version, reveal_period, tempo,
 *                    can_commit, cr_why and the submit result's commit,
 *                    cr_version, reveal_round, reveal_block, appended
 *                    and read only from plugins that have the op;
 *                    engy_gen_params.ignore_eos (sglang's, for the serve);
 *                    store ops audit_claim() (one auditor per job on a
 *                    shared store, with a lapsing claim) and holds_open()
 *                    (an epoch closes once its requests have settled).
 *   1.4  2026-12-03  Top logprobs: engy_gen_params.top_logprobs and
 *                    on_top_logprobs (the top-N alternatives of each
 *                    output token), engy_model_info.caps
 *                    (ENGY_BACKEND_CAP_TOP_LOGPROBS) (engy/backend.h).
 *                    The GEMM audit (specs/gemm-audit.md).  Proof:
 *                    challenged schemes: ops challenge() and check()
 *                    appended, with which prove() and verify() may be
 *                    NULL; engy_proof_limits gemm_layers, gemm_tokens,
 *                    gemm_projections, gemm_spots, gemm_z, gemm_c_el,
 *                    gemm_rate appended (read only when limits->size
 *                    covers them).  Store: engy_model's gemm_layers,
 *                    gemm_tokens, gemm_projections, gemm_spots,
 *                    gemm_z_milli, gemm_c_el_milli, gemm_rate_ppm
 *                    appended (sizeof 208 -> 240; store schema 5).
 *                    Backend: the trace:
 *                    engy_gen_params.gemm_trace and the ops gemm_commit()
 *                    and gemm_open() (engy/backend.h), appended and
 *                    optional.
 *   1.5  2026-12-03  Store: settle_batch() (struct engy_settle): a
 *                    gateway's settlements group-committed, one
 *                    transaction for many, and leases (a reservation
 *                    kept open and charged by many requests).
 */
#ifndef ENGY_PLUGIN_H
#define ENGY_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include <engy/types.h>
#include <engy/host.h>
#include <engy/check.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ENGY_PLUGIN_MAGIC  0x454e4731u /* "ENG1" */
#define ENGY_ABI_MAJOR	   1
#define ENGY_ABI_MINOR	   5
#define ENGY_PLUGIN_SYMBOL "engy_plugin"

#if defined(__GNUC__)
#define ENGY_EXPORT __attribute__((visibility("default")))
#else
#define ENGY_EXPORT
#endif

/* Plugin kinds; each has its own ops table in include/engy/<kind>.h. */
enum engy_kind {
	ENGY_KIND_TRANSPORT = 1,
	ENGY_KIND_BACKEND = 2,
	ENGY_KIND_PROOF = 3,
	ENGY_KIND_SCORER = 4,
	ENGY_KIND_CHAIN = 5,
	ENGY_KIND_STORE = 6,
	ENGY_KIND_ROLE = 7, /* appended in 1.1 */
};
#define ENGY_KIND_MAX 7

/* Option types; the host stores each at `offset` in the plugin's conf. */
enum engy_opt_type {
	ENGY_OPT_STR = 1,      /* const char * (host-owned; NULL when unset) */
	ENGY_OPT_INT = 2,      /* int64_t */
	ENGY_OPT_BOOL = 3,     /* bool */
	ENGY_OPT_FLOAT = 4,    /* double */
	ENGY_OPT_STR_LIST = 5, /* struct engy_strv */
};

/* Option flags. */
#define ENGY_OPT_REQUIRED (1u << 0) /* must be set (config or env) */
#define ENGY_OPT_SECRET	  (1u << 1) /* never logged; env or *_file */

/**
 * struct engy_opt - one entry of a plugin's option table.
 * @name:   option name in the plugin's config section.
 * @type:   enum engy_opt_type.
 * @flags:  ENGY_OPT_* flags.
 * @offset: offsetof() the field in the plugin's conf struct.
 * @def:    default as config text ("128", "true", "a,b"); NULL = none.
 * @env:    environment variable that overrides the config value, or NULL.
 * @min:    for ENGY_OPT_INT, inclusive bounds; min == max == 0: unbounded.
 * @max:
 * @help:   one line for --plugin-info.
 *
 * The table ends with an entry whose name is NULL.
 */
struct engy_opt {
	const char *name;
	uint32_t type;
	uint32_t flags;
	size_t offset;
	const char *def;
	const char *env;
	int64_t min;
	int64_t max;
	const char *help;
};

#define ENGY_OPT_END                                                           \
	{                                                                      \
		NULL, 0, 0, 0, NULL, NULL, 0, 0, NULL                          \
	}

/**
 * struct engy_plugin - the exported descriptor.
 *
 * The five header fields are frozen forever.  @create parses nothing: the
 * host has already filled @conf_size bytes from the option table; create
 * validates them (return -EINVAL and log why) and allocates the instance.
 * create must not start I/O (engyd -t calls it); start does.
 */
struct engy_plugin {
	/* Frozen header: never reorder, never resize. */
	uint32_t magic;
	uint16_t abi_major;
	uint16_t abi_minor;
	uint32_t size;
	uint32_t kind;

	const char *name;	     /* == file stem */
	const char *version;	     /* the plugin's own version */
	const char *description;     /* one line */
	const struct engy_opt *opts; /* may be NULL: no options */
	size_t conf_size;	     /* bytes of the conf struct */

	/* required */
	int (*create)(const struct engy_host *host, const void *conf,
		      void **inst);
	/* optional: begin serving (open sockets, dial, arm timers) */
	int (*start)(void *inst);
	/* optional: stop accepting new work; in-flight work may finish */
	void (*stop)(void *inst);
	/* required: release everything; no callback fires afterwards */
	void (*destroy)(void *inst);

	const void *ops; /* struct engy_<kind>_ops * */

	/* --- appended in 1.1 (an older plugin's reads as NULL) ----------- */
	/**
	 * check() - optional: report what this instance would connect to or
	 * read, and what it could not find, one @sink->add() per target
	 * (engyd -t prints them, engyctl doctor probes them).  @host and
	 * @conf are create()'s; @inst is NULL when create() failed or was
	 * not reached, so a check reads its conf, not a running instance.
	 * No network I/O (stat() and access() of local files are fine); a
	 * peer's state only through that kind's ops (host->peer()).  The
	 * host calls it after setup, the role's first, then the instances'
	 * in config order, and only when the role has a check op.
	 * Returns 0 or a negative errno.  Context: loop thread.
	 */
	int (*check)(const struct engy_host *host, const void *conf, void *inst,
		     const struct engy_check_sink *sink);
};

/* The size of the 1.0 descriptor: the least the host accepts. */
#define ENGY_PLUGIN_SIZE_1_0                                                   \
	(offsetof(struct engy_plugin, ops) + sizeof(void *))

/*
 * ENGY_PLUGIN(.kind = ..., .name = ..., ...) defines the exported
 * descriptor.  It fills the header only; the plugin names the rest.
 */
#define ENGY_PLUGIN(...)                                                       \
	ENGY_EXPORT extern const struct engy_plugin engy_plugin;               \
	ENGY_EXPORT const struct engy_plugin engy_plugin = {                   \
		.magic = ENGY_PLUGIN_MAGIC,                                    \
		.abi_major = ENGY_ABI_MAJOR,                                   \
		.abi_minor = ENGY_ABI_MINOR,                                   \
		.size = sizeof(struct engy_plugin),                            \
		__VA_ARGS__                                                    \
	}

/* Logging shorthands for plugins: one line per event, key=value fields. */
#define engy_err(h, ...)  (h)->log((h), ENGY_LOG_ERR, __VA_ARGS__)
#define engy_warn(h, ...) (h)->log((h), ENGY_LOG_WARNING, __VA_ARGS__)
#define engy_info(h, ...) (h)->log((h), ENGY_LOG_INFO, __VA_ARGS__)
#define engy_dbg(h, ...)  (h)->log((h), ENGY_LOG_DEBUG, __VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif /* ENGY_PLUGIN_H */
