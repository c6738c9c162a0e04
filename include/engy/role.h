/* SPDX-License-Identifier: MIT */
/*
 * The role kind: a flow that wires the other plugin kinds together (a
 * gateway, a miner, an auditor ...).  A config names its role with
 * `role = "NAME"`; the host loads `role-NAME.so` from the plugin directory,
 * fills its options from the config's `NAME { ... }` section (and their
 * environment twins) like any plugin's, and checks the needs below before
 * anything starts.
 *
 * Lifecycle, on the loop thread:
 *   create()  after every other instance was created; no I/O (engyd -t).
 *   start()   after every other instance started: find peers with
 *             host->peer() / host->peer_at() and wire them.
 *   stop()    first step of shutdown, before any other instance's stop().
 *   inflight() polled while the host drains; 0 lets it exit early.
 *   abort()   the drain reached shutdown_timeout with requests left: end
 *             them now (answer, account, release); the host then waits
 *             up to ENGY_ABORT_GRACE_S more for inflight() to reach 0.
 *   destroy() first of all destroys, while the peers are still alive.
 * A role that cannot go on asks the host to stop with host->shutdown().
 */
#ifndef ENGY_ROLE_H
#define ENGY_ROLE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct engy_role_need - a kind the role uses and how many instances.
 * @kind: enum engy_kind; 0 ends the list.
 * @min, @max: instances of that kind the config must have (@max 0: no
 *             upper bound).  A config with an instance of a kind the role
 *             does not list is refused too.
 * @why: what the role uses it for (engyd -t prints it).
 */
struct engy_role_need {
	uint32_t kind;
	uint32_t min, max;
	const char *why;
};

struct engy_role_ops {
	uint32_t size; /* sizeof(struct engy_role_ops) */
	/* Required: the kinds the role uses, ended by kind 0. */
	const struct engy_role_need *needs;
	/* Optional: requests the role still has in flight. */
	unsigned (*inflight)(void *inst);
	/* Optional (appended in 1.2): end what is in flight at the drain deadline. */
	void (*abort)(void *inst);
};

/* Seconds the host waits after abort() for what it ended to settle. */
#define ENGY_ABORT_GRACE_S 5

#ifdef __cplusplus
}
#endif

#endif /* ENGY_ROLE_H */
