/* SPDX-License-Identifier: MIT */
/*
 * lib/safetensors: the reader against hand-built files (every refusal
 * names its reason), the writer round trip, the dtype conversions over
 * all bit patterns against their formulas, and the FP8 / INT4 layouts.
 *
 * Oracle: files built by hand from the safetensors format and dtype
 * formulas (independent of the reader); the writer round trip is self-
 * consistency.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "halfconv.h"
#include "safetensors.h"

static char err[512];

/* A file from a header text and a buffer of @blen bytes (0x11 filled). */
static uint8_t *mkfile(const char *hdr, size_t blen, size_t *len)
{
	size_t h = strlen(hdr), i;
	uint8_t *b = malloc(8 + h + blen + 1);

	ck_assert_ptr_nonnull(b);
	for (i = 0; i < 8; i++)
		b[i] = (uint8_t)((uint64_t)h >> (8 * i));
	memcpy(b + 8, hdr, h);
	memset(b + 8 + h, 0x11, blen);
	*len = 8 + h + blen;
	return b;
}

static int try_parse(const char *hdr, size_t blen, struct engy_st **st)
{
	size_t len;
	uint8_t *b = mkfile(hdr, blen, &len);
	int rc;

	err[0] = '\0';
	rc = engy_st_parse(b, len, st, err, sizeof(err));
	if (rc == 0) {
		engy_st_close(*st);
		*st = NULL;
	}
	free(b);
	return rc;
}

/* The file must be refused, and the reason must contain @needle. */
static void refused(const char *hdr, size_t blen, const char *needle)
{
	struct engy_st *st = NULL;

	ck_assert_int_eq(try_parse(hdr, blen, &st), -EINVAL);
	ck_assert_ptr_null(st);
	ck_assert_msg(strstr(err, needle), "reason '%s' lacks '%s' (%s)", err,
		      needle, hdr);
}

START_TEST(test_valid)
{
	const char *hdr =
		"{\"__metadata__\":{\"format\":\"pt\"},"
		"\"b\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[4,28]},"
		"\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]},"
		"\"z\":{\"dtype\":\"U8\",\"shape\":[0,5],\"data_offsets\":[28,28]},"
		"\"s\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[28,30]}}   ";
	const struct engy_st_tensor *t;
	struct engy_st *st;
	size_t len;
	uint8_t *b = mkfile(hdr, 30, &len);

	ck_assert_int_eq(engy_st_parse(b, len, &st, err, sizeof(err)), 0);
	ck_assert_uint_eq(engy_st_count(st), 4);
	/* In data order. */
	ck_assert_str_eq(engy_st_at(st, 0)->name, "a");
	ck_assert_str_eq(engy_st_at(st, 1)->name, "b");
	ck_assert_ptr_null(engy_st_at(st, 4));
	t = engy_st_find(st, "b");
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->dtype, ENGY_ST_F32);
	ck_assert_uint_eq(t->ndim, 2);
	ck_assert_uint_eq(t->shape[0], 2);
	ck_assert_uint_eq(t->shape[1], 3);
	ck_assert_uint_eq(t->numel, 6);
	ck_assert_uint_eq(t->nbytes, 24);
	ck_assert_ptr_eq(t->data, b + len - 30 + 4);
	t = engy_st_find(st, "z");
	ck_assert_uint_eq(t->numel, 0);
	t = engy_st_find(st, "s");
	ck_assert_uint_eq(t->ndim, 0);
	ck_assert_uint_eq(t->numel, 1);
	ck_assert_ptr_null(engy_st_find(st, "nope"));
	ck_assert_str_eq(engy_st_metadata(st, "format"), "pt");
	ck_assert_ptr_null(engy_st_metadata(st, "other"));
	engy_st_close(st);
	free(b);
}
END_TEST

