/* SPDX-License-Identifier: MIT */
/*
 * The websocket frame codec: RFC 6455's own example frames, every
 * protocol error with its close code, UTF-8 checks across fragments,
 * size limits, and builder/parser round trips at every split point.
 *
 * Oracle: independent: RFC 6455's example frames; builder/parser round
 * trips are self-consistency.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ws_frame.h"

#define MAXEV 64

struct got {
	int n;
	int type[MAXEV], opcode[MAXEV], code[MAXEV];
	size_t len[MAXEV];
	uint8_t *data[MAXEV];
	int rc; /* 0, or the error that ended the stream */
};

static void got_free(struct got *g)
{
	int i;

	for (i = 0; i < g->n; i++)
		free(g->data[i]);
	memset(g, 0, sizeof(*g));
}

/* Feed @len bytes @step at a time; collect events until an error. */
static void feed(struct engy_ws_parser *p, const uint8_t *buf, size_t len,
		 size_t step, struct got *g)
{
	size_t off = 0, used, chunk;
	struct engy_ws_event ev;
	int rc;

	while (off < len) {
		chunk = len - off < step ? len - off : step;
		rc = engy_ws_parse(p, buf + off, chunk, &used, &ev);
		ck_assert_uint_le(used, chunk);
		off += used;
		if (rc < 0) {
			g->rc = rc;
			return;
		}
		if (rc == 0) {
			ck_assert_uint_eq(used, chunk);
			continue;
		}
		ck_assert_int_lt(g->n, MAXEV);
		g->type[g->n] = ev.type;
		g->opcode[g->n] = ev.opcode;
		g->code[g->n] = ev.code;
		g->len[g->n] = ev.len;
		g->data[g->n] = malloc(ev.len + 1);
		memcpy(g->data[g->n], ev.data, ev.len);
		g->n++;
	}
}

static void run(bool server, size_t max, const uint8_t *buf, size_t len,
		struct got *g)
{
	struct engy_ws_parser p;

	memset(g, 0, sizeof(*g));
	engy_ws_parser_init(&p, server, max);
	feed(&p, buf, len, len ? len : 1, g);
	engy_ws_parser_free(&p);
}

/* The stream must fail with @rc and close code @code. */
static void expect_fail(bool server, const uint8_t *buf, size_t len, int rc,
			int code, size_t max)
{
	struct engy_ws_parser p;
	struct got g = { 0 };
	struct engy_ws_event ev;
	size_t used;

	engy_ws_parser_init(&p, server, max);
	feed(&p, buf, len, len, &g);
	ck_assert_int_eq(g.rc, rc);
	ck_assert_int_eq(p.fail_code, code);
	ck_assert_ptr_nonnull(p.fail_reason);
	/* Sticky: a broken stream stays broken. */
	ck_assert_int_eq(
		engy_ws_parse(&p, (const uint8_t *)"\x81\x00", 2, &used, &ev),
		rc);
	ck_assert_uint_eq(used, 0);
	got_free(&g);
	engy_ws_parser_free(&p);
}

#define B(...) ((const uint8_t[]){ __VA_ARGS__ })
#define N(...) sizeof((const uint8_t[]){ __VA_ARGS__ })
#define FAIL(server, rc, code, ...)                                            \
	expect_fail(server, B(__VA_ARGS__), N(__VA_ARGS__), rc, code, 1 << 20)

