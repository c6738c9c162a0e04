/* SPDX-License-Identifier: MIT */
/*
 * The hashes of Substrate storage keys: xxHash64 (XXH64, seeded) and its
 * "twox" concatenations, and BLAKE2b (libsodium) at 128 and 256 bits.
 *   twox64(x)  = XXH64(x, 0) as 8 little-endian bytes
 *   twox128(x) = XXH64(x, 0) || XXH64(x, 1)
 *   twox256(x) = XXH64(x, 0..3)
 */
#ifndef ENGY_XXHASH_H
#define ENGY_XXHASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t engy_xxh64(const void *p, size_t n, uint64_t seed);
void engy_twox64(uint8_t out[8], const void *p, size_t n);
void engy_twox128(uint8_t out[16], const void *p, size_t n);
void engy_twox256(uint8_t out[32], const void *p, size_t n);
void engy_blake2_128(uint8_t out[16], const void *p, size_t n);
void engy_blake2_256(uint8_t out[32], const void *p, size_t n);

#endif /* ENGY_XXHASH_H */