START_TEST(test_refusals)
{
	struct engy_st *st;
	uint8_t b[16] = { 0 };

	/* Length prefix and header framing. */
	ck_assert_int_eq(engy_st_parse(b, 5, &st, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "truncated"));
	b[0] = 0xFF;
	b[1] = 0xFF;
	b[2] = 0xFF;
	b[3] = 0x7F;
	ck_assert_int_eq(engy_st_parse(b, 16, &st, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "over the"));
	memset(b, 0, sizeof(b));
	b[0] = 200;
	ck_assert_int_eq(engy_st_parse(b, 16, &st, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(
		strstr(err, "header is 200 bytes but only 8 follow"));

	refused("[1,2]", 0, "does not start with '{'");
	refused("{\"a\":", 0, "not a JSON object");
	refused("{} x", 0, "bytes after its JSON object");
	refused("{\"\xC3\x28\":1}", 0, "not valid UTF-8");
	refused("{\"a\x01\":1}", 0, "not valid UTF-8");
	refused("{\"\xED\xA0\x80\":1}", 0, "not valid UTF-8"); /* surrogate */
	refused("{\"a\":1}", 0, "tensor 'a' is not an object");
	refused("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
		"no dtype");
	refused("{\"a\":{\"dtype\":\"Q9\",\"shape\":[1],\"data_offsets\":[0,4]}}",
		4, "unknown dtype 'Q9'");
	refused("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4,
		"no shape");
	refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}",
		4, "shape[0] is not a non-negative integer");
	refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}",
		4, "shape[0]");
	refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],"
		"\"data_offsets\":[0,4]}}",
		4, "more than 8 dimensions");
	refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
		"\"data_offsets\":[0,4]}}",
		4, "overflows");
	refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}",
		4, "data_offsets is not [begin, end]");
	refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}",
		4, "end 0 is before begin 4");
	/* Byte size must be elements x dtype size: a lying shape. */
	refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}",
		4, "span 4 bytes but F32 x 2 elements need 8");
	/* Offsets past the buffer, holes, overlaps, leftovers. */
	refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
		4, "truncated: tensor 'a' ends at byte 8 of a 4-byte buffer");
	refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}",
		4, "starts at 2 but the previous data ends at 0 (hole)");
	refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
		"\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}",
		4, "(overlap)");
	refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}",
		4, "the buffer holds 4 bytes but the tensors cover 2");
	refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
		"\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}",
		4, "tensor 'a' is given twice");
	refused("{\"__metadata__\":{\"k\":1}}", 0,
		"__metadata__ 'k' is not a string");
	refused("{\"__metadata__\":[]}", 0, "__metadata__ is not an object");
	refused("{\"\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
		1, "empty name");
	refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1e400]}}",
		1, "data_offsets");
}
END_TEST

START_TEST(test_open_and_writer)
{
	char path[] = "/tmp/engy-st-XXXXXX";
	struct engy_st_writer *w = engy_st_writer_new();
	const struct engy_st_tensor *t;
	uint64_t shape[2] = { 2, 3 };
	float *a = malloc(6 * sizeof(float)), out[6];
	uint16_t *h = malloc(4);
	struct engy_st *st;
	int fd = mkstemp(path), i;
	FILE *f;
	long size;

	ck_assert_int_ge(fd, 0);
	close(fd);
	for (i = 0; i < 6; i++)
		a[i] = (float)i - 2.5f;
	h[0] = engy_bf16_from_f32(1.5f);
	h[1] = engy_bf16_from_f32(-3.0f);
	ck_assert_int_eq(engy_st_writer_meta(w, "format", "pt"), 0);
	ck_assert_int_eq(engy_st_writer_add_take(w, "w.weight", ENGY_ST_F32, 2,
						 shape, a, 24),
			 0);
	ck_assert_int_eq(engy_st_writer_add_take(w, "n\"q", ENGY_ST_BF16, 1,
						 shape + 1, h, 4),
			 -EINVAL); /* 3 elements != 4 bytes */
	h = malloc(4);
	h[0] = engy_bf16_from_f32(1.5f);
	h[1] = engy_bf16_from_f32(-3.0f);
	shape[1] = 2;
	ck_assert_int_eq(engy_st_writer_add_take(w, "n\"q", ENGY_ST_BF16, 1,
						 shape + 1, h, 4),
			 0);
	ck_assert_int_eq(engy_st_writer_add_take(w, "w.weight", ENGY_ST_U8, 1,
						 shape, malloc(2), 2),
			 -EINVAL); /* duplicate */
	ck_assert_int_eq(engy_st_writer_save(w, path), 0);
	engy_st_writer_free(w);

	f = fopen(path, "rb");
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fclose(f);
	/* The header is padded so the buffer starts 8-aligned. */
	ck_assert_int_eq((size - 28) % 8, 0);
	ck_assert_int_eq(engy_st_open(path, &st, err, sizeof(err)), 0);
	t = engy_st_find(st, "w.weight");
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(engy_st_to_f32(t, out), 0);
	for (i = 0; i < 6; i++)
		ck_assert_float_eq(out[i], (float)i - 2.5f);
	t = engy_st_find(st, "n\"q");
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(engy_st_to_f32(t, out), 0);
	ck_assert_float_eq(out[0], 1.5f);
	ck_assert_float_eq(out[1], -3.0f);
	ck_assert_str_eq(engy_st_metadata(st, "format"), "pt");
	engy_st_close(st);

	/* Truncate the file: the open names the path and the reason. */
	ck_assert_int_eq(truncate(path, size - 1), 0);
	ck_assert_int_eq(engy_st_open(path, &st, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, path));
	ck_assert_ptr_nonnull(strstr(err, "truncated"));
	unlink(path);
	ck_assert_int_eq(engy_st_open(path, &st, err, sizeof(err)), -ENOENT);
}
END_TEST