START_TEST(test_rfc_examples)
{
	static const uint8_t hello_masked[] = { 0x81, 0x85, 0x37, 0xfa,
						0x21, 0x3d, 0x7f, 0x9f,
						0x4d, 0x51, 0x58 };
	static const uint8_t frag[] = { 0x01, 0x03, 0x48, 0x65, 0x6c,
					0x80, 0x02, 0x6c, 0x6f };
	static const uint8_t ping[] = { 0x89, 0x05, 'H', 'e', 'l', 'l', 'o' };
	static const uint8_t pong_masked[] = { 0x8a, 0x85, 0x37, 0xfa,
					       0x21, 0x3d, 0x7f, 0x9f,
					       0x4d, 0x51, 0x58 };
	uint8_t big[4 + 256], huge[10 + 65536];
	struct got g;

	/* §5.7: a single-frame unmasked text message, as a client sees it. */
	run(false, 1 << 20, B(0x81, 0x05, 'H', 'e', 'l', 'l', 'o'), 7, &g);
	ck_assert_int_eq(g.rc, 0);
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(g.type[0], ENGY_WS_EV_MESSAGE);
	ck_assert_int_eq(g.opcode[0], ENGY_WS_OP_TEXT);
	ck_assert_mem_eq(g.data[0], "Hello", 5);
	got_free(&g);
	/* The masked one, as a server sees it. */
	run(true, 1 << 20, hello_masked, sizeof(hello_masked), &g);
	ck_assert_int_eq(g.n, 1);
	ck_assert_uint_eq(g.len[0], 5);
	ck_assert_mem_eq(g.data[0], "Hello", 5);
	got_free(&g);
	/* Fragmented: one message. */
	run(false, 1 << 20, frag, sizeof(frag), &g);
	ck_assert_int_eq(g.n, 1);
	ck_assert_uint_eq(g.len[0], 5);
	ck_assert_mem_eq(g.data[0], "Hello", 5);
	got_free(&g);
	run(false, 1 << 20, ping, sizeof(ping), &g);
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(g.type[0], ENGY_WS_EV_PING);
	ck_assert_mem_eq(g.data[0], "Hello", 5);
	got_free(&g);
	run(true, 1 << 20, pong_masked, sizeof(pong_masked), &g);
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(g.type[0], ENGY_WS_EV_PONG);
	ck_assert_mem_eq(g.data[0], "Hello", 5);
	got_free(&g);
	/* 256 bytes binary (16-bit length), 64 KiB (64-bit length). */
	memcpy(big, B(0x82, 0x7e, 0x01, 0x00), 4);
	memset(big + 4, 0xab, 256);
	run(false, 1 << 20, big, sizeof(big), &g);
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(g.opcode[0], ENGY_WS_OP_BINARY);
	ck_assert_uint_eq(g.len[0], 256);
	ck_assert_int_eq(g.data[0][255], 0xab);
	got_free(&g);
	memcpy(huge, B(0x82, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0), 10);
	memset(huge + 10, 0x5a, 65536);
	run(false, 1 << 20, huge, sizeof(huge), &g);
	ck_assert_int_eq(g.n, 1);
	ck_assert_uint_eq(g.len[0], 65536);
	ck_assert_int_eq(g.data[0][65535], 0x5a);
	got_free(&g);
}
END_TEST

START_TEST(test_control_between_fragments)
{
	/* text "Hel" (not final), ping "x", pong "", cont "lo" (final) */
	static const uint8_t s[] = { 0x01, 0x03, 'H',  'e',  'l',  0x89,
				     0x01, 'x',	 0x8a, 0x00, 0x80, 0x02,
				     'l',  'o',	 0x82, 0x00 };
	struct engy_ws_parser p;
	struct got g = { 0 };
	size_t step;

	for (step = 1; step <= sizeof(s); step++) {
		engy_ws_parser_init(&p, false, 1 << 20);
		feed(&p, s, sizeof(s), step, &g);
		ck_assert_int_eq(g.rc, 0);
		ck_assert_int_eq(g.n, 4);
		ck_assert_int_eq(g.type[0], ENGY_WS_EV_PING);
		ck_assert_mem_eq(g.data[0], "x", 1);
		ck_assert_int_eq(g.type[1], ENGY_WS_EV_PONG);
		ck_assert_uint_eq(g.len[1], 0);
		ck_assert_int_eq(g.type[2], ENGY_WS_EV_MESSAGE);
		ck_assert_int_eq(g.opcode[2], ENGY_WS_OP_TEXT);
		ck_assert_uint_eq(g.len[2], 5);
		ck_assert_mem_eq(g.data[2], "Hello", 5);
		/* an empty binary message after it */
		ck_assert_int_eq(g.opcode[3], ENGY_WS_OP_BINARY);
		ck_assert_uint_eq(g.len[3], 0);
		got_free(&g);
		engy_ws_parser_free(&p);
	}
}
END_TEST

