/* SPDX-License-Identifier: MIT */
/* Readiness and watchdog for a service manager (systemd's sd_notify). */
#ifndef ENGY_CORE_NOTIFY_H
#define ENGY_CORE_NOTIFY_H

/*
 * engy_notify() - send @state ("READY=1", "WATCHDOG=1", "STOPPING=1", ...)
 * to the service manager named by $NOTIFY_SOCKET: through libsystemd's
 * sd_notify() when engy was built with it, else by the same datagram
 * protocol.  Returns > 0 when sent, 0 when no manager listens (no
 * $NOTIFY_SOCKET), or a negative errno.  Any thread.
 */
int engy_notify(const char *state);

#endif /* ENGY_CORE_NOTIFY_H */