/* binary16 by its definition, in double. */
static double f16_formula(uint16_t h)
{
	int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
	double v;

	if (e == 31)
		return m ? NAN : (s ? -INFINITY : INFINITY);
	v = e ? ldexp(1 + m / 1024.0, e - 15) : ldexp(m / 1024.0, -14);
	return s ? -v : v;
}

START_TEST(test_f16_all)
{
	uint32_t h;

	for (h = 0; h < 65536; h++) {
		double want = f16_formula((uint16_t)h);
		float got = engy_f16_to_f32((uint16_t)h);

		if (isnan(want)) {
			ck_assert(isnan(got));
			continue;
		}
		ck_assert_msg((double)got == want, "f16 %04x", h);
		/* Narrowing back is exact for every representable value. */
		ck_assert_uint_eq(engy_f16_from_f32(got), h);
	}
	/* Round to nearest even between neighbours, and overflow. */
	ck_assert_uint_eq(engy_f16_from_f32(1.0f + 0x1p-11f),
			  0x3C00); /* tie -> even */
	ck_assert_uint_eq(engy_f16_from_f32(1.0f + 3 * 0x1p-11f), 0x3C02);
	ck_assert_uint_eq(engy_f16_from_f32(65520.0f), 0x7C00);
	ck_assert_uint_eq(engy_f16_from_f32(65519.0f), 0x7BFF);
	ck_assert_uint_eq(engy_f16_from_f32(0x1p-25f), 0); /* tie -> 0 */
	ck_assert_uint_eq(engy_f16_from_f32(0x1.8p-25f), 1);
}
END_TEST

START_TEST(test_f8_all)
{
	int b;

	for (b = 0; b < 256; b++) {
		int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
		double want;
		float got = engy_f8e4m3_to_f32((uint8_t)b);

		if (e == 15 && m == 7) {
			ck_assert(isnan(got));
			continue;
		}
		want = e ? ldexp(1 + m / 8.0, e - 7) : ldexp(m / 8.0, -6);
		want = s ? -want : want;
		ck_assert_msg((double)got == want, "e4m3 %02x", b);
		ck_assert_uint_eq(engy_f8e4m3_from_f32(got) &
					  (want == 0 ? 0x7F : 0xFF),
				  (unsigned)b & (want == 0 ? 0x7F : 0xFF));
		/* E5M2 is the top byte of binary16. */
		ck_assert((double)engy_f8e5m2_to_f32((uint8_t)b) ==
				  f16_formula((uint16_t)(b << 8)) ||
			  isnan(engy_f8e5m2_to_f32((uint8_t)b)));
	}
	ck_assert_float_eq(engy_f8e4m3_to_f32(0x7E), 448.0f);
	ck_assert_uint_eq(engy_f8e4m3_from_f32(1000.0f), 0x7E); /* saturates */
	ck_assert_uint_eq(engy_f8e4m3_from_f32(-1000.0f), 0xFE);
	ck_assert_uint_eq(engy_f8e4m3_from_f32(1.0625f),
			  0x38); /* tie -> even */
	ck_assert_uint_eq(engy_f8e4m3_from_f32(1.1875f), 0x3A);
}
END_TEST

static struct engy_st_tensor tens(const char *name, int dtype, uint64_t r,
				  uint64_t c, const void *data)
{
	struct engy_st_tensor t = { .name = name,
				    .dtype = dtype,
				    .ndim = 2,
				    .shape = { r, c },
				    .numel = r * c,
				    .data = data };

	t.nbytes = t.numel * engy_st_dtype_size(dtype);
	return t;
}

