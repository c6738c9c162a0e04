/* SPDX-License-Identifier: MIT */
/* Loader internals shared by lib/tokenizer/tok_load.c and lib/tok_pipeline.c. */
#ifndef ENGY_TOK_LOAD_H
#define ENGY_TOK_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "tok_int.h"

struct tok_loader {
	struct engy_tokenizer *t;
	char *err;
	size_t errlen;
	size_t dec_used;
};

#define TOK_FAIL(ld, rc, ...)                                                  \
	do {                                                                   \
		snprintf((ld)->err, (ld)->errlen, __VA_ARGS__);                \
		return (rc);                                                   \
	} while (0)

bool engy_tok_json_true(const cJSON *o, const char *name, bool dflt);
/* The "type" string of a tokenizer.json component, or NULL. */
const char *engy_tok_json_type(const cJSON *o);

/* tok_pipeline.c: the parts of tokenizer.json around the model. */
int engy_tok_load_normalizer(struct tok_loader *ld, const cJSON *n);
int engy_tok_load_pretok(struct tok_loader *ld, const cJSON *p, int *bytelevel);
int engy_tok_load_model(struct tok_loader *ld, const cJSON *m);
int engy_tok_check_decoder(struct tok_loader *ld, const cJSON *d);
/*
 * Special-token names in tokenizer_config.json; *out (malloc'd) points into
 * @cfg.
 */
int engy_tok_config_specials(const cJSON *cfg, const char ***out, size_t *n);

#endif /* ENGY_TOK_LOAD_H */
