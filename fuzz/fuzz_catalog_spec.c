/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the model catalog's reader of a published model spec file
 * (lib/model/catalogspec.c): any input is refused with a reason or
 * accepted, never crashes; what is accepted is in range (the TOPLOC pass
 * share at most a million millionths, a mantissa limit fits its
 * hundredths, toploc_v at most toploc_topk when both are given, the
 * GEMM audit's sizes in range).
 */
#include <stdlib.h>
#include <string.h>

#include "catalogspec.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engy_cspec s;
	char err[256];
	int f;

	err[0] = 0;
	if (engy_cspec_parse((const char *)data, size, &s, err, sizeof(err))) {
		if (!err[0])
			abort(); /* every refusal has a reason */
		return 0;
	}
	for (f = 0; f < ENGY_CS_N; f++)
		if (s.have[f] && s.val[f] < 0)
			abort();
	if ((s.have[ENGY_CS_TOPLOC_P] && s.val[ENGY_CS_TOPLOC_P] > 1000000) ||
	    (s.have[ENGY_CS_TOPLOC_MANT_MEAN] &&
	     s.val[ENGY_CS_TOPLOC_MANT_MEAN] > ENGY_CS_MANT_MAX_CENTI) ||
	    (s.have[ENGY_CS_TOPLOC_MANT_MEDIAN] &&
	     s.val[ENGY_CS_TOPLOC_MANT_MEDIAN] > ENGY_CS_MANT_MAX_CENTI))
		abort();
	if (s.have[ENGY_CS_TOPLOC_V] && s.have[ENGY_CS_TOPLOC_TOPK] &&
	    s.val[ENGY_CS_TOPLOC_V] > s.val[ENGY_CS_TOPLOC_TOPK])
		abort();
	if (memchr(s.arch, 0, sizeof(s.arch)) == NULL)
		abort();
	/* The GEMM audit's sizes: defaults or in range. */
	if (!s.gemm.layers || !s.gemm.tokens || !s.gemm.projections ||
	    (uint64_t)s.gemm.layers * s.gemm.tokens > ENGY_CS_GEMM_MAX_CELLS ||
	    !(s.gemm.z >= 1 && s.gemm.z <= 1000) ||
	    !(s.gemm.c_el >= 1 && s.gemm.c_el <= 1000) ||
	    !(s.gemm.rate >= 0 && s.gemm.rate <= 1))
		abort();
	return 0;
}
