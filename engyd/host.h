/* SPDX-License-Identifier: MIT */
/* The daemon's state, and the host services each instance gets. */
#ifndef ENGY_CORE_HOST_H
#define ENGY_CORE_HOST_H

#include <stdbool.h>
#include <time.h>

#include <engy/host.h>

#include "conf.h"
#include "loader.h"

struct engyd;

struct engy_instance {
	struct engyd *d;
	char *name;
	struct engy_loaded lp;
	void *conf;
	void *inst;
	bool created, started;
	struct engy_host host;
	struct engy_timer *timers; /* armed timers, freed at destroy */
};

struct engyd {
	struct engy_config cfg;
	struct engy_instance role_in; /* role-NAME.so; name = NAME */
	bool has_role;		      /* role_in loaded */
	const char *plugin_dir;
	char *state_dir;
	struct event_base *base;
	struct engy_pool *pool;
	struct engy_metrics *metrics;
	struct engy_instance *insts;
	size_t n_insts;
	bool unload; /* dlclose at exit (off for leak tools) */
	bool stopping;
	struct event *sigs[4];
	struct event *drain_ev;
	struct timespec drain_deadline;
	bool aborted; /* the role's abort() ran at the deadline */
	struct timespec started_at;
	int exit_code;
};

/* Fill @in->host with the services bound to @in. */
void engy_host_bind(struct engy_instance *in);
/* Stop as SIGTERM would (daemon.c). */
void engyd_shutdown(struct engyd *d);
/* Free the timers an instance left armed. */
void engy_host_release_timers(struct engy_instance *in);
/* Find an instance by kind (and name when not NULL). */
struct engy_instance *engy_host_find(struct engyd *d, uint32_t kind,
				     const char *name);

#endif /* ENGY_CORE_HOST_H */
