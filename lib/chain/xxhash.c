/* SPDX-License-Identifier: MIT */
/* XXH64 as specified by Yann Collet's xxHash format (64-bit variant). */
#include <string.h>

#include <sodium.h>

#include "xxhash.h"

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static uint64_t rotl(uint64_t x, int r)
{
	return x << r | x >> (64 - r);
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t round1(uint64_t acc, uint64_t in)
{
	acc += in * P2;
	acc = rotl(acc, 31);
	return acc * P1;
}

static uint64_t merge(uint64_t acc, uint64_t v)
{
	acc ^= round1(0, v);
	return acc * P1 + P4;
}

uint64_t engy_xxh64(const void *data, size_t n, uint64_t seed)
{
	const uint8_t *p = data, *end = p + n;
	uint64_t h;

	if (n >= 32) {
		uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed,
			 v4 = seed - P1;

		do {
			v1 = round1(v1, rd64(p));
			v2 = round1(v2, rd64(p + 8));
			v3 = round1(v3, rd64(p + 16));
			v4 = round1(v4, rd64(p + 24));
			p += 32;
		} while (end - p >= 32);
		h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
		h = merge(h, v1);
		h = merge(h, v2);
		h = merge(h, v3);
		h = merge(h, v4);
	} else {
		h = seed + P5;
	}
	h += (uint64_t)n;
	while (end - p >= 8) {
		h ^= round1(0, rd64(p));
		h = rotl(h, 27) * P1 + P4;
		p += 8;
	}
	if (end - p >= 4) {
		h ^= (uint64_t)rd32(p) * P1;
		h = rotl(h, 23) * P2 + P3;
		p += 4;
	}
	while (p < end) {
		h ^= (uint64_t)*p++ * P5;
		h = rotl(h, 11) * P1;
	}
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	h ^= h >> 32;
	return h;
}

static void twox(uint8_t *out, size_t words, const void *p, size_t n)
{
	size_t i, j;

	for (i = 0; i < words; i++) {
		uint64_t h = engy_xxh64(p, n, i);

		for (j = 0; j < 8; j++)
			out[8 * i + j] = (uint8_t)(h >> (8 * j));
	}
}

void engy_twox64(uint8_t out[8], const void *p, size_t n)
{
	twox(out, 1, p, n);
}

void engy_twox128(uint8_t out[16], const void *p, size_t n)
{
	twox(out, 2, p, n);
}

void engy_twox256(uint8_t out[32], const void *p, size_t n)
{
	twox(out, 4, p, n);
}

void engy_blake2_128(uint8_t out[16], const void *p, size_t n)
{
	crypto_generichash(out, 16, p, n, NULL, 0);
}

void engy_blake2_256(uint8_t out[32], const void *p, size_t n)
{
	crypto_generichash(out, 32, p, n, NULL, 0);
}
