/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "logfmt.h"
#include "log.h"

static const char *const level_names[] = {
	[ENGY_LOG_ERR] = "err",	      [ENGY_LOG_WARNING] = "warning",
	[ENGY_LOG_NOTICE] = "notice", [ENGY_LOG_INFO] = "info",
	[ENGY_LOG_DEBUG] = "debug",
};

/*
 * Lines to a file are written by a thread of the log's own: a write() to a
 * file can wait on the filesystem's journal for milliseconds (another
 * process's fsync on the same disk), and the loop thread that logged a
 * request must not.  Callers append to a ring under log_lock and wake the
 * writer; it takes what is there, and writes it holding fd_lock (taken
 * before log_lock is released, so lines stay in order).  Lines of notice
 * and above are written by the caller, after what the ring holds: an error
 * is on disk before the call returns, and a crash loses at most some
 * info/debug lines.  A full ring makes callers wait (nothing is dropped).
 * stderr is written directly, as before.  log_sync (engy_log_set_sync)
 * starts no writer: every line is written by its caller.
 */
#define RING_CAP  (1u << 20)
#define CHUNK_CAP (64u << 10)

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t fd_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = STDERR_FILENO;
static char *log_path;

static struct {
	char *buf;	  /* RING_CAP bytes, or NULL: direct */
	size_t head, len; /* oldest byte, bytes held */
	bool stop;
	pthread_t thread;
	pthread_cond_t more, room;
} ring = { .more = PTHREAD_COND_INITIALIZER, .room = PTHREAD_COND_INITIALIZER };
static bool log_sync;
static atomic_int log_level = ENGY_LOG_INFO;
static atomic_uint_fast64_t log_counts[ENGY_LOG_DEBUG + 1];

int engy_log_parse_level(const char *s)
{
	int i;

	for (i = ENGY_LOG_ERR; i <= ENGY_LOG_DEBUG; i++)
		if (strcmp(s, level_names[i]) == 0)
			return i;
	if (strcmp(s, "error") == 0)
		return ENGY_LOG_ERR;
	if (strcmp(s, "warn") == 0)
		return ENGY_LOG_WARNING;
	return -EINVAL;
}

const char *engy_log_level_name(int level)
{
	if (level < ENGY_LOG_ERR)
		level = ENGY_LOG_ERR;
	if (level > ENGY_LOG_DEBUG)
		level = ENGY_LOG_DEBUG;
	return level_names[level];
}

static int open_path(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);

	return fd < 0 ? -errno : fd;
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* nowhere left to report it */
		p += w;
		n -= (size_t)w;
	}
}

/* Up to @cap bytes off the ring into @out.  Context: log_lock held. */
static size_t ring_take(char *out, size_t cap)
{
	size_t n = ring.len < cap ? ring.len : cap;
	size_t first = RING_CAP - ring.head;

	if (first > n)
		first = n;
	memcpy(out, ring.buf + ring.head, first);
	memcpy(out + first, ring.buf, n - first);
	ring.head = (ring.head + n) % RING_CAP;
	ring.len -= n;
	if (n)
		pthread_cond_broadcast(&ring.room);
	return n;
}

/* Write out all the ring holds.  Context: log_lock and fd_lock held. */
static void ring_flush(void)
{
	size_t first;

	while (ring.len) {
		first = RING_CAP - ring.head;
		if (first > ring.len)
			first = ring.len;
		write_all(log_fd, ring.buf + ring.head, first);
		ring.head = (ring.head + first) % RING_CAP;
		ring.len -= first;
	}
	pthread_cond_broadcast(&ring.room);
}

static void *writer_main(void *arg)
{
	static char chunk[CHUNK_CAP];
	size_t n;

	(void)arg;
	/* Named, so an operator (top -H, gdb) and the tests can find it. */
	pthread_setname_np(pthread_self(), "engy-log");
	pthread_mutex_lock(&log_lock);
	for (;;) {
		while (!ring.len && !ring.stop)
			pthread_cond_wait(&ring.more, &log_lock);
		if (!ring.len)
			break;
		n = ring_take(chunk, sizeof(chunk));
		pthread_mutex_lock(&fd_lock);
		pthread_mutex_unlock(&log_lock);
		write_all(log_fd, chunk, n);
		pthread_mutex_unlock(&fd_lock);
		pthread_mutex_lock(&log_lock);
	}
	pthread_mutex_unlock(&log_lock);
	return NULL;
}

/* Stop the writer after it wrote everything.  Context: no lock held. */
static void writer_stop(void)
{
	pthread_mutex_lock(&log_lock);
	if (!ring.buf) {
		pthread_mutex_unlock(&log_lock);
		return;
	}
	ring.stop = true;
	pthread_cond_signal(&ring.more);
	pthread_mutex_unlock(&log_lock);
	pthread_join(ring.thread, NULL);
	pthread_mutex_lock(&log_lock);
	free(ring.buf);
	ring.buf = NULL;
	ring.head = ring.len = 0;
	ring.stop = false;
	pthread_cond_broadcast(&ring.room);
	pthread_mutex_unlock(&log_lock);
}

void engy_log_flush(void)
{
	pthread_mutex_lock(&log_lock);
	pthread_mutex_lock(&fd_lock);
	if (ring.buf)
		ring_flush();
	pthread_mutex_unlock(&fd_lock);
	pthread_mutex_unlock(&log_lock);
}

