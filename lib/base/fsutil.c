/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

int engy_read_file(const char *path, size_t max, uint8_t **buf, size_t *len)
{
	int fd, rc = 0;
	size_t cap = 65536, n = 0;
	uint8_t *p = NULL, *q;
	ssize_t r;

	*buf = NULL;
	*len = 0;
	fd = strcmp(path, "-") == 0 ? STDIN_FILENO
				    : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	p = malloc(cap + 1);
	if (!p) {
		rc = -ENOMEM;
		goto out;
	}
	for (;;) {
		if (n == cap) {
			if (cap >= max + 1) {
				rc = -EFBIG;
				goto out;
			}
			cap *= 2;
			q = realloc(p, cap + 1);
			if (!q) {
				rc = -ENOMEM;
				goto out;
			}
			p = q;
		}
		r = read(fd, p + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			rc = -EFBIG;
			goto out;
		}
	}
	p[n] = '\0';
	*buf = p;
	*len = n;
	p = NULL;
out:
	free(p);
	if (fd != STDIN_FILENO)
		close(fd);
	return rc;
}

int engy_write_file_atomic(const char *path, const void *data, size_t len,
			   unsigned mode)
{
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 16);
	const uint8_t *p = data;
	int fd, rc = 0;
	ssize_t w;

	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, plen + 16, "%s.tmp.XXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	if (fchmod(fd, (mode_t)mode) < 0)
		goto fail;
	while (len) {
		w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		p += w;
		len -= (size_t)w;
	}
	if (fsync(fd) < 0)
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) < 0)
		goto fail;
	goto out;
fail:
	rc = -errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
out:
	free(tmp);
	return rc;
}
