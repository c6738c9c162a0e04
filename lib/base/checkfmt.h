/* SPDX-License-Identifier: MIT */
/*
 * Helpers for a plugin's check op (engy/check.h): a check with its own
 * buffers, formatting into them, the option's source from the host, and
 * the local-file tests a checkpoint directory needs.  No network I/O.
 */
#ifndef ENGY_CHECKFMT_H
#define ENGY_CHECKFMT_H

#include <stdbool.h>
#include <stddef.h>

#include <engy/check.h>
#include <engy/host.h>

struct engy_check_buf {
	struct engy_check c;
	char target[1024];
	char source[96];
	char problem[512];
	char fix[512];
};

/* Start a check of @what (a literal) probed as @probe; buffers empty. */
void engy_check_begin(struct engy_check_buf *b, const char *what, int probe);
/* snprintf into @buf; ENGY_CHECK_SET(b, field, fmt, ...) into b->field. */
void engy_check_fmt(char *buf, size_t n, const char *fmt, ...)
	ENGY_PRINTF(3, 4);
#define ENGY_CHECK_SET(b, field, ...)                                          \
	engy_check_fmt((b)->field, sizeof((b)->field), __VA_ARGS__)
/* b->source: where @h's instance's option @opt came from ("?" if the
 * host cannot say). */
void engy_check_source(const struct engy_host *h, const char *opt,
		       struct engy_check_buf *b);
/* Report @b through @sink; returns the sink's answer. */
int engy_check_add(const struct engy_check_sink *sink,
		   struct engy_check_buf *b);

bool engy_is_dir(const char *path);
/* @dir/@file can be read by this user. */
bool engy_readable_in(const char *dir, const char *file);
/*
 * A checkpoint directory as the miner reads it: it exists and holds a
 * readable config.json and tokenizer.json.  Sets b->problem and b->fix
 * when not.
 */
void engy_check_checkpoint(struct engy_check_buf *b, const char *dir);
/*
 * engy_check_add_checkpoint() - report the calling instance's own
 * checkpoint option @opt (value @dir) as a "checkpoint" line, checked as
 * above; nothing when @dir is NULL or empty.  Returns engy_check_add()'s.
 */
int engy_check_add_checkpoint(const struct engy_host *h,
			      const struct engy_check_sink *sink,
			      const char *opt, const char *dir);

#endif /* ENGY_CHECKFMT_H */
