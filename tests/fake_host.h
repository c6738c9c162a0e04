/* SPDX-License-Identifier: MIT */
/*
 * A host for plugin unit tests: no event loop, work() runs synchronously,
 * log lines are kept for assertions (and echoed to stderr).
 */
#ifndef ENGY_FAKE_HOST_H
#define ENGY_FAKE_HOST_H

#include <engy/host.h>

struct engy_host *fake_host_new(const char *instance);
void fake_host_free(struct engy_host *h);
/* All log lines so far, newline-separated (never NULL). */
const char *fake_host_log(const struct engy_host *h);
/* The instances peer_at() lists (@peers must outlive the host; n = 0:
 * none, the default). */
void fake_host_set_peers(struct engy_host *h,
			 const struct engy_peer_info *peers, size_t n);
/* The exit code of the first shutdown() asked for (-1: none yet). */
int fake_host_shutdown_code(const struct engy_host *h);

#endif /* ENGY_FAKE_HOST_H */