START_TEST(test_protocol_errors)
{
	FAIL(false, -EPROTO, 1002, 0xc1, 0x00); /* RSV1 */
	FAIL(false, -EPROTO, 1002, 0xa1, 0x00); /* RSV2 */
	FAIL(false, -EPROTO, 1002, 0x91, 0x00); /* RSV3 */
	FAIL(false, -EPROTO, 1002, 0x83, 0x00); /* reserved data opcode */
	FAIL(false, -EPROTO, 1002, 0x8b, 0x00); /* reserved control opcode */
	FAIL(false, -EPROTO, 1002, 0x09, 0x00); /* fragmented ping */
	FAIL(false, -EPROTO, 1002, 0x89, 0x7e, 0x00, 0x7e); /* ping > 125 */
	FAIL(false, -EPROTO, 1002, 0x80, 0x00); /* continuation, no message */
	FAIL(false, -EPROTO, 1002, 0x01, 0x00, 0x81, 0x00); /* text in text */
	FAIL(false, -EPROTO, 1002, 0x02, 0x00, 0x82, 0x00);
	FAIL(false, -EPROTO, 1002, 0x81, 0x7e, 0x00, 0x05); /* not minimal */
	FAIL(false, -EPROTO, 1002, 0x82, 0x7f, 0, 0, 0, 0, 0, 0, 0xff, 0xff);
	FAIL(false, -EPROTO, 1002, 0x82, 0x7f, 0x80, 0, 0, 0, 0, 0, 0, 0);
	/* masking rules per side */
	FAIL(true, -EPROTO, 1002, 0x81, 0x00);
	FAIL(false, -EPROTO, 1002, 0x81, 0x80, 1, 2, 3, 4);
	/* close frames: one byte, invalid codes */
	FAIL(false, -EPROTO, 1002, 0x88, 0x01, 0x03);
	FAIL(false, -EPROTO, 1002, 0x88, 0x02, 0x03, 0xe7); /* 999 */
	FAIL(false, -EPROTO, 1002, 0x88, 0x02, 0x03, 0xec); /* 1004 */
	FAIL(false, -EPROTO, 1002, 0x88, 0x02, 0x03, 0xed); /* 1005 */
	FAIL(false, -EPROTO, 1002, 0x88, 0x02, 0x03, 0xee); /* 1006 */
	FAIL(false, -EPROTO, 1002, 0x88, 0x02, 0x03, 0xf7); /* 1015 */
	FAIL(false, -EPROTO, 1002, 0x88, 0x02, 0x07, 0xd0); /* 2000 */
	FAIL(false, -EPROTO, 1002, 0x88, 0x02, 0x13, 0x88); /* 5000 */
	FAIL(false, -EILSEQ, 1007, 0x88, 0x04, 0x03, 0xe8, 0xc0, 0x80);
}
END_TEST

START_TEST(test_close_frames)
{
	static const int ok[] = { 1000, 1001, 1002, 1003, 1007, 1008,
				  1009, 1010, 1011, 1012, 1013, 1014,
				  3000, 3999, 4000, 4999 };
	uint8_t f[4];
	struct got g;
	size_t i;

	run(false, 1 << 20, B(0x88, 0x00), 2, &g);
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(g.type[0], ENGY_WS_EV_CLOSE);
	ck_assert_int_eq(g.code[0], 1005);
	ck_assert_uint_eq(g.len[0], 0);
	got_free(&g);
	run(false, 1 << 20, B(0x88, 0x05, 0x0f, 0xa0, 'b', 'y', 'e'), 7, &g);
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(g.code[0], 4000);
	ck_assert_uint_eq(g.len[0], 3);
	ck_assert_mem_eq(g.data[0], "bye", 3);
	got_free(&g);
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		f[0] = 0x88;
		f[1] = 2;
		f[2] = (uint8_t)(ok[i] >> 8);
		f[3] = (uint8_t)ok[i];
		run(false, 1 << 20, f, 4, &g);
		ck_assert_int_eq(g.rc, 0);
		ck_assert_int_eq(g.code[0], ok[i]);
		got_free(&g);
		ck_assert(engy_ws_close_code_valid(ok[i]));
	}
}
END_TEST

START_TEST(test_utf8)
{
	static const char *const good[] = {
		"",
		"plain",
		"\xc2\xa9",
		"\xe2\x82\xac",
		"\xf0\x9f\x98\x80",
		"\xed\x9f\xbf",
		"\xee\x80\x80",
		"\xf4\x8f\xbf\xbf",
		"mixed \xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5 text 12345678",
	};
	static const char *const bad[] = {
		"\x80",
		"\xc0\x80",
		"\xc1\xbf",
		"\xe0\x80\x80",
		"\xed\xa0\x80",
		"\xf4\x90\x80\x80",
		"\xf5\x80\x80\x80",
		"\xff",
		"\xc2",
		"\xe2\x82",
		"abcdefgh\xf0\x9f\x98",
		"abcdefghijklmnop\xfe",
	};
	struct engy_utf8 u;
	size_t i, cut, n;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		n = strlen(good[i]);
		ck_assert_msg(engy_utf8_valid((const uint8_t *)good[i], n),
			      "good %zu", i);
		for (cut = 0; cut <= n; cut++) {
			memset(&u, 0, sizeof(u));
			ck_assert(engy_utf8_feed(&u, (const uint8_t *)good[i],
						 cut));
			ck_assert(engy_utf8_feed(
				&u, (const uint8_t *)good[i] + cut, n - cut));
			ck_assert(engy_utf8_finished(&u));
		}
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!engy_utf8_valid((const uint8_t *)bad[i],
					       strlen(bad[i])),
			      "bad %zu", i);
}
END_TEST

