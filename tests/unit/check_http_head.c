/* SPDX-License-Identifier: MIT */
/*
 * The HTTP/1.1 head parser (lib/ws/http_head.c): each rule of http_head.h.
 *
 * Oracle: hand-written by the test's author from RFC 9112's rules; no
 * outside parser.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_head.h"

static const struct engy_http_limits lim = {
	.head = 16384,
	.fields = 100,
	.target = 8192,
};

static int req(const char *s, struct engy_http_head *h, const char **why)
{
	return engy_http_head_parse_ex(h, s, strlen(s), true, &lim, why);
}

/* A refused request: the code, a reason, nothing left to free. */
static void refused(const char *s, int code, const char *reason)
{
	struct engy_http_head h;
	const char *why;

	ck_assert_msg(req(s, &h, &why) == code, "%s", s);
	ck_assert_ptr_nonnull(why);
	if (reason)
		ck_assert_str_eq(why, reason);
	ck_assert_ptr_null(h.buf);
	ck_assert_uint_eq(h.n_fields, 0);
}

START_TEST(test_request)
{
	struct engy_http_head h;
	const char *why = "x";

	ck_assert_int_eq(req("POST /v1/x?a=b HTTP/1.1\r\nHost: t\r\n"
			     "content-length:  42 \t\r\nX-Empty:\r\n"
			     "Connection: keep-alive,  Close\r\n\r\n",
			     &h, &why),
			 0);
	ck_assert_ptr_null(why);
	ck_assert_str_eq(h.method, "POST");
	ck_assert_str_eq(h.target, "/v1/x?a=b");
	ck_assert_int_eq(h.http_minor, 1);
	ck_assert_uint_eq(h.n_fields, 4);
	/* Names in any case; values trimmed. */
	ck_assert_str_eq(engy_http_head_get(&h, "Content-Length"), "42");
	ck_assert_str_eq(engy_http_head_get(&h, "HOST"), "t");
	ck_assert_str_eq(engy_http_head_get(&h, "x-empty"), "");
	ck_assert_ptr_null(engy_http_head_get(&h, "Cookie"));
	ck_assert(engy_http_head_has_token(&h, "connection", "close"));
	ck_assert(!engy_http_head_has_token(&h, "connection", "upgrade"));
	ck_assert_int_eq(h.content_length, 42);
	engy_http_head_free(&h);

	/* Bare LF lines; HTTP/1.0; no length; obs-text in a value. */
	ck_assert_int_eq(req("GET / HTTP/1.0\nX: caf\xc3\xa9\n\n", &h, &why),
			 0);
	ck_assert_int_eq(h.http_minor, 0);
	ck_assert_int_eq(h.content_length, -1);
	ck_assert_str_eq(engy_http_head_get(&h, "x"), "caf\xc3\xa9");
	engy_http_head_free(&h);
	/* "*" for OPTIONS only; identical repeated lengths are one. */
	ck_assert_int_eq(req("OPTIONS * HTTP/1.1\r\nHost: t\r\n"
			     "Content-Length: 3\r\nContent-Length: 3\r\n\r\n",
			     &h, &why),
			 0);
	ck_assert_int_eq(h.content_length, 3);
	engy_http_head_free(&h);
}
END_TEST

