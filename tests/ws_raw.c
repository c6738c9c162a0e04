/* SPDX-License-Identifier: MIT */
/* A hand-driven websocket peer (see ws_raw.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "ws_handshake.h"
#include "ws_raw.h"

static struct event_base *loop;

void raw_init(struct event_base *base)
{
	loop = base;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Run the loop until @fd is readable or @ms pass. */
static bool readable(int fd, int ms)
{
	long end = now_ms() + ms;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	do {
		event_base_loop(loop, EVLOOP_NONBLOCK);
		if (poll(&p, 1, 2) == 1)
			return true;
	} while (now_ms() < end);
	return false;
}

int raw_connect(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("raw_connect");
		abort();
	}
	return fd;
}

int raw_listen(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(fd, 8) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		perror("raw_listen");
		abort();
	}
	*port = ntohs(a.sin_port);
	return fd;
}

int raw_accept(int lfd, int ms)
{
	if (!readable(lfd, ms))
		return -1;
	return accept(lfd, NULL, NULL);
}

void raw_write(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	ssize_t w;

	while (n) {
		w = send(fd, b, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* the peer may already be gone */
		b += w;
		n -= (size_t)w;
	}
}

static bool read_exact(int fd, void *buf, size_t n, int ms)
{
	uint8_t *b = buf;
	ssize_t r;

	while (n) {
		if (!readable(fd, ms))
			return false;
		r = recv(fd, b, n, 0);
		if (r <= 0)
			return false;
		b += r;
		n -= (size_t)r;
	}
	return true;
}

bool raw_head(int fd, char *buf, size_t cap, int ms)
{
	size_t n = 0;

	while (n + 1 < cap) {
		if (!read_exact(fd, buf + n, 1, ms))
			break;
		n++;
		buf[n] = '\0';
		if (n >= 4 && memcmp(buf + n - 4, "\r\n\r\n", 4) == 0)
			return true;
	}
	buf[n] = '\0';
	return false;
}

void raw_frame_send(int fd, int b0, const void *p, size_t n, bool mask)
{
	static const uint8_t key[4] = { 0xa1, 0xb2, 0xc3, 0xd4 };
	uint8_t *f = malloc(n + 14);
	size_t h = 0, i;

	f[h++] = (uint8_t)b0;
	if (n < 126) {
		f[h++] = (uint8_t)((mask ? 0x80 : 0) | n);
	} else if (n < 65536) {
		f[h++] = (uint8_t)((mask ? 0x80 : 0) | 126);
		f[h++] = (uint8_t)(n >> 8);
		f[h++] = (uint8_t)n;
	} else {
		f[h++] = (uint8_t)((mask ? 0x80 : 0) | 127);
		for (i = 0; i < 8; i++)
			f[h++] = (uint8_t)((uint64_t)n >> (56 - 8 * i));
	}
	if (mask) {
		memcpy(f + h, key, 4);
		h += 4;
	}
	for (i = 0; i < n; i++)
		f[h + i] = ((const uint8_t *)p)[i] ^ (mask ? key[i % 4] : 0);
	raw_write(fd, f, h + n);
	free(f);
}

int raw_frame_read(int fd, uint8_t *buf, size_t cap, size_t *len, bool *masked,
		   int ms)
{
	uint8_t h[2], ext[8], key[4];
	uint64_t n;
	size_t i;

	if (!read_exact(fd, h, 2, ms))
		return -1;
	n = h[1] & 0x7f;
	if (n == 126) {
		if (!read_exact(fd, ext, 2, ms))
			return -1;
		n = (uint64_t)ext[0] << 8 | ext[1];
	} else if (n == 127) {
		if (!read_exact(fd, ext, 8, ms))
			return -1;
		for (n = 0, i = 0; i < 8; i++)
			n = n << 8 | ext[i];
	}
	*masked = (h[1] & 0x80) != 0;
	if (*masked && !read_exact(fd, key, 4, ms))
		return -1;
	if (n > cap || !read_exact(fd, buf, (size_t)n, ms))
		return -1;
	for (i = 0; *masked && i < n; i++)
		buf[i] ^= key[i % 4];
	*len = (size_t)n;
	return h[0];
}

bool raw_eof(int fd, int ms)
{
	uint8_t b[256];
	long end = now_ms() + ms;
	ssize_t r;

	while (now_ms() < end) {
		if (!readable(fd, (int)(end - now_ms())))
			return false;
		r = recv(fd, b, sizeof(b), 0);
		if (r == 0 || (r < 0 && errno == ECONNRESET))
			return true;
		if (r < 0)
			return false;
	}
	return false;
}

bool raw_upgrade(int fd, const char *path)
{
	char req[512], head[2048];

	snprintf(req, sizeof(req),
		 "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
		 "Connection: Upgrade\r\n"
		 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
		 "Sec-WebSocket-Version: 13\r\n\r\n",
		 path);
	raw_write(fd, req, strlen(req));
	if (!raw_head(fd, head, sizeof(head), 2000))
		return false;
	/* RFC 6455 §1.3's worked example, checked on the wire. */
	return strncmp(head, "HTTP/1.1 101 ", 13) == 0 &&
	       strstr(head,
		      "\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n");
}

bool raw_accept_upgrade(int fd, char *req, size_t cap)
{
	char acc[ENGY_WS_ACCEPT_LEN + 1], key[64], resp[256];
	const char *k;

	if (!raw_head(fd, req, cap, 3000))
		return false;
	k = strstr(req, "Sec-WebSocket-Key: ");
	if (!k || sscanf(k + 19, "%63[^\r]", key) != 1 ||
	    engy_ws_accept(acc, key) < 0)
		return false;
	snprintf(resp, sizeof(resp),
		 "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
		 "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		 acc);
	raw_write(fd, resp, strlen(resp));
	return true;
}