START_TEST(test_text_validation)
{
	struct engy_ws_parser p;
	struct got g = { 0 };

	/* A euro sign split across two fragments is fine. */
	run(false, 1 << 20, B(0x01, 0x01, 0xe2, 0x80, 0x02, 0x82, 0xac), 7, &g);
	ck_assert_int_eq(g.rc, 0);
	ck_assert_int_eq(g.n, 1);
	ck_assert_mem_eq(g.data[0], "\xe2\x82\xac", 3);
	got_free(&g);
	/* Binary is never checked. */
	run(false, 1 << 20, B(0x82, 0x02, 0xff, 0xfe), 4, &g);
	ck_assert_int_eq(g.rc, 0);
	ck_assert_int_eq(g.n, 1);
	got_free(&g);
	/* Fail fast: a bad byte in the first fragment fails at once. */
	engy_ws_parser_init(&p, false, 1 << 20);
	feed(&p, B(0x01, 0x02, 'a', 0xff), 4, 4, &g);
	ck_assert_int_eq(g.rc, -EILSEQ);
	ck_assert_int_eq(p.fail_code, 1007);
	engy_ws_parser_free(&p);
	got_free(&g);
	/* A message that ends inside a sequence. */
	FAIL(false, -EILSEQ, 1007, 0x81, 0x02, 'a', 0xe2);
	FAIL(false, -EILSEQ, 1007, 0x01, 0x01, 0xe2, 0x80, 0x01, 0x82);
	/* Surrogates and overlongs. */
	FAIL(false, -EILSEQ, 1007, 0x81, 0x03, 0xed, 0xa0, 0x80);
	FAIL(false, -EILSEQ, 1007, 0x81, 0x02, 0xc0, 0xaf);
}
END_TEST

START_TEST(test_max_message)
{
	struct engy_ws_parser p;
	struct got g = { 0 };

	/* A claimed length over the limit fails before any payload. */
	expect_fail(false, B(0x82, 0x7f, 0, 0, 0, 1, 0, 0, 0, 0), 10, -EMSGSIZE,
		    1009, 1 << 20);
	/* Exactly at the limit passes; fragments over it fail. */
	run(false, 4, B(0x82, 0x04, 1, 2, 3, 4), 6, &g);
	ck_assert_int_eq(g.rc, 0);
	ck_assert_int_eq(g.n, 1);
	got_free(&g);
	expect_fail(false, B(0x02, 0x03, 1, 2, 3, 0x80, 0x02, 4, 5), 9,
		    -EMSGSIZE, 1009, 4);
	/* Control frames do not count against it. */
	run(false, 4, B(0x89, 0x05, 1, 2, 3, 4, 5), 7, &g);
	ck_assert_int_eq(g.rc, 0);
	ck_assert_int_eq(g.type[0], ENGY_WS_EV_PING);
	got_free(&g);
	/* A large message's buffer is released once the next call comes. */
	engy_ws_parser_init(&p, false, 1 << 22);
	{
		static uint8_t big[10 + (1 << 20)];

		memcpy(big, B(0x82, 0x7f, 0, 0, 0, 0, 0, 0x10, 0, 0), 10);
		feed(&p, big, sizeof(big), 4096, &g);
	}
	ck_assert_int_eq(g.n, 1);
	ck_assert_uint_eq(g.len[0], 1 << 20);
	ck_assert_uint_ge(p.msg_cap, 1 << 20);
	feed(&p, B(0x81, 0x01, 'a'), 3, 3, &g);
	ck_assert_int_eq(g.n, 2);
	ck_assert_uint_lt(p.msg_cap, 1 << 20);
	engy_ws_parser_free(&p);
	got_free(&g);
}
END_TEST

