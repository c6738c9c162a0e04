/* SPDX-License-Identifier: MIT */
/*
 * The opening handshake (RFC 6455 §4 and its worked example), the HTTP
 * head parser behind it, and the ws/wss URL parser.
 *
 * Oracle: independent: RFC 6455 §4's worked example.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "url.h"
#include "ws_handshake.h"

#define RFC_KEY	   "dGhlIHNhbXBsZSBub25jZQ=="
#define RFC_ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

START_TEST(test_accept_known_answer)
{
	static const uint8_t nonce[16] = "the sample nonce";
	char key[ENGY_WS_KEY_LEN + 1], acc[ENGY_WS_ACCEPT_LEN + 1];

	engy_ws_key(key, nonce);
	ck_assert_str_eq(key, RFC_KEY);
	ck_assert_int_eq(engy_ws_accept(acc, RFC_KEY), 0);
	ck_assert_str_eq(acc, RFC_ACCEPT);
}
END_TEST

static int check_req(const char *text, const char **why,
		     char acc[ENGY_WS_ACCEPT_LEN + 1])
{
	struct engy_http_head h;
	int rc;

	rc = engy_http_head_parse(&h, text, strlen(text), true, why);
	if (rc < 0)
		return rc;
	rc = engy_ws_check_request(&h, acc, why);
	engy_http_head_free(&h);
	return rc;
}

#define GOOD_REQ                                                               \
	"GET /gw/0?x=1 HTTP/1.1\r\nHost: gw.example:8080\r\n"                  \
	"Upgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n"            \
	"Origin: http://anything\r\n"                                          \
	"Sec-WebSocket-Key: " RFC_KEY "\r\nSec-WebSocket-Version: 13\r\n\r\n"

START_TEST(test_server_checks)
{
	char acc[ENGY_WS_ACCEPT_LEN + 1];
	struct engy_http_head h;
	const char *why;

	ck_assert_int_eq(check_req(GOOD_REQ, &why, acc), 0);
	ck_assert_str_eq(acc, RFC_ACCEPT);
	ck_assert_int_eq(engy_http_head_parse(&h, GOOD_REQ, strlen(GOOD_REQ),
					      true, &why),
			 0);
	ck_assert_str_eq(h.method, "GET");
	ck_assert_str_eq(h.target, "/gw/0?x=1");
	ck_assert_int_eq(h.http_minor, 1);
	ck_assert_str_eq(engy_http_head_get(&h, "host"), "gw.example:8080");
	ck_assert(engy_http_head_has_token(&h, "connection", "UPGRADE"));
	ck_assert(!engy_http_head_has_token(&h, "connection", "close"));
	ck_assert_ptr_null(engy_http_head_get(&h, "Cookie"));
	engy_http_head_free(&h);

	/* Not GET, HTTP/1.0, no Host. */
	ck_assert_int_eq(
		check_req("POST / HTTP/1.1\r\nHost: a\r\n\r\n", &why, acc),
		405);
	ck_assert_int_eq(
		check_req("GET / HTTP/1.0\r\nHost: a\r\n\r\n", &why, acc), 400);
	ck_assert_int_eq(check_req("GET / HTTP/1.1\r\nUpgrade: websocket\r\n"
				   "Connection: upgrade\r\n\r\n",
				   &why, acc),
			 400);
	ck_assert_str_eq(why, "no Host header");
	/* A plain GET: 426, not an upgrade. */
	ck_assert_int_eq(
		check_req("GET /gw HTTP/1.1\r\nHost: a\r\n\r\n", &why, acc),
		426);
	/* Upgrade without Connection: Upgrade. */
	ck_assert_int_eq(check_req("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: "
				   "websocket\r\nSec-WebSocket-Version: 13\r\n"
				   "Sec-WebSocket-Key: " RFC_KEY "\r\n\r\n",
				   &why, acc),
			 400);
	/* Version 8, no version. */
	ck_assert_int_eq(
		check_req(
			"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: "
			"websocket\r\nConnection: Upgrade\r\n"
			"Sec-WebSocket-Version: 8\r\nSec-WebSocket-Key: " RFC_KEY
			"\r\n\r\n",
			&why, acc),
		426);
	ck_assert_str_eq(why, "Sec-WebSocket-Version must be 13");
	/* Keys that are not base64 of 16 bytes. */
	ck_assert_int_eq(
		check_req("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: "
			  "websocket\r\nConnection: Upgrade\r\n"
			  "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: "
			  "c2hvcnQ=\r\n\r\n",
			  &why, acc),
		400);
	ck_assert_int_eq(
		check_req("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: "
			  "websocket\r\nConnection: Upgrade\r\n"
			  "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: "
			  "!GhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
			  &why, acc),
		400);
	ck_assert_int_eq(check_req("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: "
				   "websocket\r\nConnection: Upgrade\r\n"
				   "Sec-WebSocket-Version: 13\r\n\r\n",
				   &why, acc),
			 400);
}
END_TEST

