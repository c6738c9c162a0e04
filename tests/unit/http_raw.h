/* SPDX-License-Identifier: MIT */
/*
 * A raw HTTP/1.1 client for the transport tests: blocking sockets, every
 * byte read and checked by hand (no HTTP library between the test and
 * the wire).
 */
#ifndef ENGY_TEST_HTTP_RAW_H
#define ENGY_TEST_HTTP_RAW_H

#include <stdbool.h>
#include <stddef.h>

struct http_resp {
	int status;
	char head[4096];
	char body[65536];
	size_t body_len;
	bool chunked, closed;
	int n_chunks;
};

/* Connect to 127.0.0.1:@port (5 s receive timeout). */
int http_raw_dial(int port);
void http_raw_put(int fd, const char *s);
/* One line through its LF; -1 on EOF. */
int http_raw_line(int fd, char *buf, size_t cap);
bool http_raw_exact(int fd, char *buf, size_t n);
/* A response header's value (static buffer), or NULL. */
const char *http_raw_hdr(const struct http_resp *r, const char *name);
/* One response; a HEAD request's has no body whatever it announces. */
void http_raw_read(int fd, struct http_resp *r, bool head_req);
/* The peer closed: EOF or a reset within the timeout. */
bool http_raw_closed(int fd);

#endif /* ENGY_TEST_HTTP_RAW_H */