START_TEST(test_refusals)
{
	/* Syntax. */
	refused("", -EINVAL, "empty head");
	refused("GET / HTTP/1.1\r\nHost: t\r\n", -EINVAL,
		"no empty line at the end of the head");
	refused("\r\nGET / HTTP/1.1\r\n\r\n", -EINVAL, NULL);
	refused("GET  / HTTP/1.1\r\n\r\n", -EINVAL, NULL);
	refused("G(T / HTTP/1.1\r\n\r\n", -EINVAL, "malformed method");
	refused("GET /a b HTTP/1.1\r\n\r\n", -EINVAL, NULL);
	refused("GET /\x7f HTTP/1.1\r\n\r\n", -EINVAL,
		"malformed request target");
	refused("GET http://h/ HTTP/1.1\r\n\r\n", -EINVAL,
		"request target must be a path");
	refused("GET * HTTP/1.1\r\n\r\n", -EINVAL,
		"request target must be a path");
	refused("GET / HTTP/1.1 \r\n\r\n", -EINVAL, "not an HTTP/1.x request");
	refused("GET / http/1.1\r\n\r\n", -EINVAL, "not an HTTP/1.x request");
	/* Injection: bare CR, NUL, controls, folding, space before colon. */
	refused("GET / HTTP/1.1\r\nA: b\rInjected: 1\r\n\r\n", -EINVAL,
		"bare CR in the head");
	refused("GET /\r HTTP/1.1\r\n\r\n", -EINVAL, "bare CR in the head");
	refused("GET / HTTP/1.1\r\n\r\r\n", -EINVAL, "bare CR in the head");
	refused("GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", -EINVAL,
		"control character in a header value");
	refused("GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", -EINVAL,
		"folded header line");
	refused("GET / HTTP/1.1\r\nA : b\r\n\r\n", -EINVAL,
		"malformed header name");
	refused("GET / HTTP/1.1\r\n: b\r\n\r\n", -EINVAL,
		"malformed header name");
	refused("GET / HTTP/1.1\r\nNo-colon\r\n\r\n", -EINVAL,
		"header line without a colon");
	/* A second request hidden after the empty line. */
	refused("GET / HTTP/1.1\nHost: t\n\nGET /x HTTP/1.1\r\n\r\n", -EINVAL,
		"bytes after the empty line");
	/* Versions. */
	refused("GET / HTTP/2.0\r\n\r\n", -EPROTONOSUPPORT, NULL);
	refused("GET / HTTP/1.2\r\n\r\n", -EPROTONOSUPPORT, NULL);
	/* Smuggling: the framing a proxy and we could read differently. */
	refused("POST / HTTP/1.1\r\nContent-Length: 3\r\ncontent-length: 4\r\n\r\n",
		-EBADMSG, "conflicting Content-Length headers");
	refused("POST / HTTP/1.1\r\nContent-Length: 3\r\n"
		"Transfer-Encoding: chunked\r\n\r\n",
		-EBADMSG, "both Transfer-Encoding and Content-Length");
	refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
		"Transfer-Encoding: chunked\r\n\r\n",
		-EBADMSG, "more than one Transfer-Encoding");
	refused("GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", -EBADMSG,
		"more than one Host");
	refused("POST / HTTP/1.1\r\nContent-Length: -3\r\n\r\n", -EBADMSG,
		"bad Content-Length");
	refused("POST / HTTP/1.1\r\nContent-Length: 3, 3\r\n\r\n", -EBADMSG,
		"bad Content-Length");
	refused("POST / HTTP/1.1\r\nContent-Length: 1234567890123456\r\n\r\n",
		-EBADMSG, "bad Content-Length");
	refused("POST / HTTP/1.1\r\nContent-Length:\r\n\r\n", -EBADMSG,
		"bad Content-Length");
}
END_TEST

START_TEST(test_nul_and_limits)
{
	struct engy_http_head h;
	struct engy_http_limits small = { .head = 32,
					  .fields = 2,
					  .target = 5 };
	const char *why;
	char many[2048];
	size_t i;
	int n;

	ck_assert_int_eq(engy_http_head_parse_ex(&h,
						 "GET / HTTP/1.1\r\n\0\r\n\r\n",
						 20, true, &lim, &why),
			 -EINVAL);
	ck_assert_str_eq(why, "NUL byte in the head");
	ck_assert_int_eq(engy_http_head_parse_ex(&h,
						 "GET /abcde HTTP/1.1\r\n\r\n",
						 23, true, &small, &why),
			 -ENAMETOOLONG);
	ck_assert_int_eq(engy_http_head_parse_ex(&h,
						 "GET /abcd HTTP/1.1\r\n\r\n",
						 22, true, &small, &why),
			 0);
	engy_http_head_free(&h);
	ck_assert_int_eq(engy_http_head_parse_ex(&h,
						 "GET / HTTP/1.1\r\n"
						 "A: 1\r\nB: 2\r\nC: 3\r\n\r\n",
						 36, true, &small, &why),
			 -EMSGSIZE);
	small.head = 0;
	ck_assert_int_eq(engy_http_head_parse_ex(&h,
						 "GET / HTTP/1.1\r\n"
						 "A: 1\r\nB: 2\r\nC: 3\r\n\r\n",
						 36, true, &small, &why),
			 -E2BIG);
	ck_assert_str_eq(why, "too many header fields");
	ck_assert_int_eq(engy_http_head_parse_ex(&h,
						 "GET / HTTP/1.1\r\n"
						 "A: 1\r\nB: 2\r\n\r\n",
						 30, true, &small, &why),
			 0);
	ck_assert_uint_eq(h.n_fields, 2);
	engy_http_head_free(&h);
	/* No limits at all: fields as many as there are lines. */
	n = sprintf(many, "GET / HTTP/1.1\r\n");
	for (i = 0; i < 200; i++)
		n += sprintf(many + n, "A%zu: b\r\n", i);
	n += sprintf(many + n, "\r\n");
	ck_assert_int_eq(
		engy_http_head_parse_ex(&h, many, (size_t)n, true, NULL, &why),
		0);
	ck_assert_uint_eq(h.n_fields, 200);
	ck_assert_str_eq(h.fields[199].name, "A199");
	engy_http_head_free(&h);
	/* The handshake's entry point folds the codes and keeps 64 fields. */
	ck_assert_int_eq(engy_http_head_parse(&h, many, (size_t)n, true, &why),
			 -E2BIG);
	ck_assert_int_eq(engy_http_head_parse(&h, "GET / HTTP/2.0\r\n\r\n", 18,
					      true, &why),
			 -EINVAL);
	ck_assert_int_eq(engy_http_head_parse(&h,
					      "GET / HTTP/1.1\r\nHost: a\r\n"
					      "Host: a\r\n\r\n",
					      36, true, &why),
			 -EINVAL);
	ck_assert_str_eq(why, "more than one Host");
}
END_TEST

