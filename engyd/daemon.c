/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include <engy/role.h>

#include "conf.h"
#include "daemon.h"
#include "kind.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "pool.h"
#include "role.h"

static int load_plugins(struct engyd *d, struct engy_errs *e)
{
	size_t i, j;

	d->insts = calloc(d->cfg.n_secs ? d->cfg.n_secs : 1, sizeof(*d->insts));
	if (!d->insts)
		return -ENOMEM;
	d->n_insts = d->cfg.n_secs;
	for (i = 0; i < d->n_insts; i++) {
		struct engy_instance *in = &d->insts[i];
		const struct engy_conf_section *s = &d->cfg.secs[i];
		char err[1024];

		in->d = d;
		in->name = strdup(s->instance);
		if (!in->name)
			return -ENOMEM;
		for (j = 0; j < i; j++)
			if (strcmp(d->insts[j].name, in->name) == 0)
				engy_errs_add(
					e,
					"%s:%d: instance name \"%s\" is already used at line %d",
					d->cfg.path, s->line, in->name,
					d->cfg.secs[j].line);
		if (engy_loader_open_named(d->plugin_dir, s->plugin, &in->lp,
					   err, sizeof(err)) < 0)
			engy_errs_add(e, "%s:%d: %s", d->cfg.path, s->line,
				      err);
	}
	return e->n ? -EINVAL : 0;
}

static int create_instances(struct engyd *d, struct engy_errs *e)
{
	struct engy_conf_role role = { 0 };
	const struct engy_opt **opts;
	size_t *sizes, i;
	void **confs;
	int rc = -ENOMEM;

	opts = calloc(d->n_insts + 1, sizeof(*opts));
	sizes = calloc(d->n_insts + 1, sizeof(*sizes));
	confs = calloc(d->n_insts + 1, sizeof(*confs));
	if (!opts || !sizes || !confs)
		goto out;
	for (i = 0; i < d->n_insts; i++) {
		opts[i] = d->insts[i].lp.desc.opts;
		sizes[i] = d->insts[i].lp.desc.conf_size;
	}
	role.name = d->role_in.name;
	role.opts = d->role_in.lp.desc.opts;
	role.conf_size = d->role_in.lp.desc.conf_size;
	rc = engy_config_fill(&d->cfg, opts, sizes, confs, &role, e);
	if (rc)
		goto out;
	d->role_in.conf = role.conf;
	for (i = 0; i < d->n_insts; i++) {
		struct engy_instance *in = &d->insts[i];
		int crc;

		in->conf = confs[i];
		engy_host_bind(in);
		crc = in->lp.desc.create(&in->host, in->conf, &in->inst);
		if (crc < 0) {
			engy_errs_add(e,
				      "%s:%d: plugin \"%s\": create failed: %s",
				      d->cfg.path, d->cfg.secs[i].line,
				      in->name, strerror(-crc));
			rc = -EINVAL;
			continue;
		}
		in->created = true;
	}
	if (rc == 0 && !e->n) {
		struct engy_instance *in = &d->role_in;
		int crc;

		/* The role last: its create() may look at its peers. */
		engy_host_bind(in);
		crc = in->lp.desc.create(&in->host, in->conf, &in->inst);
		if (crc < 0) {
			engy_errs_add(e, "%s: role %s: create failed: %s",
				      d->cfg.path, in->name, strerror(-crc));
			rc = -EINVAL;
		} else {
			in->created = true;
		}
	}
out:
	free(opts);
	free(sizes);
	free(confs);
	return rc;
}

int engyd_setup(struct engyd *d, const char *path, struct engy_errs *e)
{
	const char *env_dir = getenv("ENGY_PLUGIN_DIR");
	int rc;

	memset(d, 0, sizeof(*d));
	d->unload = true;
	rc = engy_config_load(path, NULL, &d->cfg, e);
	if (rc && !d->cfg.role)
		return rc;
	if (d->cfg.log_level && engy_log_parse_level(d->cfg.log_level) < 0)
		engy_errs_add(
			e,
			"%s: unknown log_level '%s' (err, warning, notice, info, debug)",
			path, d->cfg.log_level);
	d->plugin_dir = env_dir && *env_dir ? env_dir
			: d->cfg.plugin_dir ? d->cfg.plugin_dir
					    : ENGY_PLUGINDIR;
	d->base = event_base_new();
	if (!d->base || engy_metrics_new(&d->metrics) < 0)
		return -ENOMEM;
	if (d->cfg.role) {
		rc = engy_role_load(d, d->cfg.role, e);
		if (rc == -ENOMEM)
			return rc;
		d->has_role = rc == 0;
	}
	rc = load_plugins(d, e);
	if (rc == -ENOMEM)
		return rc;
	if (d->has_role)
		engy_role_check(d, e);
	if (e->n)
		return -EINVAL;
	d->state_dir = strdup(d->cfg.state_dir ? d->cfg.state_dir
					       : ENGY_LOCALSTATEDIR);
	if (!d->state_dir)
		return -ENOMEM;
	rc = engy_pool_new(d->base,
			   d->cfg.workers > 0
				   ? (unsigned)d->cfg.workers
				   : (unsigned)sysconf(_SC_NPROCESSORS_ONLN),
			   &d->pool);
	if (rc)
		return rc;
	rc = create_instances(d, e);
	return e->n ? -EINVAL : rc;
}