/* Start the writer; without one (no memory, no thread) lines go direct. */
static void writer_start(void)
{
	static bool registered;
	char *buf = malloc(RING_CAP);

	if (!buf)
		return;
	/* exit() without engy_log_close(): the ring still gets out. */
	if (!registered && atexit(engy_log_flush) == 0)
		registered = true;
	pthread_mutex_lock(&log_lock);
	ring.buf = buf;
	ring.head = ring.len = 0;
	ring.stop = false;
	if (pthread_create(&ring.thread, NULL, writer_main, NULL) != 0) {
		ring.buf = NULL;
		free(buf);
	}
	pthread_mutex_unlock(&log_lock);
}

void engy_log_set_sync(bool on)
{
	log_sync = on;
}

int engy_log_open(const char *path, int level)
{
	int fd = STDERR_FILENO;
	char *copy = NULL;

	if (path) {
		fd = open_path(path);
		if (fd < 0)
			return fd;
		copy = strdup(path);
		if (!copy) {
			close(fd);
			return -ENOMEM;
		}
	}
	writer_stop();
	pthread_mutex_lock(&log_lock);
	pthread_mutex_lock(&fd_lock);
	if (log_fd != STDERR_FILENO)
		close(log_fd);
	free(log_path);
	log_fd = fd;
	log_path = copy;
	pthread_mutex_unlock(&fd_lock);
	pthread_mutex_unlock(&log_lock);
	if (path && !log_sync)
		writer_start();
	engy_log_set_level(level);
	return 0;
}

int engy_log_reopen(void)
{
	int fd, rc = 0;

	pthread_mutex_lock(&log_lock);
	if (log_path) {
		fd = open_path(log_path);
		if (fd < 0) {
			rc = fd;
		} else {
			/* What was logged before the signal goes to the
			 * old file (being rotated), the rest to the new. */
			pthread_mutex_lock(&fd_lock);
			if (ring.buf)
				ring_flush();
			close(log_fd);
			log_fd = fd;
			pthread_mutex_unlock(&fd_lock);
		}
	}
	pthread_mutex_unlock(&log_lock);
	return rc;
}

void engy_log_close(void)
{
	writer_stop();
	pthread_mutex_lock(&log_lock);
	pthread_mutex_lock(&fd_lock);
	if (log_fd != STDERR_FILENO)
		close(log_fd);
	log_fd = STDERR_FILENO;
	free(log_path);
	log_path = NULL;
	pthread_mutex_unlock(&fd_lock);
	pthread_mutex_unlock(&log_lock);
}

void engy_log_set_level(int level)
{
	atomic_store(&log_level, level);
}

int engy_log_get_level(void)
{
	return atomic_load(&log_level);
}

uint64_t engy_log_count(int level)
{
	if (level < 0 || level > ENGY_LOG_DEBUG)
		return 0;
	return atomic_load(&log_counts[level]);
}

void engy_vlog(int level, const char *inst, const char *fmt, va_list ap)
{
	char line[8192];
	size_t n, cap = sizeof(line) - 1;
	int m;

	if (level > atomic_load(&log_level))
		return;
	if (level >= ENGY_LOG_ERR && level <= ENGY_LOG_DEBUG)
		atomic_fetch_add(&log_counts[level], 1);
	engy_logfmt_now(line, 40);
	n = strlen(line);
	{
		const char *lv = engy_log_level_name(level);
		size_t k = strlen(lv);

		memcpy(line + n, " level=", 7);
		memcpy(line + n + 7, lv, k);
		memcpy(line + n + 7 + k, " inst=", 6);
		n += 13 + k;
	}
	n += engy_logfmt_value(line + n, cap - n, inst ? inst : "engyd");
	if (n < cap - 1) {
		va_list aq;

		line[n++] = ' ';
		va_copy(aq, ap);
		m = engy_logfmt_vformat(line + n, cap - n, fmt, aq);
		va_end(aq);
		if (m < 0) /* a conversion the fast path leaves to libc */
			m = vsnprintf(line + n, cap - n, fmt, ap);
		if (m > 0)
			n += (size_t)m;
	}
	if (n > cap - 1)
		n = cap - 1;
	/* A message must stay one line whatever a caller passed in. */
	for (char *p = line; (p = memchr(p, '\n', n - (size_t)(p - line)));)
		*p++ = ' ';
	for (char *p = line; (p = memchr(p, '\r', n - (size_t)(p - line)));)
		*p++ = ' ';
	line[n++] = '\n';
	pthread_mutex_lock(&log_lock);
	if (ring.buf && level >= ENGY_LOG_INFO) {
		size_t tail;

		while (RING_CAP - ring.len < n && ring.buf)
			pthread_cond_wait(&ring.room, &log_lock);
		if (ring.buf) {
			tail = (ring.head + ring.len) % RING_CAP;
			if (tail + n <= RING_CAP) {
				memcpy(ring.buf + tail, line, n);
			} else {
				memcpy(ring.buf + tail, line, RING_CAP - tail);
				memcpy(ring.buf, line + (RING_CAP - tail),
				       n - (RING_CAP - tail));
			}
			ring.len += n;
			pthread_cond_signal(&ring.more);
			pthread_mutex_unlock(&log_lock);
			return;
		}
	}
	pthread_mutex_lock(&fd_lock);
	if (ring.buf)
		ring_flush();
	write_all(log_fd, line, n);
	pthread_mutex_unlock(&fd_lock);
	pthread_mutex_unlock(&log_lock);
}

void engy_log(int level, const char *inst, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	engy_vlog(level, inst, fmt, ap);
	va_end(ap);
}
