/* SPDX-License-Identifier: MIT */
/*
 * The straightforward reference-algorithm port (lib/toploc/toploc_ref.c): the
 * independent peer in tests and the baseline of the benchmark.  Same
 * inputs and outputs as the engy_toploc_* counterparts; ties in top-k go
 * to the lower index, as there.
 */
#ifndef ENGY_TOPLOC_REF_H
#define ENGY_TOPLOC_REF_H

#include <stddef.h>
#include <stdint.h>

#include "toploc.h"

int engy_toploc_ref_topk(const uint16_t *v, size_t n, size_t k, uint64_t *idx);
uint32_t engy_toploc_ref_modulus(const uint64_t *idx, size_t k);
int engy_toploc_ref_interpolate(const uint32_t *x, const uint16_t *y, size_t k,
				uint16_t *coeffs);
uint32_t engy_toploc_ref_eval(const uint16_t *coeffs, size_t k, uint64_t x);
int engy_toploc_ref_prove_chunk(const uint16_t *v, size_t n, size_t k,
				uint8_t *proof);
/* Proof layout is trusted here: callers pass well-formed proofs. */
int engy_toploc_ref_verify_chunk(const uint16_t *v, size_t n, size_t k,
				 const uint8_t *proof,
				 struct engy_toploc_stats *st);

#endif /* ENGY_TOPLOC_REF_H */
