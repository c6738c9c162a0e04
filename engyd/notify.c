/* SPDX-License-Identifier: MIT */
/*
 * sd_notify: engyd tells a service manager (systemd, Type=notify) that the
 * role started (READY=1), that it is stopping (STOPPING=1), and a role may
 * feed the watchdog (WATCHDOG=1).  With libsystemd this is sd_notify();
 * without it, the protocol itself: one datagram of "KEY=VALUE" lines to the
 * AF_UNIX socket in $NOTIFY_SOCKET ('@' first: the abstract namespace).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <config.h>

#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "notify.h"

#ifdef HAVE_LIBSYSTEMD
int engy_notify(const char *state)
{
	return sd_notify(0, state);
}
#else
int engy_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	socklen_t len;
	size_t n;
	ssize_t w;
	int fd, rc;

	if (!path || !*path)
		return 0;
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sa.sun_path))
		return -EINVAL;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
			  (path[0] == '/'));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	w = sendto(fd, state, strlen(state), MSG_NOSIGNAL,
		   (const struct sockaddr *)&sa, len);
	rc = w < 0 ? -errno : 1;
	close(fd);
	return rc;
}
#endif
