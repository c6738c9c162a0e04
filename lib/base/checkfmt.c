/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkfmt.h"

void engy_check_begin(struct engy_check_buf *b, const char *what, int probe)
{
	memset(b, 0, sizeof(*b));
	b->c.size = sizeof(b->c);
	b->c.what = what;
	b->c.probe = (uint32_t)probe;
}

void engy_check_fmt(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, n, fmt, ap);
	va_end(ap);
}

void engy_check_source(const struct engy_host *h, const char *opt,
		       struct engy_check_buf *b)
{
	if (h->size < offsetof(struct engy_host, opt_source) + sizeof(void *) ||
	    !h->opt_source ||
	    h->opt_source(h, opt, b->source, sizeof(b->source)) < 0)
		ENGY_CHECK_SET(b, source, "?");
}

int engy_check_add(const struct engy_check_sink *sink, struct engy_check_buf *b)
{
	b->c.target = b->target;
	b->c.source = b->source;
	b->c.problem = b->problem;
	b->c.fix = b->fix;
	return sink->add(sink, &b->c);
}

bool engy_is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool engy_readable_in(const char *dir, const char *file)
{
	char p[4096];

	if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, file) >= sizeof(p))
		return false;
	return access(p, R_OK) == 0;
}

void engy_check_checkpoint(struct engy_check_buf *b, const char *dir)
{
	if (!engy_is_dir(dir))
		ENGY_CHECK_SET(b, problem, "no such directory");
	else if (!engy_readable_in(dir, "config.json"))
		ENGY_CHECK_SET(b, problem, "no readable config.json in it");
	else if (!engy_readable_in(dir, "tokenizer.json"))
		ENGY_CHECK_SET(b, problem,
			       "no readable tokenizer.json in it "
			       "(the miner tokenizes with the checkpoint's "
			       "tokenizer)");
	if (b->problem[0])
		ENGY_CHECK_SET(b, fix,
			       "set CHECKPOINT (or --checkpoint) to "
			       "the model's checkpoint directory on this "
			       "machine, the one the serve loaded");
}

int engy_check_add_checkpoint(const struct engy_host *h,
			      const struct engy_check_sink *sink,
			      const char *opt, const char *dir)
{
	struct engy_check_buf b;

	if (!dir || !*dir)
		return 0;
	engy_check_begin(&b, "checkpoint", ENGY_PROBE_NONE);
	ENGY_CHECK_SET(&b, target, "%s", dir);
	engy_check_source(h, opt, &b);
	engy_check_checkpoint(&b, dir);
	return engy_check_add(sink, &b);
}