START_TEST(test_int4)
{
	enum { R = 3, C = 8, G = 4 };
	float w[R * C], back[R * C];
	uint8_t q[R * C / 2];
	uint16_t s[R * C / G];
	struct engy_st_tensor tq, ts;
	uint64_t cols;
	int i;

	for (i = 0; i < R * C; i++)
		w[i] = (float)((i * 37) % 17) / 4.0f - 2.0f;
	engy_st_quant_int4(w, R, C, G, q, s);
	tq = tens("x.qweight", ENGY_ST_U8, R, C / 2, q);
	ts = tens("x.scales", ENGY_ST_F16, R, C / G, s);
	ck_assert_int_eq(engy_st_dequant_int4(&tq, &ts, G, back, &cols, err,
					      sizeof(err)),
			 0);
	ck_assert_uint_eq(cols, C);
	for (i = 0; i < R * C; i++) {
		float sc = engy_f16_to_f32(s[(i / C) * (C / G) + (i % C) / G]);
		int u = (i % 2) ? q[i / 2] >> 4 : q[i / 2] & 15;

		/* The layout: low nibble = even column, value u - 8. */
		ck_assert_float_eq(back[i], (float)(u - 8) * sc);
		/* Quantization error is at most half a step. */
		ck_assert_msg(fabsf(back[i] - w[i]) <= sc / 2 + 1e-6f,
			      "elem %d: %g vs %g (scale %g)", i, back[i], w[i],
			      sc);
	}
	/* Known bytes: u = 0x9 (q=1) low, 0x7 (q=-1) high, scale 2. */
	q[0] = 0x79;
	s[0] = engy_f16_from_f32(2.0f);
	ck_assert_int_eq(
		engy_st_dequant_int4(&tq, &ts, G, back, NULL, err, sizeof(err)),
		0);
	ck_assert_float_eq(back[0], 2.0f);
	ck_assert_float_eq(back[1], -2.0f);
	/* Mismatched shapes and dtypes are refused with the tensor's name. */
	ts.shape[0] = R + 1;
	ck_assert_int_eq(
		engy_st_dequant_int4(&tq, &ts, G, back, NULL, err, sizeof(err)),
		-EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "x.qweight"));
	ts.shape[0] = R;
	tq.dtype = ENGY_ST_I8;
	ck_assert_int_eq(
		engy_st_dequant_int4(&tq, &ts, G, back, NULL, err, sizeof(err)),
		-EINVAL);
}
END_TEST

START_TEST(test_fp8_blocks)
{
	enum { R = 130, C = 3 }; /* two row blocks, one partial */
	float w[R * C], back[R * C], sc[2];
	uint8_t q[R * C];
	struct engy_st_tensor tw, ts;
	int i;

	for (i = 0; i < R * C; i++)
		w[i] = (i < 128 * C ? 1.0f : 100.0f) * sinf((float)i);
	engy_st_quant_fp8(w, R, C, 128, q, sc);
	tw = tens("y.weight", ENGY_ST_F8_E4M3, R, C, q);
	ts = tens("y.weight_scale_inv", ENGY_ST_F32, 2, 1, sc);
	ck_assert_int_eq(
		engy_st_dequant_fp8(&tw, &ts, 128, back, err, sizeof(err)), 0);
	for (i = 0; i < R * C; i++) {
		/* Each value is its fp8 code times its block's scale, and
		 * within e4m3's relative precision of the original. */
		ck_assert_float_eq(back[i], engy_f8e4m3_to_f32(q[i]) *
						    sc[i / (128 * C)]);
		ck_assert_msg(fabsf(back[i] - w[i]) <=
				      fabsf(w[i]) / 16 +
					      sc[i / (128 * C)] * 0x1p-9f,
			      "elem %d", i);
	}
	ck_assert(sc[1] > 50 * sc[0]);
	ts.shape[0] = 1;
	ck_assert_int_eq(
		engy_st_dequant_fp8(&tw, &ts, 128, back, err, sizeof(err)),
		-EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "y.weight_scale_inv"));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("safetensors");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_valid);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_open_and_writer);
	tcase_add_test(tc, test_f16_all);
	tcase_add_test(tc, test_f8_all);
	tcase_add_test(tc, test_int4);
	tcase_add_test(tc, test_fp8_blocks);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
