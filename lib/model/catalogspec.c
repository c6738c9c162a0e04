/* SPDX-License-Identifier: MIT */
/* A published model spec file as the model catalog reads it. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "catalogspec.h"
#include "hex.h"

static const char *const names[ENGY_CS_N] = {
	"max_input_tokens", "max_output_tokens",  "max_request_s",
	"toploc_topk",	    "toploc_v",		  "toploc_p",
	"qual_ttft_p99_ms", "qual_tpot_p99_ms",	  "score_rate",
	"price.input",	    "price.cached_input", "price.output",
	"toploc_mant_mean", "toploc_mant_median",
};

const char *engy_cspec_name(int field)
{
	return field >= 0 && field < ENGY_CS_N ? names[field] : "?";
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* One field's value: its type and range, into the kept unit. */
static int value(int f, const cJSON *it, int64_t *v, char *err, size_t errlen)
{
	double x = cJSON_IsNumber(it) ? it->valuedouble : NAN;

	switch (f) {
	case ENGY_CS_TOPLOC_P:
		if (!(x >= 0 && x <= 1))
			return fail(err, errlen,
				    "%s is not a number from 0 to 1", names[f]);
		*v = llround(x * 1e6);
		return 0;
	case ENGY_CS_TOPLOC_MANT_MEAN:
	case ENGY_CS_TOPLOC_MANT_MEDIAN:
		if (!(x >= 0 && x * 100 <= ENGY_CS_MANT_MAX_CENTI) ||
		    fabs(x * 100 - llround(x * 100)) > 1e-6)
			return fail(
				err, errlen,
				"%s is not a number from 0 to 655.35 with at most two decimals (0: unchecked)",
				names[f]);
		*v = llround(x * 100);
		return 0;
	case ENGY_CS_SCORE_RATE:
	case ENGY_CS_PRICE_INPUT:
	case ENGY_CS_PRICE_CACHED_INPUT:
	case ENGY_CS_PRICE_OUTPUT:
		if (!(x >= 0 && x <= 1e12) || x != floor(x))
			return fail(
				err, errlen,
				"%s is not an integer from 0 to 1000000000000",
				names[f]);
		*v = (int64_t)x;
		return 0;
	default:
		if (!(x >= (f == ENGY_CS_TOPLOC_V ? 0 : 1) &&
		      x <= 4294967295.0) ||
		    x != floor(x))
			return fail(
				err, errlen,
				"%s is not an integer from %d to 4294967295",
				names[f], f == ENGY_CS_TOPLOC_V ? 0 : 1);
		*v = (int64_t)x;
		return 0;
	}
}

void engy_cspec_gemm_defaults(struct engy_cspec_gemm *g)
{
	g->layers = ENGY_CS_GEMM_LAYERS;
	g->tokens = ENGY_CS_GEMM_TOKENS;
	g->projections = ENGY_CS_GEMM_PROJECTIONS;
	g->spots = ENGY_CS_GEMM_SPOTS;
	g->z = ENGY_CS_GEMM_Z;
	g->c_el = ENGY_CS_GEMM_C_EL;
	g->rate = ENGY_CS_GEMM_RATE;
	g->have = 0;
}