START_TEST(test_status_line)
{
	struct engy_http_head h;
	const char *why;

#define RESP(s) engy_http_head_parse_ex(&h, s, strlen(s), false, &lim, &why)
	ck_assert_int_eq(RESP("HTTP/1.1 101 Switching Protocols\r\n"
			      "Upgrade: websocket\r\n\r\n"),
			 0);
	ck_assert_int_eq(h.status, 101);
	ck_assert_str_eq(h.reason_phrase, "Switching Protocols");
	ck_assert_ptr_null(h.method);
	engy_http_head_free(&h);
	ck_assert_int_eq(RESP("HTTP/1.0 404\r\n\r\n"), 0);
	ck_assert_int_eq(h.status, 404);
	ck_assert_str_eq(h.reason_phrase, "");
	engy_http_head_free(&h);
	/* Two Host fields are a request's problem only. */
	ck_assert_int_eq(RESP("HTTP/1.1 200 OK\r\nHost: a\r\nHost: b\r\n\r\n"),
			 0);
	engy_http_head_free(&h);
	ck_assert_int_eq(RESP("HTTP/1.1 1O1 x\r\n\r\n"), -EINVAL);
	ck_assert_int_eq(RESP("HTTP/1.1 600 x\r\n\r\n"), -EINVAL);
	ck_assert_int_eq(RESP("HTTP/1.1 2000\r\n\r\n"), -EINVAL);
	ck_assert_int_eq(RESP("HTTP/1.1 200 O\x01K\r\n\r\n"), -EINVAL);
	ck_assert_int_eq(RESP("HTTP/3 200 OK\r\n\r\n"), -EINVAL);
	ck_assert_int_eq(RESP("HTTP/2.0 200 OK\r\n\r\n"), -EPROTONOSUPPORT);
	ck_assert_int_eq(RESP("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
			      "Transfer-Encoding: chunked\r\n\r\n"),
			 -EBADMSG);
#undef RESP
}
END_TEST

START_TEST(test_token_and_value)
{
	ck_assert(engy_http_token("X-Api_Key.1!#$%&'*+^`|~"));
	ck_assert(!engy_http_token(""));
	ck_assert(!engy_http_token("a b"));
	ck_assert(!engy_http_token("a:b"));
	ck_assert(!engy_http_token("a\"b"));
	/* every byte alone, against RFC 9110's tchar written out */
	for (int c = 1; c < 256; c++) {
		char one[2] = { (char)c, 0 };
		bool want = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
			    (c >= 'A' && c <= 'Z') ||
			    (c && strchr("!#$%&'*+-.^_`|~", c));

		ck_assert_msg(engy_http_token(one) == want, "byte 0x%02x", c);
	}
	ck_assert(engy_http_value_ok("a \tb\x80\xff"));
	ck_assert(!engy_http_value_ok("a\r\nInjected: 1"));
	ck_assert(!engy_http_value_ok("a\x7f"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("http_head");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_request);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_nul_and_limits);
	tcase_add_test(tc, test_status_line);
	tcase_add_test(tc, test_token_and_value);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