START_TEST(test_head_parser_errors)
{
	static const char *const bad[] = {
		"",
		"GET\r\n\r\n",
		"GET /\r\n\r\n",
		"GET / HTTP/2.0\r\n\r\n",
		"GET x HTTP/1.1\r\n\r\n",
		"G(T / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nNo-colon\r\n\r\n",
		"GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
		"GET / HTTP/1.1\r\nA: b\x01\r\n\r\n",
	};
	struct engy_http_head h;
	char many[64 * 8 + 64];
	const char *why;
	size_t i;
	int n;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(engy_http_head_parse(&h, bad[i], strlen(bad[i]),
						   true, &why) == -EINVAL,
			      "bad %zu", i);
		ck_assert_ptr_nonnull(why);
	}
	ck_assert_int_eq(
		engy_http_head_parse(&h, "GET / HTTP/1.1\0x", 16, true, &why),
		-EINVAL);
	n = sprintf(many, "GET / HTTP/1.1\r\n");
	for (i = 0; i < ENGY_HTTP_HEADERS_MAX + 1; i++)
		n += sprintf(many + n, "A%zu: b\r\n", i);
	ck_assert_int_eq(engy_http_head_parse(&h, many, (size_t)n, true, &why),
			 -E2BIG);
	/* Status lines. */
	ck_assert_int_eq(engy_http_head_parse(&h, "HTTP/1.1 1O1 x\r\n\r\n", 18,
					      false, &why),
			 -EINVAL);
	ck_assert_int_eq(engy_http_head_parse(&h, "HTTP/1.1 404\r\n\r\n", 16,
					      false, &why),
			 0);
	ck_assert_int_eq(h.status, 404);
	engy_http_head_free(&h);
}
END_TEST

START_TEST(test_client_request_and_response)
{
	static const char *const hdrs[] = { "X-Miner", "k1", "User-Agent",
					    "engy", NULL };
	static const char *const bad_name[] = { "Bad Name", "v", NULL };
	static const char *const bad_val[] = { "X-A", "a\r\nInjected: 1",
					       NULL };
	static const char *const owned[] = { "sec-websocket-key", "x", NULL };
	static const char *const odd[] = { "X-A", NULL };
	struct engy_http_head h;
	const char *why;
	char *req, *resp;

	ck_assert_int_eq(engy_ws_request(&req, "gw:8080", "/gw?k=1", RFC_KEY,
					 hdrs, &why),
			 0);
	ck_assert_str_eq(req, "GET /gw?k=1 HTTP/1.1\r\nHost: gw:8080\r\n"
			      "Upgrade: websocket\r\nConnection: Upgrade\r\n"
			      "Sec-WebSocket-Key: " RFC_KEY "\r\n"
			      "Sec-WebSocket-Version: 13\r\n"
			      "X-Miner: k1\r\nUser-Agent: engy\r\n\r\n");
	/* The request is one our own server side accepts. */
	ck_assert_int_eq(engy_http_head_parse(&h, req, strlen(req), true, &why),
			 0);
	{
		char acc[ENGY_WS_ACCEPT_LEN + 1];

		ck_assert_int_eq(engy_ws_check_request(&h, acc, &why), 0);
		ck_assert_str_eq(acc, RFC_ACCEPT);
		ck_assert_int_eq(engy_ws_response(&resp, acc), 0);
	}
	engy_http_head_free(&h);
	free(req);
	ck_assert_int_eq(
		engy_http_head_parse(&h, resp, strlen(resp), false, &why), 0);
	ck_assert_int_eq(engy_ws_check_response(&h, RFC_KEY, &why), 0);
	ck_assert_int_eq(
		engy_ws_check_response(&h, "AAAAAAAAAAAAAAAAAAAAAA==", &why),
		-EPROTO);
	ck_assert_str_eq(why, "wrong Sec-WebSocket-Accept");
	engy_http_head_free(&h);
	free(resp);

	ck_assert_int_eq(
		engy_ws_request(&req, "h", "/", RFC_KEY, bad_name, &why),
		-EINVAL);
	ck_assert_int_eq(
		engy_ws_request(&req, "h", "/", RFC_KEY, bad_val, &why),
		-EINVAL);
	ck_assert_int_eq(engy_ws_request(&req, "h", "/", RFC_KEY, owned, &why),
			 -EINVAL);
	ck_assert_int_eq(engy_ws_request(&req, "h", "/", RFC_KEY, odd, &why),
			 -EINVAL);
	ck_assert_ptr_null(req);

	/* Replies a client must refuse. */
#define RESP(s)                                                                \
	ck_assert_int_eq(engy_http_head_parse(&h, s, strlen(s), false, &why), 0)
	RESP("HTTP/1.1 403 Forbidden\r\n\r\n");
	ck_assert_int_eq(engy_ws_check_response(&h, RFC_KEY, &why), -EPROTO);
	ck_assert_int_eq(h.status, 403);
	engy_http_head_free(&h);
	RESP("HTTP/1.1 101 OK\r\nConnection: Upgrade\r\n"
	     "Sec-WebSocket-Accept: " RFC_ACCEPT "\r\n\r\n");
	ck_assert_int_eq(engy_ws_check_response(&h, RFC_KEY, &why), -EPROTO);
	engy_http_head_free(&h);
	RESP("HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	     "Sec-WebSocket-Accept: " RFC_ACCEPT "\r\n"
	     "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n");
	ck_assert_int_eq(engy_ws_check_response(&h, RFC_KEY, &why), -EPROTO);
	engy_http_head_free(&h);
	RESP("HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	     "Sec-WebSocket-Accept: " RFC_ACCEPT "\r\n"
	     "Sec-WebSocket-Protocol: chat\r\n\r\n");
	ck_assert_int_eq(engy_ws_check_response(&h, RFC_KEY, &why), -EPROTO);
	engy_http_head_free(&h);
}
END_TEST

