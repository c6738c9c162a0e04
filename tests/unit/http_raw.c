/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_raw.h"

int http_raw_dial(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct timeval tv = { 5, 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

void http_raw_put(int fd, const char *s)
{
	size_t n = strlen(s);

	ck_assert_int_eq(send(fd, s, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Read one byte-exact line ending in CRLF; -1 on EOF. */
int http_raw_line(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	char c;

	while (n + 1 < cap) {
		ssize_t r = recv(fd, &c, 1, 0);

		if (r <= 0)
			return -1;
		buf[n++] = c;
		if (c == '\n')
			break;
	}
	buf[n] = '\0';
	return (int)n;
}

bool http_raw_exact(int fd, char *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = recv(fd, buf + got, n - got, 0);

		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

const char *http_raw_hdr(const struct http_resp *r, const char *name)
{
	static char v[256];
	char pat[80];
	const char *p;

	snprintf(pat, sizeof(pat), "\r\n%s: ", name);
	p = strstr(r->head, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	snprintf(v, sizeof(v), "%.*s", (int)(strcspn(p, "\r")), p);
	return v;
}

/* One response; a HEAD request's has no body whatever it announces. */
void http_raw_read(int fd, struct http_resp *r, bool head_req)
{
	char line[1024];
	const char *cl, *te;

	memset(r, 0, sizeof(*r));
	do {
		r->head[0] = '\0';
		ck_assert_int_gt(http_raw_line(fd, line, sizeof(line)), 0);
		ck_assert_int_eq(sscanf(line, "HTTP/1.1 %d", &r->status), 1);
		strcat(r->head, line);
		for (;;) {
			ck_assert_int_gt(http_raw_line(fd, line, sizeof(line)),
					 0);
			strcat(r->head, line);
			if (strcmp(line, "\r\n") == 0)
				break;
		}
	} while (r->status == 100);
	cl = http_raw_hdr(r, "Content-Length");
	te = http_raw_hdr(r, "Transfer-Encoding");
	if (head_req)
		return;
	if (cl) {
		r->body_len = (size_t)atol(cl);
		ck_assert(http_raw_exact(fd, r->body, r->body_len));
	} else if (te && strcmp(te, "chunked") == 0) {
		r->chunked = true;
		for (;;) {
			unsigned long n;

			ck_assert_int_gt(http_raw_line(fd, line, sizeof(line)),
					 0);
			n = strtoul(line, NULL, 16);
			if (!n) {
				ck_assert_int_gt(
					http_raw_line(fd, line, sizeof(line)),
					0);
				ck_assert_str_eq(line, "\r\n");
				break;
			}
			ck_assert(http_raw_exact(fd, r->body + r->body_len, n));
			r->body_len += n;
			r->n_chunks++;
			ck_assert_int_gt(http_raw_line(fd, line, sizeof(line)),
					 0);
			ck_assert_str_eq(line, "\r\n");
		}
	} else {
		ssize_t n;

		while ((n = recv(fd, r->body + r->body_len,
				 sizeof(r->body) - r->body_len - 1, 0)) > 0)
			r->body_len += (size_t)n;
		r->closed = true;
	}
	r->body[r->body_len] = '\0';
}

/* The peer closed: recv() sees EOF (or a reset) within the timeout. */
bool http_raw_closed(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, 0);

	return n == 0 || (n < 0 && errno == ECONNRESET);
}
