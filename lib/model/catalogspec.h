/* SPDX-License-Identifier: MIT */
/*
 * A published model spec file as the model catalog reads it
 * (specs/store.md, "engyctl admin"; specs/protocol.md §6): the weight
 * commitment `model_root`, `config.arch`, and the limit, TOPLOC,
 * qualification, score and price fields it carries.  Every field is
 * optional but `model_root`; one that is present must be of its type and
 * range, or the file is refused with the field named.
 */
#ifndef ENGY_CATALOGSPEC_H
#define ENGY_CATALOGSPEC_H

#include <stddef.h>
#include <stdint.h>

/* The fields, in the order of engyctl admin's flags. */
enum engy_cspec_field {
	ENGY_CS_MAX_INPUT_TOKENS,
	ENGY_CS_MAX_OUTPUT_TOKENS,
	ENGY_CS_MAX_REQUEST_S,
	ENGY_CS_TOPLOC_TOPK, /* toploc_topk, or toploc_k */
	ENGY_CS_TOPLOC_V,
	ENGY_CS_TOPLOC_P, /* a share 0..1, kept in millionths */
	ENGY_CS_QUAL_TTFT,
	ENGY_CS_QUAL_TPOT,
	ENGY_CS_SCORE_RATE,
	ENGY_CS_PRICE_INPUT,	    /* price.input */
	ENGY_CS_PRICE_CACHED_INPUT, /* price.cached_input */
	ENGY_CS_PRICE_OUTPUT,	    /* price.output */
	ENGY_CS_TOPLOC_MANT_MEAN,   /* 0..655.35, kept in hundredths */
	ENGY_CS_TOPLOC_MANT_MEDIAN, /* 0..655.35, kept in hundredths */
	ENGY_CS_N
};

/* The largest mantissa limit (hundredths in a uint16_t). */
#define ENGY_CS_MANT_MAX_CENTI 65535

/*
 * The GEMM audit's sizes (specs/gemm-audit.md §6): the spec file's
 * gemm_layers, gemm_tokens, gemm_projections, gemm_spots, gemm_z,
 * gemm_c_el and gemm_rate, each the default below when absent.
 */
#define ENGY_CS_GEMM_LAYERS	 4
#define ENGY_CS_GEMM_TOKENS	 4
#define ENGY_CS_GEMM_PROJECTIONS 2
#define ENGY_CS_GEMM_SPOTS	 2
#define ENGY_CS_GEMM_Z		 6.0
#define ENGY_CS_GEMM_C_EL	 6.0
#define ENGY_CS_GEMM_RATE	 0.05
#define ENGY_CS_GEMM_MAX_CELLS	 4096 /* layers x tokens at most */

struct engy_cspec_gemm {
	uint32_t layers, tokens, projections, spots;
	double z, c_el, rate;
	unsigned have; /* bit i: the i-th field above was in the file */
};

struct engy_cspec {
	uint8_t model_root[32];
	char arch[32];
	int have[ENGY_CS_N];
	int64_t val[ENGY_CS_N];
	struct engy_cspec_gemm gemm;
};

/* The defaults into @g (have 0). */
void engy_cspec_gemm_defaults(struct engy_cspec_gemm *g);

/* The JSON name of a field ("price.input" for the price card's). */
const char *engy_cspec_name(int field);

/*
 * engy_cspec_parse() - parse @buf (@len bytes, untrusted) into @out.
 * 0, or -EINVAL with a reason naming the field in @err.
 */
int engy_cspec_parse(const char *buf, size_t len, struct engy_cspec *out,
		     char *err, size_t errlen);

#endif /* ENGY_CATALOGSPEC_H */