START_TEST(test_refusals)
{
	char *r;

	ck_assert_int_eq(engy_ws_refusal(&r, 426, "websocket only"), 0);
	ck_assert(strncmp(r, "HTTP/1.1 426 Upgrade Required\r\n", 31) == 0);
	ck_assert_ptr_nonnull(strstr(r, "Sec-WebSocket-Version: 13\r\n"));
	ck_assert_ptr_nonnull(strstr(r, "Content-Length: 15\r\n"));
	ck_assert_ptr_nonnull(strstr(r, "\r\n\r\nwebsocket only\n"));
	free(r);
	ck_assert_int_eq(engy_ws_refusal(&r, 405, "GET"), 0);
	ck_assert_ptr_nonnull(strstr(r, "Allow: GET\r\n"));
	free(r);
}
END_TEST

START_TEST(test_url)
{
	struct engy_url u;
	const char *why;

	ck_assert_int_eq(engy_url_parse(&u, "wss://API.engy.ai/gw", &why), 0);
	ck_assert_str_eq(u.scheme, "wss");
	ck_assert_str_eq(u.host, "api.engy.ai");
	ck_assert_uint_eq(u.port, 443);
	ck_assert(u.tls);
	ck_assert_str_eq(u.path, "/gw");
	ck_assert_ptr_null(u.query);
	ck_assert_str_eq(u.target, "/gw");
	ck_assert_str_eq(u.authority, "api.engy.ai");
	engy_url_free(&u);

	ck_assert_int_eq(
		engy_url_parse(&u, "ws://127.0.0.1:8080?key=s3cret", &why), 0);
	ck_assert(!u.tls);
	ck_assert_uint_eq(u.port, 8080);
	ck_assert_str_eq(u.path, "/");
	ck_assert_str_eq(u.query, "key=s3cret");
	ck_assert_str_eq(u.target, "/?key=s3cret");
	ck_assert_str_eq(u.authority, "127.0.0.1:8080");
	/* The loggable form drops the query. */
	ck_assert_str_eq(u.safe, "ws://127.0.0.1:8080/");
	engy_url_free(&u);

	ck_assert_int_eq(engy_url_parse(&u, "ws://[::1]:9/gw/3", &why), 0);
	ck_assert(u.ipv6);
	ck_assert_str_eq(u.host, "::1");
	ck_assert_str_eq(u.authority, "[::1]:9");
	ck_assert_str_eq(u.path, "/gw/3");
	engy_url_free(&u);

	ck_assert_int_eq(engy_url_parse(&u, "HTTPS://h", &why), 0);
	ck_assert_uint_eq(u.port, 443);
	engy_url_free(&u);

#define BAD(s)                                                                 \
	do {                                                                   \
		ck_assert_int_eq(engy_url_parse(&u, s, &why), -EINVAL);        \
		ck_assert_ptr_nonnull(why);                                    \
	} while (0)
	BAD("gw.example/gw");
	BAD("ftp://h/");
	BAD("ws://");
	BAD("ws:///path");
	BAD("ws://h:0/");
	BAD("ws://h:65536/");
	BAD("ws://h:/");
	BAD("ws://h:8x/");
	BAD("ws://user:pw@h/");
	BAD("ws://h/gw#frag");
	BAD("ws://h/a b");
	BAD("ws://h/\xc3\xa9");
	BAD("ws://[::1/");
	BAD("ws://[]/");
	BAD("ws://[::g]/");
	BAD("ws://h!/");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ws_handshake");
	TCase *tc = tcase_create("handshake");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_accept_known_answer);
	tcase_add_test(tc, test_server_checks);
	tcase_add_test(tc, test_head_parser_errors);
	tcase_add_test(tc, test_client_request_and_response);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_url);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
