/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "logfmt.h"
#include "log.h"

static const char *const level_names[] = {
	[ENGY_LOG_ERR] = "err",	    [ENGY_LOG_WARNING] = "warning",
	[ENGY_LOG_NOTICE] = "notice", [ENGY_LOG_INFO] = "info",
	[ENGY_LOG_DEBUG] = "debug",
};

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = STDERR_FILENO;
static char *log_path;
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
	pthread_mutex_lock(&log_lock);
	if (log_fd != STDERR_FILENO)
		close(log_fd);
	free(log_path);
	log_fd = fd;
	log_path = copy;
	pthread_mutex_unlock(&log_lock);
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
			close(log_fd);
			log_fd = fd;
		}
	}
	pthread_mutex_unlock(&log_lock);
	return rc;
}

void engy_log_close(void)
{
	pthread_mutex_lock(&log_lock);
	if (log_fd != STDERR_FILENO)
		close(log_fd);
	log_fd = STDERR_FILENO;
	free(log_path);
	log_path = NULL;
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
	m = snprintf(line + n, cap - n, " level=%s inst=", engy_log_level_name(level));
	n += (size_t)m;
	n += engy_logfmt_value(line + n, cap - n, inst ? inst : "engyd");
	if (n < cap - 1) {
		line[n++] = ' ';
		m = vsnprintf(line + n, cap - n, fmt, ap);
		if (m > 0)
			n += (size_t)m;
	}
	if (n > cap - 1)
		n = cap - 1;
	/* A message must stay one line whatever a caller passed in. */
	for (size_t i = 0; i < n; i++)
		if (line[i] == '\n' || line[i] == '\r')
			line[i] = ' ';
	line[n++] = '\n';
	pthread_mutex_lock(&log_lock);
	if (write(log_fd, line, n) < 0) {
		/* Nowhere left to report it. */
	}
	pthread_mutex_unlock(&log_lock);
}

void engy_log(int level, const char *inst, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	engy_vlog(level, inst, fmt, ap);
	va_end(ap);
}