static void refresh_metrics(void *arg)
{
	static const int levels[] = { ENGY_LOG_ERR, ENGY_LOG_WARNING,
				      ENGY_LOG_NOTICE, ENGY_LOG_INFO,
				      ENGY_LOG_DEBUG };
	struct engyd *d = arg;
	struct engy_pool_stats st;
	struct engy_metric *m;
	struct timespec now;
	char labels[64];
	size_t i;

	engy_pool_stats(d->pool, &st);
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!engy_metrics_get(d->metrics, ENGY_METRIC_GAUGE,
			      "engyd_uptime_seconds",
			      "Seconds since engyd started", NULL, NULL, 0, &m))
		engy_metric_set(m, (double)(now.tv_sec - d->started_at.tv_sec));
	if (!engy_metrics_get(
		    d->metrics, ENGY_METRIC_GAUGE, "engyd_pool_queued",
		    "Worker pool jobs waiting for a thread", NULL, NULL, 0, &m))
		engy_metric_set(m, st.queued);
	if (!engy_metrics_get(d->metrics, ENGY_METRIC_GAUGE,
			      "engyd_pool_running", "Worker pool jobs running",
			      NULL, NULL, 0, &m))
		engy_metric_set(m, st.running);
	if (!engy_metrics_get(d->metrics, ENGY_METRIC_COUNTER,
			      "engyd_pool_jobs_total",
			      "Worker pool jobs completed", NULL, NULL, 0, &m))
		engy_metric_set(m, (double)st.completed);
	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		snprintf(labels, sizeof(labels), "level=\"%s\"",
			 engy_log_level_name(levels[i]));
		if (!engy_metrics_get(d->metrics, ENGY_METRIC_COUNTER,
				      "engyd_log_lines_total",
				      "Log lines written", labels, NULL, 0, &m))
			engy_metric_set(m, (double)engy_log_count(levels[i]));
	}
}

static const struct engy_role_ops *role_ops(const struct engyd *d)
{
	return d->role_in.created ? d->role_in.lp.ops : NULL;
}

static unsigned inflight(struct engyd *d)
{
	return engy_pool_inflight(d->pool) +
	       (role_ops(d) && role_ops(d)->inflight
			? role_ops(d)->inflight(d->role_in.inst)
			: 0);
}

static void on_drain(evutil_socket_t fd, short what, void *arg)
{
	struct engyd *d = arg;
	struct timespec now;
	unsigned n = inflight(d);

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (n == 0) {
		engy_log(ENGY_LOG_INFO, NULL, "event=drained");
	} else if (now.tv_sec > d->drain_deadline.tv_sec ||
		   (now.tv_sec == d->drain_deadline.tv_sec &&
		    now.tv_nsec >= d->drain_deadline.tv_nsec)) {
		engy_log(ENGY_LOG_WARNING, NULL,
			 "event=shutdown_deadline inflight=%u timeout_s=%ld", n,
			 d->cfg.shutdown_timeout);
		if (!d->aborted && role_ops(d) &&
		    role_ops(d)->size >= offsetof(struct engy_role_ops, abort) +
						 sizeof(role_ops(d)->abort) &&
		    role_ops(d)->abort) {
			/* The role ends what is left (answers, rows, holds);
			 * a few seconds more for that to settle. */
			d->aborted = true;
			role_ops(d)->abort(d->role_in.inst);
			d->drain_deadline = now;
			d->drain_deadline.tv_sec += ENGY_ABORT_GRACE_S;
			return;
		}
	} else {
		return;
	}
	event_del(d->drain_ev);
	event_base_loopexit(d->base, NULL);
}

void engyd_shutdown(struct engyd *d)
{
	struct timeval tick = { 0, 20000 };
	size_t i;

	if (d->stopping) {
		engy_log(ENGY_LOG_WARNING, NULL, "event=shutdown_forced");
		event_base_loopbreak(d->base);
		return;
	}
	d->stopping = true;
	engy_notify("STOPPING=1");
	engy_log(ENGY_LOG_INFO, NULL, "event=shutdown_begin inflight=%u",
		 inflight(d));
	if (d->role_in.started && d->role_in.lp.desc.stop)
		d->role_in.lp.desc.stop(d->role_in.inst);
	for (i = d->n_insts; i-- > 0;) {
		struct engy_instance *in = &d->insts[i];

		if (in->started && in->lp.desc.stop)
			in->lp.desc.stop(in->inst);
	}
	clock_gettime(CLOCK_MONOTONIC, &d->drain_deadline);
	d->drain_deadline.tv_sec += d->cfg.shutdown_timeout;
	d->drain_ev = event_new(d->base, -1, EV_PERSIST, on_drain, d);
	if (!d->drain_ev || event_add(d->drain_ev, &tick) < 0)
		event_base_loopexit(d->base, NULL);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct engyd *d = arg;

	if (sig == SIGHUP) {
		int rc = engy_log_reopen();

		engy_log(rc ? ENGY_LOG_ERR : ENGY_LOG_INFO, NULL,
			 "event=log_reopen%s%s", rc ? " error=" : "",
			 rc ? strerror(-rc) : "");
		return;
	}
	engy_log(ENGY_LOG_INFO, NULL, "event=signal signal=%s",
		 sig == SIGTERM ? "TERM" : "INT");
	engyd_shutdown(d);
}

