/* SPDX-License-Identifier: MIT */
/*
 * Host services handed to every plugin instance.  The struct is per
 * instance (it carries the instance's name), size-prefixed and append-only
 * like the descriptor: check `size` before using a member added after 1.0.
 * Plugins never link against host symbols; everything goes through here.
 */
#ifndef ENGY_HOST_H
#define ENGY_HOST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct event_base; /* libevent; plugins that use it include event2/ */
struct engy_timer;
struct engy_metric;

/* Log levels, syslog numbering. */
enum engy_log_level {
	ENGY_LOG_ERR = 3,
	ENGY_LOG_WARNING = 4,
	ENGY_LOG_NOTICE = 5,
	ENGY_LOG_INFO = 6,
	ENGY_LOG_DEBUG = 7,
};

enum engy_metric_type {
	ENGY_METRIC_COUNTER = 1,
	ENGY_METRIC_GAUGE = 2,
	ENGY_METRIC_HISTOGRAM = 3,
};

/* One instance, as peer_at() describes it (appended in 1.1). */
struct engy_peer_info {
	uint32_t size;	      /* set by the caller: sizeof(*out) */
	uint32_t kind;	      /* enum engy_kind */
	const char *instance; /* the instance's name */
	const char *plugin;   /* the plugin's name (file stem) */
	const char *version;  /* the plugin's own version */
	const void *ops;      /* zero-extended copy of its ops */
	void *inst;
};

#if defined(__GNUC__)
#define ENGY_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define ENGY_PRINTF(a, b)
#endif

struct engy_host {
	uint32_t size; /* sizeof(struct engy_host) of the host */
	uint16_t abi_major;
	uint16_t abi_minor;
	const char *instance; /* this instance's name */

	/**
	 * log() - write one event line.  The host prefixes time, level and
	 * instance; @fmt should produce `event=name key=value ...`.  Never
	 * pass prompt, completion or token content.
	 * Context: any thread.
	 */
	void (*log)(const struct engy_host *h, int level, const char *fmt, ...)
		ENGY_PRINTF(3, 4);
	void (*vlog)(const struct engy_host *h, int level, const char *fmt,
		     va_list ap) ENGY_PRINTF(3, 0);

	/* evbase() - the loop's libevent base.  Context: loop thread. */
	struct event_base *(*evbase)(const struct engy_host *h);

	/**
	 * timer_add() - call @cb(@arg) on the loop thread after @ms
	 * milliseconds, and every @ms after that when @repeat is non-zero.
	 * timer_del() cancels and frees a timer; it is safe from inside @cb.
	 * A one-shot timer frees itself once @cb returns: timer_del() it
	 * only before it fired.  Timers left at destroy() are freed.
	 * Context: loop thread.
	 */
	int (*timer_add)(const struct engy_host *h, uint64_t ms, int repeat,
			 void (*cb)(void *arg), void *arg,
			 struct engy_timer **out);
	void (*timer_del)(const struct engy_host *h, struct engy_timer *t);

	/**
	 * work() - run @fn(@arg) on a worker thread, then @done(@arg, @rc)
	 * on the loop thread; @rc is 0, or -ECANCELED when the host shut
	 * down before @fn ran (then @fn is skipped).  @done is called exactly
	 * once.  Context: loop thread.
	 */
	int (*work)(const struct engy_host *h, void (*fn)(void *arg),
		    void (*done)(void *arg, int rc), void *arg);

	/**
	 * metric() - register (or find) a metric; @name is the Prometheus
	 * name, @labels a fixed label set such as `kind="x"` or NULL.
	 * Histograms take @buckets (ascending upper bounds, +Inf implied).
	 * The host owns the metric.  Context: loop thread.
	 * metric_add()/metric_set()/metric_observe(): any thread.
	 */
	int (*metric)(const struct engy_host *h, int type, const char *name,
		      const char *help, const char *labels,
		      const double *buckets, size_t n_buckets,
		      struct engy_metric **out);
	void (*metric_add)(struct engy_metric *m, double v);
	void (*metric_set)(struct engy_metric *m, double v);
	void (*metric_observe)(struct engy_metric *m, double v);

	/**
	 * peer() - find another instance by kind, and by instance name when
	 * @instance is not NULL (else the first of that kind).  Returns
	 * -ENOENT when none.  @ops receives the host's zero-extended copy of
	 * that plugin's ops table.  Context: loop thread, after create().
	 */
	int (*peer)(const struct engy_host *h, uint32_t kind,
		    const char *instance, const void **ops, void **inst);

	/* state_dir() - the configured state directory (never NULL). */
	const char *(*state_dir)(const struct engy_host *h);

	void *priv; /* host-owned; plugins don't touch */

	/* --- appended in 1.1: check `size` before use ------------------- */
	/**
	 * peer_at() - the @i-th created instance of the config (0-based, in
	 * config order; the role itself is not among them).  Returns
	 * -ENOENT past the last.  Strings and @out->ops stay valid for the
	 * life of the process.  Context: loop thread, after create().
	 */
	int (*peer_at)(const struct engy_host *h, size_t i,
		       struct engy_peer_info *out);
	/**
	 * shutdown() - ask the host to stop as on SIGTERM (roles first, then
	 * the drain) and exit with @exit_code (the first non-zero code
	 * given wins).  Context: loop thread.
	 */
	void (*shutdown)(const struct engy_host *h, int exit_code);
	/**
	 * notify() - tell the service manager @state, as sd_notify() does
	 * ("WATCHDOG=1" from a role whose loop proves it is alive; the host
	 * itself sends READY=1 and STOPPING=1).  Returns > 0 when sent, 0
	 * when no manager listens, or a negative errno.  Any thread.
	 * (Appended in 1.1 after shutdown: check `size` before use.)
	 */
	int (*notify)(const struct engy_host *h, const char *state);
	/**
	 * opt_source() - where this instance's own option @name got its
	 * value, as one line into @buf: "$ENV" (its environment twin),
	 * "default" (the table's default), or "config INSTANCE NAME".
	 * Returns 0, -ENOENT when the option table has no @name, -EINVAL
	 * when the options were not filled.  Context: loop thread.
	 * (Appended in 1.1 after notify: check `size` before use.)
	 */
	int (*opt_source)(const struct engy_host *h, const char *name,
			  char *buf, size_t len);
};

#ifdef __cplusplus
}
#endif

#endif /* ENGY_HOST_H */
