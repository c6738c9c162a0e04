/* SPDX-License-Identifier: MIT */
/*
 * A hand-driven websocket peer on plain sockets for transport tests: it
 * writes exactly the bytes a test wants (bad frames included) and reads
 * what the transport sends, running the event loop while it waits.  Its
 * frame reader and writer are written apart from lib/ws/ws_frame.c.
 */
#ifndef ENGY_TEST_WS_RAW_H
#define ENGY_TEST_WS_RAW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;

void raw_init(struct event_base *base);
/* A blocking TCP connection to 127.0.0.1:@port. */
int raw_connect(int port);
/* A listening socket on 127.0.0.1, its port in *@port. */
int raw_listen(int *port);
/* accept() on @lfd, running the loop for up to @ms; -1 on timeout. */
int raw_accept(int lfd, int ms);
void raw_write(int fd, const void *p, size_t n);
/* Read up to the end of an HTTP head into @buf (NUL-terminated). */
bool raw_head(int fd, char *buf, size_t cap, int ms);
/*
 * One frame: @b0 is the first byte (FIN, RSV, opcode), masked with a
 * fixed key when @mask.
 */
void raw_frame_send(int fd, int b0, const void *p, size_t n, bool mask);
/*
 * Read one frame; returns its first byte (FIN, RSV, opcode) with the
 * payload unmasked in @buf and whether it was masked in *@masked, or -1
 * on timeout or EOF.
 */
int raw_frame_read(int fd, uint8_t *buf, size_t cap, size_t *len, bool *masked,
		   int ms);
/* Did the peer close the connection (EOF or reset) within @ms? */
bool raw_eof(int fd, int ms);
/* Upgrade on @path as a client would; true on a 101 with the right key. */
bool raw_upgrade(int fd, const char *path);
/* Answer a client's upgrade request read from @fd with a 101. */
bool raw_accept_upgrade(int fd, char *req, size_t cap);

#endif /* ENGY_TEST_WS_RAW_H */
