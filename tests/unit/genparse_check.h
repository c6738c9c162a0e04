/* SPDX-License-Identifier: MIT */
/*
 * Test harness for the generation parsers (check_genparse, check_genstream):
 * a schema fixture, a collector of streamed deltas, and gp_parse(), which
 * parses a text in one go and checks the stream against it, fed whole, cut
 * at every offset, at pairs of offsets and one byte at a time.
 */
#ifndef ENGY_TEST_GENPARSE_CHECK_H
#define ENGY_TEST_GENPARSE_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "genparse.h"

/* The tools of the fixture: get_weather (typed properties) and f. */
extern cJSON *gp_tools;
void gp_setup(void);
void gp_teardown(void);

/* Options with call ids id0, id1, ... */
struct engy_genparse_opts gp_opts(bool think_open, bool with_tools);

/* Streamed deltas, concatenated; gp_collect checks each as it comes. */
struct gp_coll {
	char *reasoning, *content;
	size_t rlen, clen;
	bool saw_reasoning;
	struct {
		char id[64], *name, *args;
		size_t alen;
	} call[16];
	size_t ncalls;
};

int gp_collect(void *arg, const struct engy_gen_delta *d);
void gp_coll_free(struct gp_coll *c);
void gp_expect_same(const struct gp_coll *c, const struct engy_gen_msg *m,
		    const char *how);

/* Feed @text cut at @cuts (ascending), then finish. */
void gp_stream(const char *text, size_t len, const struct engy_genparse_opts *o,
	       const size_t *cuts, size_t ncuts, struct gp_coll *c);

/* Batch-parse @text into @m and check the stream against it at every split. */
void gp_parse(const char *text, const struct engy_genparse_opts *o,
	      struct engy_gen_msg *m);

/* gp_parse, then: reasoning (NULL: no reasoning section), content, calls. */
void gp_check(const char *text, struct engy_genparse_opts o,
	      const char *reasoning, const char *content, size_t ncalls);

/* gp_parse, then: exactly one call, with arguments @args. */
void gp_one_call(const char *text, struct engy_genparse_opts o,
		 const char *args);

#endif /* ENGY_TEST_GENPARSE_CHECK_H */