static int mkdir_p(const char *path)
{
	char buf[4096], *p;

	if (strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	strcpy(buf, path);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0750) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0750) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int engyd_run(struct engyd *d)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	struct engy_metric *m;
	size_t i;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &d->started_at);
	rc = mkdir_p(d->state_dir);
	if (rc) {
		engy_log(ENGY_LOG_ERR, NULL,
			 "event=state_dir_failed path=%s error=\"%s\"",
			 d->state_dir, strerror(-rc));
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		d->sigs[i] = evsignal_new(d->base, sigs[i], on_signal, d);
		if (!d->sigs[i] || event_add(d->sigs[i], NULL) < 0)
			return 1;
	}
	if (!engy_metrics_get(d->metrics, ENGY_METRIC_GAUGE, "engyd_build_info",
			      "engyd version and role", NULL, NULL, 0, &m))
		engy_metric_set(m, 1);
	if (d->cfg.metrics_listen) {
		rc = engy_metrics_listen(d->metrics, d->base,
					 d->cfg.metrics_listen, refresh_metrics,
					 d);
		if (rc) {
			engy_log(
				ENGY_LOG_ERR, NULL,
				"event=metrics_listen_failed addr=%s error=\"%s\"",
				d->cfg.metrics_listen, strerror(-rc));
			return 1;
		}
		engy_log(ENGY_LOG_INFO, NULL,
			 "event=metrics_listen addr=%s port=%d",
			 d->cfg.metrics_listen, engy_metrics_port(d->metrics));
	}
	for (i = 0; i < d->n_insts; i++) {
		struct engy_instance *in = &d->insts[i];

		rc = in->lp.desc.start ? in->lp.desc.start(in->inst) : 0;
		if (rc < 0) {
			engy_log(ENGY_LOG_ERR, NULL,
				 "event=start_failed instance=%s error=\"%s\"",
				 in->name, strerror(-rc));
			d->exit_code = 1;
			engyd_shutdown(d);
			break;
		}
		in->started = true;
	}
	if (!d->stopping) {
		struct engy_instance *ri = &d->role_in;

		engy_role_log_wired(d);
		/* Marked first: a role that fails half-way through start, or
		 * asks for shutdown from it, still gets stop() to unwind. */
		ri->started = true;
		rc = ri->lp.desc.start ? ri->lp.desc.start(ri->inst) : 0;
		if (rc < 0) {
			engy_log(ENGY_LOG_ERR, NULL,
				 "event=role_start_failed role=%s error=\"%s\"",
				 ri->name, strerror(-rc));
			if (!d->exit_code)
				d->exit_code = 1;
			engyd_shutdown(d);
		}
	}
	if (!d->stopping) {
		engy_log(
			ENGY_LOG_NOTICE, NULL,
			"event=ready role=%s instances=%zu workers=%ld pid=%ld",
			d->role_in.name, d->n_insts, d->cfg.workers,
			(long)getpid());
		/* The role started: a Type=notify unit is up now. */
		rc = engy_notify("READY=1");
		if (rc < 0)
			engy_log(ENGY_LOG_WARNING, NULL,
				 "event=notify_failed state=READY error=\"%s\"",
				 strerror(-rc));
	}
	event_base_dispatch(d->base);
	engy_log(ENGY_LOG_INFO, NULL, "event=stopped exit=%d", d->exit_code);
	return d->exit_code;
}

void engyd_free(struct engyd *d)
{
	size_t i;

	if (d->pool)
		engy_pool_close(d->pool);
	if (d->role_in.created)
		d->role_in.lp.desc.destroy(d->role_in.inst);
	engy_host_release_timers(&d->role_in);
	for (i = d->n_insts; i-- > 0;) {
		struct engy_instance *in = &d->insts[i];

		if (in->created)
			in->lp.desc.destroy(in->inst);
		engy_host_release_timers(in);
		engy_conf_free(in->lp.desc.opts, in->conf);
		engy_loader_close(&in->lp, d->unload);
		free(in->name);
	}
	free(d->insts);
	if (d->role_in.lp.dl) {
		engy_conf_free(d->role_in.lp.desc.opts, d->role_in.conf);
		engy_loader_close(&d->role_in.lp, d->unload);
	}
	free(d->role_in.name);
	engy_pool_free(d->pool);
	for (i = 0; i < sizeof(d->sigs) / sizeof(d->sigs[0]); i++)
		if (d->sigs[i])
			event_free(d->sigs[i]);
	if (d->drain_ev)
		event_free(d->drain_ev);
	engy_metrics_free(d->metrics);
	if (d->base)
		event_base_free(d->base);
	free(d->state_dir);
	engy_config_free(&d->cfg);
	memset(d, 0, sizeof(*d));
}