START_TEST(test_mask)
{
	static const uint8_t key[4] = { 0x37, 0xfa, 0x21, 0x3d };
	uint8_t src[100], a[100], b[100];
	size_t i, cut;

	for (i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 3);
	engy_ws_mask(a, src, sizeof(src), key, 0);
	for (i = 0; i < sizeof(src); i++)
		ck_assert_int_eq(a[i], src[i] ^ key[i % 4]);
	for (cut = 0; cut <= sizeof(src); cut++) {
		engy_ws_mask(b, src, cut, key, 0);
		engy_ws_mask(b + cut, src + cut, sizeof(src) - cut, key, cut);
		ck_assert_mem_eq(a, b, sizeof(a));
	}
	engy_ws_mask(b, a, sizeof(a), key, 0); /* in place, involution */
	ck_assert_mem_eq(b, src, sizeof(src));
}
END_TEST

START_TEST(test_builder)
{
	static const uint64_t lens[] = { 0, 1, 125, 126, 65535, 65536, 70000 };
	static const uint8_t key[4] = { 1, 2, 3, 4 };
	uint8_t hdr[ENGY_WS_HEADER_MAX], *frame, *payload;
	struct engy_ws_parser p;
	struct got g = { 0 };
	size_t i, n, steps[] = { 1, 7, 4096, 1 << 20 }, s;

	ck_assert_uint_eq(engy_ws_frame_header(hdr, true, 1, 5, NULL), 2);
	ck_assert_mem_eq(hdr, B(0x81, 0x05), 2);
	ck_assert_uint_eq(engy_ws_frame_header(hdr, false, 2, 126, NULL), 4);
	ck_assert_mem_eq(hdr, B(0x02, 0x7e, 0x00, 0x7e), 4);
	ck_assert_uint_eq(engy_ws_frame_header(hdr, true, 2, 65536, key), 14);
	ck_assert_mem_eq(hdr, B(0x82, 0xff, 0, 0, 0, 0, 0, 1, 0, 0, 1, 2, 3, 4),
			 14);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		frame = malloc(ENGY_WS_HEADER_MAX + lens[i]);
		payload = malloc(lens[i] + 1);
		for (n = 0; n < lens[i]; n++)
			payload[n] = (uint8_t)('a' + n % 26);
		n = engy_ws_frame_header(frame, true, ENGY_WS_OP_TEXT, lens[i],
					 key);
		engy_ws_mask(frame + n, payload, lens[i], key, 0);
		n += lens[i];
		for (s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
			engy_ws_parser_init(&p, true, 1 << 20);
			feed(&p, frame, n, steps[s], &g);
			ck_assert_int_eq(g.rc, 0);
			ck_assert_int_eq(g.n, 1);
			ck_assert_uint_eq(g.len[0], lens[i]);
			ck_assert_mem_eq(g.data[0], payload, lens[i]);
			got_free(&g);
			engy_ws_parser_free(&p);
		}
		free(frame);
		free(payload);
	}
}
END_TEST

START_TEST(test_close_payload)
{
	uint8_t out[ENGY_WS_CONTROL_MAX];
	char reason[130];

	ck_assert_int_eq(engy_ws_close_payload(out, 1000, NULL), 2);
	ck_assert_mem_eq(out, B(0x03, 0xe8), 2);
	ck_assert_int_eq(engy_ws_close_payload(out, 4001, "bye"), 5);
	ck_assert_mem_eq(out, B(0x0f, 0xa1, 'b', 'y', 'e'), 5);
	memset(reason, 'r', sizeof(reason));
	reason[123] = '\0';
	ck_assert_int_eq(engy_ws_close_payload(out, 1000, reason), 125);
	reason[123] = 'r';
	reason[124] = '\0';
	ck_assert_int_eq(engy_ws_close_payload(out, 1000, reason), -EINVAL);
	ck_assert_int_eq(engy_ws_close_payload(out, 1005, NULL), -EINVAL);
	ck_assert_int_eq(engy_ws_close_payload(out, 1006, NULL), -EINVAL);
	ck_assert_int_eq(engy_ws_close_payload(out, 999, NULL), -EINVAL);
	ck_assert_int_eq(engy_ws_close_payload(out, 1000, "\xc3"), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ws_frame");
	TCase *tc = tcase_create("codec");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_rfc_examples);
	tcase_add_test(tc, test_control_between_fragments);
	tcase_add_test(tc, test_protocol_errors);
	tcase_add_test(tc, test_close_frames);
	tcase_add_test(tc, test_utf8);
	tcase_add_test(tc, test_text_validation);
	tcase_add_test(tc, test_max_message);
	tcase_add_test(tc, test_mask);
	tcase_add_test(tc, test_builder);
	tcase_add_test(tc, test_close_payload);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