/* The gemm_* fields: type, range, and layers x tokens bounded. */
static int gemm_fields(const cJSON *j, struct engy_cspec_gemm *g, char *err,
		       size_t errlen)
{
	static const struct {
		const char *name;
		double lo, hi;
		bool integer;
	} f[7] = {
		{ "gemm_layers", 1, 65536, true },
		{ "gemm_tokens", 1, ENGY_CS_GEMM_MAX_CELLS, true },
		{ "gemm_projections", 1, 64, true },
		{ "gemm_spots", 0, 4096, true },
		{ "gemm_z", 1, 1000, false },
		{ "gemm_c_el", 1, 1000, false },
		{ "gemm_rate", 0, 1, false },
	};
	int i;

	engy_cspec_gemm_defaults(g);
	for (i = 0; i < 7; i++) {
		const cJSON *it =
			cJSON_GetObjectItemCaseSensitive(j, f[i].name);
		double x;

		if (!it || cJSON_IsNull(it))
			continue;
		x = cJSON_IsNumber(it) ? it->valuedouble : NAN;
		if (!(x >= f[i].lo && x <= f[i].hi) ||
		    (f[i].integer && x != floor(x)))
			return fail(err, errlen, "%s is not %s from %g to %g",
				    f[i].name,
				    f[i].integer ? "an integer" : "a number",
				    f[i].lo, f[i].hi);
		g->have |= 1u << i;
		switch (i) {
		case 0:
			g->layers = (uint32_t)x;
			break;
		case 1:
			g->tokens = (uint32_t)x;
			break;
		case 2:
			g->projections = (uint32_t)x;
			break;
		case 3:
			g->spots = (uint32_t)x;
			break;
		case 4:
			g->z = x;
			break;
		case 5:
			g->c_el = x;
			break;
		default:
			g->rate = x;
			break;
		}
	}
	if ((uint64_t)g->layers * g->tokens > ENGY_CS_GEMM_MAX_CELLS)
		return fail(err, errlen,
			    "gemm_layers x gemm_tokens is above %d",
			    ENGY_CS_GEMM_MAX_CELLS);
	return 0;
}

int engy_cspec_parse(const char *buf, size_t len, struct engy_cspec *out,
		     char *err, size_t errlen)
{
	const cJSON *root, *cfg, *arch, *price, *it;
	cJSON *j;
	int f, rc = 0;

	memset(out, 0, sizeof(*out));
	engy_cspec_gemm_defaults(&out->gemm);
	if (err && errlen)
		err[0] = 0;
	j = buf ? cJSON_ParseWithLength(buf, len) : NULL;
	root = cJSON_GetObjectItemCaseSensitive(j, "model_root");
	if (!cJSON_IsObject(j) || !cJSON_IsString(root) ||
	    engy_hex_parse(root->valuestring, out->model_root, 32)) {
		cJSON_Delete(j);
		return fail(err, errlen,
			    "not a model spec (no 64-hex model_root)");
	}
	cfg = cJSON_GetObjectItemCaseSensitive(j, "config");
	arch = cJSON_GetObjectItemCaseSensitive(cfg, "arch");
	if (cJSON_IsString(arch))
		snprintf(out->arch, sizeof(out->arch), "%s", arch->valuestring);
	price = cJSON_GetObjectItemCaseSensitive(j, "price");
	if (price && !cJSON_IsObject(price)) {
		cJSON_Delete(j);
		return fail(err, errlen, "price is not an object");
	}
	for (f = 0; !rc && f < ENGY_CS_N; f++) {
		if (f >= ENGY_CS_PRICE_INPUT && f <= ENGY_CS_PRICE_OUTPUT)
			it = cJSON_GetObjectItemCaseSensitive(
				price, names[f] + strlen("price."));
		else
			it = cJSON_GetObjectItemCaseSensitive(j, names[f]);
		if (!it && f == ENGY_CS_TOPLOC_TOPK)
			it = cJSON_GetObjectItemCaseSensitive(j, "toploc_k");
		if (!it || cJSON_IsNull(it))
			continue;
		rc = value(f, it, &out->val[f], err, errlen);
		out->have[f] = !rc;
	}
	if (!rc && out->have[ENGY_CS_TOPLOC_TOPK] &&
	    out->have[ENGY_CS_TOPLOC_V] &&
	    out->val[ENGY_CS_TOPLOC_V] > out->val[ENGY_CS_TOPLOC_TOPK])
		rc = fail(err, errlen, "toploc_v is larger than toploc_topk");
	if (!rc)
		rc = gemm_fields(j, &out->gemm, err, errlen);
	cJSON_Delete(j);
	return rc;
}
