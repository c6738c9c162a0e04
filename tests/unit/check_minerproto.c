/* SPDX-License-Identifier: MIT */
/*
 * The miner link's pure code (lib/proto/minerproto.c, lib/proto/miner_ckpt.c): the leg
 * plan, the gateway URLs and /meta, the worker name, every frame both
 * ways against specs/protocol.md §2, the request's sampling fields, model_root
 * and the chat variant of a checkpoint directory.
 *
 * Oracle: hand-written from specs/protocol.md §2 by the test's author;
 * fake_gateway.mjs checks the live frames independently in miner_gw.sh.
 * The JSON readers (lib/proto/json_lazy.c) are checked against cJSON's
 * own parse of the same text.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat_template.h"
#include "json_lazy.h"
#include "miner_ckpt.h"
#include "minerproto.h"

static cJSON *parse(const char *s)
{
	cJSON *j = cJSON_Parse(s);

	ck_assert_msg(j != NULL, "not JSON: %s", s);
	return j;
}

static const cJSON *get(const cJSON *o, const char *path)
{
	char buf[256], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok && o;
	     tok = strtok_r(NULL, ".", &save))
		o = cJSON_IsArray(o) ? cJSON_GetArrayItem(o, atoi(tok))
				     : cJSON_GetObjectItemCaseSensitive(o, tok);
	return o;
}

static const char *str(const cJSON *o, const char *path)
{
	const cJSON *j = get(o, path);

	ck_assert_msg(cJSON_IsString(j), "%s is not a string", path);
	return j->valuestring;
}

static double num(const cJSON *o, const char *path)
{
	const cJSON *j = get(o, path);

	ck_assert_msg(cJSON_IsNumber(j), "%s is not a number", path);
	return j->valuedouble;
}

START_TEST(test_leg_plan)
{
	unsigned w[ENGY_GW_MAX_WORKERS], n, share, seen[4] = { 0 }, i;
	uint64_t seed;

	ck_assert_int_eq(engy_leg_plan(8, 1, 1, w, &n, &share), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(share, 8);
	ck_assert_uint_eq(w[0], 0);
	ck_assert_int_eq(engy_leg_plan(9, 2, 1, w, &n, &share), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(share, 4); /* integer division */
	ck_assert_uint_eq(w[0], 0);
	ck_assert_uint_eq(w[1], 1);
	ck_assert_int_eq(engy_leg_plan(64, 64, 1, w, &n, &share), 0);
	ck_assert_uint_eq(n, 64);
	ck_assert_uint_eq(share, 1);
	/* Fewer than workers: a random subset at 1 each, distinct, sorted,
	 * and over many seeds every worker gets picked. */
	for (seed = 0; seed < 200; seed++) {
		ck_assert_int_eq(engy_leg_plan(2, 4, seed, w, &n, &share), 0);
		ck_assert_uint_eq(n, 2);
		ck_assert_uint_eq(share, 1);
		ck_assert_uint_lt(w[0], w[1]);
		ck_assert_uint_lt(w[1], 4);
		seen[w[0]]++;
		seen[w[1]]++;
	}
	for (i = 0; i < 4; i++)
		ck_assert_uint_gt(seen[i], 50);
	ck_assert_int_eq(engy_leg_plan(0, 2, 1, w, &n, &share), -EINVAL);
	ck_assert_int_eq(engy_leg_plan(8, 0, 1, w, &n, &share), -EINVAL);
	ck_assert_int_eq(
		engy_leg_plan(8, ENGY_GW_MAX_WORKERS + 1, 1, w, &n, &share),
		-EINVAL);
}
END_TEST

START_TEST(test_urls)
{
	static const struct {
		const char *gw, *meta;
	} m[] = {
		{ "ws://127.0.0.1:9000/gw", "http://127.0.0.1:9000/gw/meta" },
		{ "wss://api.engy.ai/gw", "https://api.engy.ai/gw/meta" },
		{ "wss://api.engy.ai/gw/", "https://api.engy.ai/gw/meta" },
		{ "wss://api.engy.ai/gw?k=v", "https://api.engy.ai/gw/meta" },
		{ "ws://h", "http://h/meta" },
		{ "ws://h/", "http://h/meta" },
	};
	const char *why = NULL;
	char *u;
	size_t i;

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		ck_assert_int_eq(engy_gw_meta_url(m[i].gw, &u, &why), 0);
		ck_assert_str_eq(u, m[i].meta);
		free(u);
	}
	ck_assert_int_eq(engy_gw_meta_url("http://h/gw", &u, &why), -EINVAL);
	ck_assert_ptr_null(u);
	ck_assert_ptr_nonnull(why);
	ck_assert_int_eq(engy_gw_meta_url("ws://", &u, NULL), -EINVAL);
	ck_assert_int_eq(engy_gw_worker_url("ws://h/gw", 0, 1, &u), 0);
	ck_assert_str_eq(u, "ws://h/gw");
	free(u);
	ck_assert_int_eq(engy_gw_worker_url("ws://h/gw", 1, 2, &u), 0);
	ck_assert_str_eq(u, "ws://h/gw/1");
	free(u);
	ck_assert_int_eq(engy_gw_worker_url("wss://h:1/gw/", 3, 4, &u), 0);
	ck_assert_str_eq(u, "wss://h:1/gw/3");
	free(u);
	ck_assert_int_eq(engy_gw_worker_url("wss://h/gw?a=b", 0, 2, &u), 0);
	ck_assert_str_eq(u, "wss://h/gw/0?a=b");
	free(u);
	ck_assert_int_eq(engy_gw_worker_url("tcp://h/gw", 0, 2, &u), -EINVAL);
}
END_TEST

START_TEST(test_meta_parse)
{
	static const char *const bad[] = {
		"{\"workers\":0}",     "{\"workers\":2.5}",  "[]", "\"x\"",
		"{\"workers\":\"2\"}", "{\"workers\":1025}", "{}", "",
		"{\"workers\":-1}",    "not json",
	};
	unsigned n = 99;
	size_t i;

	ck_assert_int_eq(engy_gw_meta_parse("{\"workers\":3}", 13, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(
		engy_gw_meta_parse("{\"workers\": 1, \"x\": [1]}", 24, &n), 0);
	ck_assert_uint_eq(n, 1);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = 99;
		ck_assert_int_eq(engy_gw_meta_parse(bad[i], strlen(bad[i]), &n),
				 -EINVAL);
		ck_assert_uint_eq(n, 99);
	}
}
END_TEST

START_TEST(test_ids)
{
	char name[17], a[33], b[33];
	size_t i;

	/* sha256("node-7|qwen3.6-35b-a3b|http://127.0.0.1:8000") */
	engy_worker_name("node-7", "qwen3.6-35b-a3b", "http://127.0.0.1:8000",
			 name);
	ck_assert_str_eq(name, "ins-6deed60c777f");
	engy_hex_id(a, 16);
	engy_hex_id(b, 16);
	ck_assert_uint_eq(strlen(a), 32);
	ck_assert_str_ne(a, b);
	for (i = 0; i < 32; i++)
		ck_assert(strchr("0123456789abcdef", a[i]));
}
END_TEST

static const struct engy_miner_capacity cap = {
	.max_inflight = 4,
	.max_inflight_total = 8,
	.max_input_tokens = 229376,
	.max_output_tokens = 32768,
	.max_request_s = 1800,
};

START_TEST(test_hello)
{
	static const char *const versions[] = { "engy", "0.1", "backend",
						"backend-sglang 0.1", NULL };
	struct engy_miner_hw hw = {
		.host = "node-7",
		.cpus = 16,
		.ram_gb = 125.8,
		.gpu = "NVIDIA GeForce RTX 4090",
		.gpu_count = 4,
		.gpu_mem_gb = 24,
		.gpus = "4x NVIDIA GeForce RTX 4090",
		.parallelism = "tp",
	};
	struct engy_miner_hello h = {
		.miner_key = "k\"ey",
		.model = "qwen3.6-35b-a3b",
		.model_root = "ab",
		.hw = &hw,
		.versions = versions,
		.cap = cap,
		.worker_name = "ins-1",
		.instance_id = "ins-2",
		.worker_id = "00ff",
	};
	size_t len;
	char *s = engy_miner_hello_json(&h, &len);
	cJSON *j = parse(s);

	ck_assert_uint_eq(len, strlen(s));
	ck_assert_str_eq(str(j, "type"), "hello");
	ck_assert_str_eq(str(j, "miner_key"), "k\"ey");
	ck_assert_str_eq(str(j, "model"), "qwen3.6-35b-a3b");
	ck_assert_str_eq(str(j, "model_root"), "ab");
	ck_assert_str_eq(str(j, "hw.host"), "node-7");
	ck_assert_int_eq(num(j, "hw.cpus"), 16);
	ck_assert_double_eq(num(j, "hw.ram_gb"), 125.8);
	ck_assert_str_eq(str(j, "hw.gpus"), "4x NVIDIA GeForce RTX 4090");
	ck_assert_int_eq(num(j, "hw.gpu_count"), 4);
	ck_assert_str_eq(str(j, "hw.parallelism"), "tp");
	ck_assert_str_eq(str(j, "versions.backend"), "backend-sglang 0.1");
	ck_assert_int_eq(num(j, "capacity.max_inflight"), 4);
	ck_assert_int_eq(num(j, "capacity.max_inflight_total"), 8);
	ck_assert_int_eq(num(j, "capacity.max_input_tokens"), 229376);
	ck_assert_int_eq(num(j, "capacity.max_output_tokens"), 32768);
	ck_assert_double_eq(num(j, "capacity.max_request_s"), 1800);
	ck_assert_str_eq(str(j, "worker_name"), "ins-1");
	ck_assert_str_eq(str(j, "instance_id"), "ins-2");
	ck_assert_str_eq(str(j, "worker_id"), "00ff");
	/* Floats read as Python writes them. */
	ck_assert_ptr_nonnull(strstr(s, "\"max_request_s\":1800.0"));
	ck_assert_ptr_nonnull(strstr(s, "\"gpu_mem_gb\":24.0"));
	ck_assert_ptr_nonnull(strstr(s, "\"ram_gb\":125.8"));
	cJSON_Delete(j);
	free(s);
	hw.parallelism = NULL;
	h.versions = NULL;
	s = engy_miner_hello_json(&h, &len);
	j = parse(s);
	ck_assert_ptr_null(get(j, "hw.parallelism"));
	ck_assert(cJSON_IsObject(get(j, "versions")));
	ck_assert_ptr_null(get(j, "constraints"));
	cJSON_Delete(j);
	free(s);
	/* a worker that serves alternatives says "top_logprobs" */
	h.constraints = 1 | 4;
	s = engy_miner_hello_json(&h, &len);
	j = parse(s);
	ck_assert_int_eq(cJSON_GetArraySize(get(j, "constraints")), 2);
	ck_assert_str_eq(str(j, "constraints.0"), "json_schema");
	ck_assert_str_eq(str(j, "constraints.1"), "top_logprobs");
	cJSON_Delete(j);
	free(s);
}
END_TEST

START_TEST(test_heartbeat_chunk_error)
{
	size_t len;
	char *s = engy_miner_heartbeat_json(3, 12.345, &cap, &len);
	cJSON *j = parse(s);

	ck_assert_str_eq(str(j, "type"), "heartbeat");
	ck_assert_int_eq(num(j, "inflight"), 3);
	ck_assert_double_eq(num(j, "idle_seconds"), 12.3);
	ck_assert_int_eq(num(j, "capacity.max_inflight_total"), 8);
	cJSON_Delete(j);
	free(s);
	s = engy_miner_heartbeat_json(0, 0, &cap, &len);
	ck_assert_ptr_nonnull(strstr(s, "\"idle_seconds\":0.0"));
	free(s);

	s = engy_miner_chunk_json("c1", "a\"b\nc", 5, NULL, 0, &len);
	j = parse(s);
	ck_assert_str_eq(str(j, "type"), "chunk");
	ck_assert_str_eq(str(j, "corr_id"), "c1");
	ck_assert_str_eq(str(j, "delta.content"), "a\"b\nc");
	ck_assert_ptr_null(get(j, "delta.reasoning_content"));
	ck_assert_int_eq(cJSON_GetArraySize(j), 3);
	cJSON_Delete(j);
	free(s);
	s = engy_miner_chunk_json("c1", "xyz", 2, "thinkX", 5, &len);
	j = parse(s);
	ck_assert_str_eq(str(j, "delta.content"), "xy");
	ck_assert_str_eq(str(j, "delta.reasoning_content"), "think");
	cJSON_Delete(j);
	free(s);

	s = engy_miner_error_json("c2", "r2", "bad request", &len);
	j = parse(s);
	ck_assert_str_eq(str(j, "type"), "response");
	ck_assert_str_eq(str(j, "corr_id"), "c2");
	ck_assert_str_eq(str(j, "request_id"), "r2");
	ck_assert(cJSON_IsNull(get(j, "commitment")));
	ck_assert(cJSON_IsObject(get(j, "output")));
	ck_assert_int_eq(cJSON_GetArraySize(get(j, "output")), 0);
	ck_assert_str_eq(str(j, "error"), "bad request");
	cJSON_Delete(j);
	free(s);
}
END_TEST

START_TEST(test_response)
{
	static const uint32_t prompt[] = { 1, 2, 3 },
			      out[] = { 70, 4294967295u };
	static const char *const schemes[] = { "toploc" };
	const char *proofs[] = {
		"{\"proofs\":[\"AAAA\"],\"topk\":128,\"decode_batching_size\":"
		"32,"
		"\"skip_prefill\":true,\"n_tokens\":2}",
	};
	struct engy_gen_msg msg = { 0 };
	struct engy_genparse_opts po = { .id_prefix = "call_" };
	struct engy_miner_result r = {
		.corr_id = "c3",
		.request_id = "req-9",
		.model_root = "ff",
		.prompt_ids = prompt,
		.n_prompt_ids = 3,
		.output_ids = out,
		.n_output_ids = 2,
		.schemes = schemes,
		.proofs = proofs,
		.n_schemes = 1,
		.msg = &msg,
		.finish_reason = "length",
		.prompt_tokens = 3,
		.completion_tokens = 2,
	};
	size_t len;
	int rc;
	char *s;
	cJSON *j;

	ck_assert_int_eq(
		engy_genparse("<think>hm</think>\n\nhi", 21, &po, &msg), 0);
	s = engy_miner_response_json(&r, &len, &rc);
	ck_assert_int_eq(rc, 0);
	j = parse(s);
	ck_assert_str_eq(str(j, "type"), "response");
	ck_assert_str_eq(str(j, "corr_id"), "c3");
	ck_assert_str_eq(str(j, "request_id"), "req-9");
	ck_assert_str_eq(str(j, "commitment.model_root"), "ff");
	ck_assert_int_eq(
		cJSON_GetArraySize(get(j, "commitment.output_token_ids")), 2);
	ck_assert_double_eq(num(j, "commitment.output_token_ids.1"),
			    4294967295.0);
	ck_assert_str_eq(str(j, "commitment.toploc.proofs.0"), "AAAA");
	ck_assert_int_eq(num(j, "commitment.toploc.n_tokens"), 2);
	ck_assert(cJSON_IsTrue(get(j, "commitment.toploc.skip_prefill")));
	ck_assert_int_eq(
		cJSON_GetArraySize(get(j, "commitment.toploc.prompt_ids")), 3);
	ck_assert_int_eq(num(j, "commitment.toploc.prompt_ids.2"), 3);
	ck_assert_int_eq(num(j, "output.choices.0.index"), 0);
	ck_assert_str_eq(str(j, "output.choices.0.finish_reason"), "length");
	ck_assert_str_eq(str(j, "output.choices.0.message.role"), "assistant");
	ck_assert_str_eq(str(j, "output.choices.0.message.content"), "hi");
	ck_assert_str_eq(str(j, "output.choices.0.message.reasoning_content"),
			 "hm");
	ck_assert_int_eq(num(j, "output.usage.prompt_tokens"), 3);
	ck_assert_int_eq(num(j, "output.usage.completion_tokens"), 2);
	ck_assert_int_eq(num(j, "output.usage.total_tokens"), 5);
	ck_assert_ptr_null(get(j, "output.usage.prompt_tokens_details"));
	ck_assert_ptr_null(get(j, "error"));
	cJSON_Delete(j);
	free(s);
	r.cached_tokens = 2;
	s = engy_miner_response_json(&r, &len, &rc);
	j = parse(s);
	ck_assert_int_eq(
		num(j, "output.usage.prompt_tokens_details.cached_tokens"), 2);
	cJSON_Delete(j);
	free(s);
	/* A proof that could not be built: the scheme is null, the answer
	 * and the token ids still go out. */
	proofs[0] = NULL;
	s = engy_miner_response_json(&r, &len, &rc);
	ck_assert_int_eq(rc, 0);
	j = parse(s);
	ck_assert(cJSON_IsNull(get(j, "commitment.toploc")));
	ck_assert_ptr_nonnull(get(j, "commitment.output_token_ids"));
	ck_assert_int_eq(num(j, "output.usage.completion_tokens"), 2);
	cJSON_Delete(j);
	free(s);
	/* A proof plugin that answered something other than an object. */
	proofs[0] = "[1]";
	s = engy_miner_response_json(&r, &len, &rc);
	ck_assert_ptr_null(s);
	ck_assert_int_eq(rc, -EINVAL);
	engy_gen_msg_free(&msg);
}
END_TEST

static int frame(const char *s, struct engy_gw_frame *f, char *err)
{
	return engy_gw_frame_parse(s, strlen(s), f, err, 128);
}

START_TEST(test_frames_in)
{
	static const char *const refused[] = {
		"",
		"[]",
		"nope",
		"{\"type\":1}",
		"{}",
		"{\"type\":\"serve\",\"request\":{}}",
		"{\"type\":\"serve\",\"corr_id\":\"\",\"request\":{}}",
		"{\"type\":\"serve\",\"corr_id\":7,\"request\":{}}",
		"{\"type\":\"cancel\"}",
	};
	struct engy_gw_frame f;
	char err[128], big[400];
	size_t i;

	ck_assert_int_eq(frame("{\"type\":\"admit\"}", &f, err), 0);
	ck_assert_int_eq(f.type, ENGY_GW_ADMIT);
	engy_gw_frame_free(&f);
	ck_assert_int_eq(
		frame("{\"type\":\"deny\",\"reason\":\"no key\"}", &f, err), 0);
	ck_assert_int_eq(f.type, ENGY_GW_DENY);
	ck_assert_str_eq(f.reason, "no key");
	engy_gw_frame_free(&f);
	ck_assert_int_eq(frame("{\"type\":\"deny\"}", &f, err), 0);
	ck_assert_ptr_null(f.reason);
	engy_gw_frame_free(&f);
	ck_assert_int_eq(frame("{\"type\":\"ping\"}", &f, err), 0);
	ck_assert_int_eq(f.type, ENGY_GW_PING);
	engy_gw_frame_free(&f);
	ck_assert_int_eq(frame("{\"type\":\"reconnect\"}", &f, err), 0);
	ck_assert_int_eq(f.type, ENGY_GW_RECONNECT);
	engy_gw_frame_free(&f);
	ck_assert_int_eq(frame("{\"type\":\"future\",\"x\":1}", &f, err), 0);
	ck_assert_int_eq(f.type, ENGY_GW_UNKNOWN);
	ck_assert_str_eq(f.type_name, "future");
	engy_gw_frame_free(&f);
	ck_assert_int_eq(
		frame("{\"type\":\"cancel\",\"corr_id\":\"c9\"}", &f, err), 0);
	ck_assert_int_eq(f.type, ENGY_GW_CANCEL);
	ck_assert_str_eq(f.corr_id, "c9");
	engy_gw_frame_free(&f);
	ck_assert_int_eq(
		frame("{\"type\":\"serve\",\"corr_id\":\"c1\",\"stream\":true,"
		      "\"request\":{\"messages\":[]}}",
		      &f, err),
		0);
	ck_assert_int_eq(f.type, ENGY_GW_SERVE);
	ck_assert_str_eq(f.corr_id, "c1");
	ck_assert(f.stream);
	ck_assert(cJSON_IsObject(f.request));
	ck_assert_ptr_null(f.bad);
	engy_gw_frame_free(&f);
	ck_assert_int_eq(frame("{\"type\":\"serve\",\"corr_id\":\"c1\","
			       "\"request\":\"x\"}",
			       &f, err),
			 0);
	ck_assert_ptr_null(f.request);
	ck_assert_ptr_nonnull(f.bad);
	ck_assert(!f.stream);
	engy_gw_frame_free(&f);
	ck_assert_int_eq(
		frame("{\"type\":\"serve\",\"corr_id\":\"c1\",\"stream\":1,"
		      "\"request\":{}}",
		      &f, err),
		0);
	ck_assert_ptr_nonnull(f.bad);
	engy_gw_frame_free(&f);
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		err[0] = '\0';
		ck_assert_int_eq(frame(refused[i], &f, err), -EINVAL);
		ck_assert_msg(err[0], "no reason for %s", refused[i]);
		engy_gw_frame_free(&f);
	}
	snprintf(big, sizeof(big),
		 "{\"type\":\"cancel\",\"corr_id\":\"%0300d\"}", 1);
	ck_assert_int_eq(frame(big, &f, err), -EINVAL);
	engy_gw_frame_free(&f);
}
END_TEST

static int params(const char *s, struct engy_chat_params *p, char *err)
{
	cJSON *j = parse(s);
	int rc = engy_chat_params_parse(j, p, err, 128);

	cJSON_Delete(j);
	return rc;
}

START_TEST(test_params)
{
	static const struct {
		const char *body, *field;
	} bad[] = {
		{ "{\"n\":2}", "n:" },
		{ "{\"max_tokens\":0}", "max_tokens:" },
		{ "{\"max_tokens\":1.5}", "max_tokens:" },
		{ "{\"max_completion_tokens\":\"9\"}",
		  "max_completion_tokens:" },
		{ "{\"temperature\":2.5}", "temperature:" },
		{ "{\"top_p\":0}", "top_p:" },
		{ "{\"top_k\":-2}", "top_k:" },
		{ "{\"seed\":0.5}", "seed:" },
		{ "{\"engy_request_id\":5}", "engy_request_id:" },
		{ "{\"engy_request_id\":\"\"}", "engy_request_id:" },
		{ "{\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", "stop:" },
		{ "{\"stop\":[1]}", "stop:" },
		{ "{\"logprobs\":true,\"top_logprobs\":21}", "top_logprobs:" },
		{ "{\"logprobs\":true,\"top_logprobs\":-1}", "top_logprobs:" },
		{ "{\"logprobs\":true,\"top_logprobs\":\"3\"}",
		  "top_logprobs:" },
	};
	struct engy_chat_params p;
	char err[128];
	cJSON *j;
	size_t i;

	/* The strings p borrows live in the body: keep it while checking. */
	j = parse("{\"messages\":[],\"max_tokens\":50,\"max_completion_"
		  "tokens\":7,"
		  "\"temperature\":0,\"top_p\":0.5,\"top_k\":-1,\"seed\":-3,"
		  "\"engy_request_id\":\"rq-1\",\"stop\":[\"x\",\"yy\"],\"n\":"
		  "1}");
	ck_assert_int_eq(engy_chat_params_parse(j, &p, err, sizeof(err)), 0);
	ck_assert(p.has_max_tokens);
	ck_assert_uint_eq(p.max_tokens, 7);
	ck_assert_double_eq(p.temperature, 0);
	ck_assert_double_eq(p.top_p, 0.5);
	ck_assert_int_eq(p.top_k, 0);
	ck_assert(p.has_seed);
	ck_assert_uint_eq(p.seed, (uint64_t)-3);
	ck_assert_str_eq(p.request_id, "rq-1");
	ck_assert_uint_eq(p.n_stop, 2);
	ck_assert_str_eq(p.stop[1], "yy");
	cJSON_Delete(j);
	ck_assert_int_eq(
		params("{\"messages\":[],\"max_tokens\":null,\"stop\":\"s\"}",
		       &p, err),
		0);
	ck_assert(!p.has_max_tokens);
	ck_assert_double_eq(p.temperature, 1);
	ck_assert_double_eq(p.top_p, 1);
	ck_assert_ptr_null(p.request_id);
	ck_assert_uint_eq(p.n_stop, 1);
	ck_assert_int_eq(params("{\"max_tokens\":12}", &p, err), 0);
	ck_assert_uint_eq(p.max_tokens, 12);
	ck_assert_uint_eq(p.top_logprobs, 0);
	ck_assert_int_eq(
		params("{\"logprobs\":true,\"top_logprobs\":20}", &p, err), 0);
	ck_assert(p.logprobs);
	ck_assert_uint_eq(p.top_logprobs, 20);
	/* alternatives only come with logprobs */
	ck_assert_int_eq(params("{\"top_logprobs\":3}", &p, err), 0);
	ck_assert_uint_eq(p.top_logprobs, 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(params(bad[i].body, &p, err), -EINVAL);
		ck_assert_msg(
			strncmp(err, bad[i].field, strlen(bad[i].field)) == 0,
			"%s: %s", bad[i].body, err);
	}
	ck_assert_int_eq(engy_chat_params_parse(NULL, &p, err, sizeof(err)),
			 -EINVAL);
}
END_TEST

static char dir[64];

static void put(const char *name, const char *data)
{
	size_t n = strlen(data);
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, n, f), n);
	fclose(f);
}

static void rm_dir(void)
{
	static const char *const names[] = {
		"config.json", "a.safetensors",		"b.safetensors",
		"x.bin",       "tokenizer_config.json", "chat_template.jinja",
	};
	char path[128];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

START_TEST(test_checkpoint)
{
	char hex[65], err[256];

	snprintf(dir, sizeof(dir), "/tmp/engy-minerproto.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(engy_ckpt_model_root(dir, hex, err, sizeof(err)),
			 -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "config.json"));
	put("config.json", "{\"a\": 1}\n");
	/* sha256(config bytes), no shards */
	ck_assert_int_eq(engy_ckpt_model_root(dir, hex, err, sizeof(err)), 0);
	ck_assert_str_eq(hex, "e8c628edc9968ef0c668f54e0ba2636b35503357eb1aca0d"
			      "dc828aeace432f67");
	/* written out of order; the hash takes them sorted, and skips
	 * other files */
	put("b.safetensors", "0123456789");
	put("x.bin", "zz");
	put("a.safetensors", "abc");
	ck_assert_int_eq(engy_ckpt_model_root(dir, hex, err, sizeof(err)), 0);
	/* sha256('{"a": 1}\n' 'a.safetensors3' 'b.safetensors10') */
	ck_assert_str_eq(hex, "58b0ada917511f1693dbe8a5cff8deb788d44ba15b6022ad"
			      "b8aea024b0e62b35");

	ck_assert_int_eq(engy_ckpt_chat_variant(dir), -ENOENT);
	put("chat_template.jinja", "<|im_start|>{{ x }}<tool_call>");
	ck_assert_int_eq(engy_ckpt_chat_variant(dir), ENGY_CHAT_QWEN3);
	put("tokenizer_config.json",
	    "{\"chat_template\":[{\"name\":\"tool_use\",\"template\":\"x\"},"
	    "{\"name\":\"default\",\"template\":\"<function=a><parameter=b>\"}]"
	    "}");
	ck_assert_int_eq(engy_ckpt_chat_variant(dir), ENGY_CHAT_QWEN36);
	put("tokenizer_config.json", "{\"chat_template\":\"plain\"}");
	ck_assert_int_eq(engy_ckpt_chat_variant(dir), ENGY_CHAT_QWEN3);
	rm_dir();
}
END_TEST

/* engy_json_skip(): one value's end, strict where cJSON is lax, never
 * laxer than cJSON (whatever it accepts, cJSON parses). */
START_TEST(test_json_skip)
{
	static const char *const good[] = {
		"0",
		"-0",
		"12",
		"-1.5e+3",
		"1E9",
		"true",
		"false",
		"null",
		"\"\"",
		"\"a\\\"b\\\\c\\/\\b\\f\\n\\r\\t\"",
		"\"\\u00e9\"",
		"\"\\ud83d\\ude00\"",
		"[]",
		"{}",
		"[1,[2,{\"a\":[]}],\"x\"]",
		"{ \"a\" : 1 , \"b\" : [ true , null ] }",
		"\"\\u0000\"",
	};
	static const char *const bad[] = {
		"",
		"-",
		"01",
		"1.",
		".5",
		"+1",
		"1e",
		"1e+",
		"tru",
		"nul",
		"\"abc",
		"\"\\x\"",
		"\"\\u12\"",
		"\"\\udc00\"",
		"\"\\ud800\"",
		"\"\\ud800\\u0041\"",
		"\"a\tb\"",
		"[1,]",
		"[1 2]",
		"{\"a\"}",
		"{\"a\":}",
		"{a:1}",
		"{\"a\":1,}",
		"[",
		"{",
		"]",
		"1234567890123456789012345678901234567890123456789012345678901234",
	};
	char deep[600];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		const char *e = good[i] + strlen(good[i]);
		cJSON *j = cJSON_Parse(good[i]);

		ck_assert_msg(engy_json_skip(good[i], e, 8) == e, "%s",
			      good[i]);
		ck_assert_msg(j != NULL, "cJSON refuses %s", good[i]);
		cJSON_Delete(j);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(engy_json_skip(bad[i], bad[i] + strlen(bad[i]),
					     8) != bad[i] + strlen(bad[i]),
			      "accepted %s", bad[i]);
	/* 63 characters is cJSON's longest number; the value stops early. */
	ck_assert_ptr_nonnull(engy_json_skip(bad[26], bad[26] + 63, 8));
	ck_assert_ptr_eq(engy_json_skip("1,2", "1,2" + 3, 8), "1,2" + 1);
	/* nesting: @max_depth containers, not one more */
	memset(deep, '[', 300);
	memset(deep + 300, ']', 300);
	ck_assert_ptr_eq(engy_json_skip(deep, deep + 600, 300), deep + 600);
	ck_assert_ptr_null(engy_json_skip(deep, deep + 600, 299));
	/* a value cut short is not a value */
	ck_assert_ptr_null(engy_json_skip("[1,2", "[1,2" + 4, 8));
	ck_assert_ptr_null(engy_json_skip("\"ab\"", "\"ab\"" + 3, 8));
}
END_TEST

/* engy_json_parse_lazy(): the named members as checked text, the others
 * as cJSON builds them; whatever it does not take is NULL (the caller's
 * whole parse decides), never a different answer. */
START_TEST(test_json_lazy)
{
	static const char *const keys[] = { "commitment", NULL };
	static const char frame[] =
		" {\"type\":\"response\", \"commitment\" : {\"ids\":[1, 2,3],"
		"\"p\":\"\\u00e9\"} ,\"output\":{\"n\":[4.5,true]},"
		"\"commitment\":null}\n";
	static const char *const refused[] = {
		"[1]",
		"{\"a\":1",
		"{\"a\":1}x",
		"{\"a\" 1}",
		"{\"commitment\":01}",
		"{\"commitment\":[1,]}",
		"{\"a\":\xef\xbb\xbf"
		"1}",
		"{\"a\":\x01"
		"1}",
		"{,}",
		"{\"a\":1,}",
		"",
	};
	cJSON *j = engy_json_parse_lazy(frame, strlen(frame), keys), *w;
	const cJSON *c, *o;
	char *a, *b;
	size_t i;

	ck_assert_ptr_nonnull(j);
	c = cJSON_GetObjectItemCaseSensitive(j, "commitment");
	ck_assert(cJSON_IsRaw(c)); /* the first of two, as cJSON finds it */
	ck_assert_str_eq(c->valuestring,
			 "{\"ids\":[1, 2,3],\"p\":\"\\u00e9\"}");
	ck_assert(cJSON_IsRaw(c->next->next));
	ck_assert_str_eq(c->next->next->valuestring, "null");
	o = cJSON_GetObjectItemCaseSensitive(j, "output");
	ck_assert(cJSON_IsObject(o));
	ck_assert_double_eq(
		cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "n"), 0)
			->valuedouble,
		4.5);
	/* with the raw text parsed back, the same tree as cJSON's own */
	w = cJSON_Parse(frame);
	ck_assert_ptr_nonnull(w);
	cJSON_ReplaceItemInObjectCaseSensitive(j, "commitment",
					       cJSON_Parse(c->valuestring));
	a = cJSON_PrintUnformatted(j);
	b = cJSON_PrintUnformatted(w);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	cJSON_Delete(w);
	cJSON_Delete(j);
	/* no named keys: every member built */
	j = engy_json_parse_lazy("{\"commitment\":[1]}", 18, NULL);
	ck_assert(cJSON_IsArray(
		cJSON_GetObjectItemCaseSensitive(j, "commitment")));
	cJSON_Delete(j);
	j = engy_json_parse_lazy("{}", 2, keys);
	ck_assert(cJSON_IsObject(j) && !j->child);
	cJSON_Delete(j);
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		ck_assert_msg(!engy_json_parse_lazy(refused[i],
						    strlen(refused[i]), keys),
			      "took %s", refused[i]);
	/* a key is named as cJSON reads it, escapes and all */
	j = engy_json_parse_lazy("{\"c\\u006fmmitment\":[1]}", 23, keys);
	ck_assert_ptr_nonnull(j);
	ck_assert(cJSON_IsRaw(j->child));
	ck_assert_str_eq(j->child->string, "commitment");
	ck_assert_str_eq(j->child->valuestring, "[1]");
	cJSON_Delete(j);
}
END_TEST

/* One line per node, depth first: its depth, type, key, string value,
 * valueint and valuedouble's bytes; the sibling links asserted as cJSON
 * sets them (the first child's prev is the last child). */
static void dump_node(FILE *f, const cJSON *j, int depth)
{
	const unsigned char *d = (const unsigned char *)&j->valuedouble;
	const cJSON *c, *last = NULL;
	size_t i;

	fprintf(f, "%d %d ", depth, j->type);
	fprintf(f, j->string ? "[%s] " : "~ ", j->string);
	fprintf(f, j->valuestring ? "[%s] " : "~ ", j->valuestring);
	fprintf(f, "%d ", j->valueint);
	for (i = 0; i < sizeof(j->valuedouble); i++)
		fprintf(f, "%02x", d[i]);
	fputc('\n', f);
	for (c = j->child; c; c = c->next) {
		if (c != j->child)
			ck_assert_ptr_eq(c->prev, last);
		last = c;
		dump_node(f, c, depth + 1);
	}
	if (j->child)
		ck_assert_ptr_eq(j->child->prev, last);
}

static char *dump(const cJSON *j)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	dump_node(f, j, 0);
	fclose(f);
	return buf;
}

/* engy_json_parse() of @s..@s+@n: with @taken, cJSON's tree (equal and
 * dumped the same) and cJSON's end; else NULL and the end untouched. */
static void parse_as_cjson(const char *s, size_t n, bool taken)
{
	const char *we = NULL, *je = "untouched";
	cJSON *w = cJSON_ParseWithLengthOpts(s, n, &we, false);
	cJSON *j = engy_json_parse(s, n, &je), *w2;
	char *a, *b;

	if (!taken) {
		ck_assert_msg(!j, "took %.*s", (int)n, s);
		ck_assert_str_eq(je, "untouched");
		cJSON_Delete(w);
		return;
	}
	ck_assert_msg(j != NULL, "did not take %.*s", (int)n, s);
	ck_assert_msg(w != NULL, "cJSON refuses %.*s", (int)n, s);
	ck_assert_msg(je == we, "end %td, cJSON's %td: %.*s", je - s, we - s,
		      (int)n, s);
	/* cJSON_Compare() finds no infinity equal to another: as equal as
	 * cJSON's parse is to a second one.  It walks an object's members
	 * both ways at every level, too long for the deepest vectors: the
	 * dump compares those. */
	if (n < 1000) {
		w2 = cJSON_ParseWithLengthOpts(s, n, NULL, false);
		ck_assert_msg(cJSON_Compare(j, w, true) ==
				      cJSON_Compare(w2, w, true),
			      "%.*s", (int)n, s);
		cJSON_Delete(w2);
	}
	a = dump(j);
	b = dump(w);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	cJSON_Delete(j);
	cJSON_Delete(w);
}

/* The raw node @r as the tree its text parses to, in place. */
static void unraw(cJSON *r)
{
	cJSON *t = cJSON_Parse(r->valuestring);

	ck_assert_ptr_nonnull(t);
	cJSON_free(r->valuestring);
	r->type = t->type;
	r->child = t->child;
	r->valuestring = t->valuestring;
	r->valueint = t->valueint;
	r->valuedouble = t->valuedouble;
	t->child = NULL;
	t->valuestring = NULL;
	cJSON_Delete(t);
}

/* engy_json_parse_lazy() of an object holding @v as a built member, a
 * raw one (its text @v exactly) and an array's element: with @taken, the
 * tree of cJSON's whole parse once the raw member is parsed back. */
static void lazy_as_cjson(const char *v, bool taken)
{
	static const char *const keys[] = { "r", NULL };
	const char *t;
	char *s, *a, *b;
	cJSON *j, *w;
	size_t tn;
	int n;

	n = asprintf(&s, " {\"v\" :\t%s ,\"r\":%s,\n\"v\":[%s]}\r\n", v, v, v);
	ck_assert_int_gt(n, 0);
	j = engy_json_parse_lazy(s, (size_t)n, keys);
	if (!taken) {
		ck_assert_msg(!j, "took %s", s);
		free(s);
		return;
	}
	ck_assert_msg(j != NULL, "did not take %s", s);
	w = cJSON_ParseWithLength(s, (size_t)n);
	ck_assert_ptr_nonnull(w);
	ck_assert(cJSON_IsRaw(j->child->next));
	/* the value's text, without the white space around it */
	t = v + strspn(v, " \t\n\r");
	for (tn = strlen(t); tn && strchr(" \t\n\r", t[tn - 1]); tn--)
		;
	ck_assert_uint_eq(strlen(j->child->next->valuestring), tn);
	ck_assert(memcmp(j->child->next->valuestring, t, tn) == 0);
	unraw(j->child->next);
	a = dump(j);
	b = dump(w);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	cJSON_Delete(j);
	cJSON_Delete(w);
	free(s);
}

/* Nested @depth containers deep (arrays, or objects with @obj), a 1 at
 * the bottom. */
static char *nested(unsigned depth, bool obj)
{
	char *s = malloc(depth * 6 + 2), *p = s;
	unsigned i;

	ck_assert_ptr_nonnull(s);
	for (i = 0; i < depth; i++)
		p += sprintf(p, "%s", obj ? "{\"a\":" : "[");
	*p++ = '1';
	for (i = 0; i < depth; i++)
		*p++ = obj ? '}' : ']';
	*p = '\0';
	return s;
}

/* engy_json_parse() and engy_json_parse_lazy(): whatever they take is
 * exactly cJSON's tree, node for node (the dump compares the doubles'
 * bits, so -0 and the last bit of a rounding count), with cJSON's end;
 * whatever they leave is NULL (the caller's cJSON parse decides). */
/* Short decimals ("0.7", "-12.250") are converted as an integer over a
 * power of ten: against strtod() (through cJSON) on every split of up to
 * 15 digits, with digits from a fixed-seed generator, signs, trailing
 * zeros and the boundary values. */
START_TEST(test_json_parse_decimals)
{
	static const char *const fixed[] = {
		"0.7",
		"-0.0",
		"0.1",
		"0.3",
		"2.675",
		"1.005",
		"999999999999999.9",
		"0.000000000000001",
		"9.999999999999999",
		"123456789012345.6",
		"0.30000000000000004",
		"5e-1",
		"1.5E2",
	};
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	char t[64];
	size_t i;
	int len, dotpos, k;

	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		parse_as_cjson(fixed[i], strlen(fixed[i]), true);
	for (i = 0; i < 60000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		len = 1 + (int)(x % 17); /* digits: 1..17 */
		dotpos = 1 +
			 (int)((x >> 8) % (unsigned)len); /* after this many */
		k = 0;
		if ((x >> 20) & 1)
			t[k++] = '-';
		for (int d = 0; d < len; d++) {
			if (d == dotpos)
				t[k++] = '.';
			/* no leading zero before more digits */
			t[k++] = (char)('0' +
					(d == 0 && dotpos > 1
						 ? 1 + (x >> (24 + d % 30)) % 9
						 : (x >> (24 + d % 30)) % 10));
		}
		if (dotpos == len) {
			t[k++] = '.';
			t[k++] = (char)('0' + (x >> 60) % 10);
		}
		t[k] = '\0';
		parse_as_cjson(t, (size_t)k, true);
	}
}
END_TEST

START_TEST(test_json_parse)
{
	static const struct {
		const char *s;
		bool taken;
		bool member; /* a whole value that can sit in an object */
	} v[] = {
		/* numbers: the direct path, strtod's, cJSON's saturation */
		{ "0", true, true },
		{ "-0", true, true },
		{ "1", true, true },
		{ "-7", true, true },
		{ "2147483647", true, true },
		{ "2147483648", true, true },
		{ "-2147483648", true, true },
		{ "-2147483649", true, true },
		{ "999999999999999", true, true },
		{ "-999999999999999", true, true },
		{ "1000000000000000", true, true },
		{ "9007199254740993", true, true },
		{ "123456789012345678", true, true },
		{ "18446744073709551617", true, true },
		{ "0.1", true, true },
		{ "-0.0", true, true },
		{ "1E+2", true, true },
		{ "1e-2", true, true },
		{ "12.5E-3", true, true },
		{ "1e400", true, true },
		{ "-1e400", true, true },
		{ "1e-400", true, true },
		{ "4.9e-324", true, true },
		{ "2.2250738585072011e-308", true, true },
		{ "0.30000000000000004", true, true },
		{ "100000000000000000000000000000000000000000000000000000000000000",
		  true, true },
		{ "0.1000000000000000055511151231257827021181583404541015625000000",
		  true, true },
		{ "-0.1000000000000000055511151231257827021181583404541015625000000",
		  false, false },
		{ "1000000000000000000000000000000000000000000000000000000000000000",
		  false, false },
		{ "01", false, false },
		{ "-01", false, false },
		{ "+1", false, false },
		{ ".5", false, false },
		{ "1.", false, false },
		{ "1e", false, false },
		{ "1E+", false, false },
		{ "-", false, false },
		{ "1.5.3", false, false },
		{ "1e5e", false, false },
		{ "1-", false, false },
		{ "[1.5.3]", false, true },
		{ "[01]", false, true },
		/* strings: every escape, UTF-8 of every length, surrogates */
		{ "\"\"", true, true },
		{ "\"plain text, no escapes: 0123456789 {}[]:,\"", true, true },
		{ "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", true, true },
		{ "\"a\\nb\\tc\\\"d and more after the escapes\"", true, true },
		{ "\"\\u0041\\u007f\\u0080\\u07FF\\u0800\\uFFFF\\uE000\\u00e9\"",
		  true, true },
		{ "\"\\ud83d\\ude00\"", true, true },
		{ "\"x\\uD800\\uDC00y\\uDBFF\\uDFFFz\"", true, true },
		{ "\"\\ud800\"", false, true },
		{ "\"\\udc00\"", false, true },
		{ "\"\\udfff\\udfff\"", false, true },
		{ "\"\\ud800\\u0041\"", false, true },
		{ "\"\\ud800\\ud800\"", false, true },
		{ "\"\\ud800x\"", false, true },
		{ "\"\\u0000\"", false, true },
		{ "\"a\\u0000b\"", false, true },
		{ "\"\\u12G4\"", false, true },
		{ "\"\\u12\"", false, true },
		{ "\"\\x\"", false, true },
		{ "\"\\\"", false, false },
		{ "\"a\tb\"", false, true },
		{ "\"a\x01\"", false, true },
		{ "\"h\xc3\xa9llo \xf0\x9f\x98\x80 \x7f\"", true, true },
		{ "\"\xff\xfe\x80 not UTF-8, as cJSON keeps it\"", true, true },
		{ "\"abc", false, false },
		/* containers: empty, nested, duplicate keys, keys escaped */
		{ "{}", true, true },
		{ "[]", true, true },
		{ "{ }", true, true },
		{ "[\t]", true, true },
		{ "[[],{},[[]],{\"a\":{}}]", true, true },
		{ "[1]", true, true },
		{ "{\"a\":1,\"a\":2,\"b\":[true,false,null],\"a\":{\"a\":[]}}",
		  true, true },
		{ "{\"k\\u00e9\\\"y\":1,\"\\ud83d\\ude00\":2,\"\":3}", true,
		  true },
		{ "{\"\\u0000\":1}", false, true },
		{ " \t\n\r{ \t\n\r\"a\" \t\n\r: \t\n\r[ 1 , \"x\" ,\n{ } ] ,\r\"b\"\t:null\n}",
		  true, true },
		{ "[1,\x0b"
		  "2]",
		  false, true },
		{ "[1,\x01 2]", false, true },
		{ "[1,]", false, false },
		{ "[1 2]", false, false },
		{ "{\"a\"}", false, false },
		{ "{\"a\":}", false, false },
		{ "{\"a\":1,}", false, false },
		{ "{a:1}", false, false },
		{ "[1,2", false, false },
		{ "{\"a\":1", false, false },
		{ "[", false, false },
		{ "]", false, false },
		{ "   ", false, false },
		/* top-level scalars, and text after the value (the caller's) */
		{ "true", true, true },
		{ "false", true, true },
		{ "null", true, true },
		{ "42", true, true },
		{ "\"s\"", true, true },
		{ "tru", false, false },
		{ "nul", false, false },
		{ "True", false, false },
		{ "{\"a\":1}xyz", true, false },
		{ "[1]]", true, false },
		{ "1 2", true, false },
		{ "1x", true, false },
		{ "1,", true, false },
		{ "truex", true, false },
		{ "nullnull", true, false },
		{ "\"a\"b", true, false },
		{ "{} \n", true, false },
		{ "\x01\x1f 7", true, false },
		{ "\xef\xbb\xbf{}", false, false },
	};
	char *d;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		parse_as_cjson(v[i].s, strlen(v[i].s), v[i].taken);
		if (v[i].member)
			lazy_as_cjson(v[i].s, v[i].taken);
	}
	/* a NUL before the value is white space to cJSON too; none is no
	 * value; a value cut short is not one */
	parse_as_cjson("\0 7", 3, true);
	parse_as_cjson("7", 0, false);
	parse_as_cjson("[1,2]", 4, false);
	parse_as_cjson("\"ab\"", 3, false);
	parse_as_cjson("123", 2, true);
	/* Strings and numbers are scanned eight bytes at a time: a special
	 * byte, or a number's end, at every place in a word. */
	for (i = 0; i < 20; i++) {
		/* a byte in a string, and whether the string is taken */
		static const struct {
			const char *s;
			bool ok;
		} mid[] = {
			{ "\x01", false },   { "\x1f", false },
			{ "\x7f", true },    { "\x80", true },
			{ "\xff", true },    { "\\n", true },
			{ "\\u00e9", true }, { "\"", true },
		};
		char buf[64], num[32];
		size_t k, n;

		for (k = 0; k < sizeof(mid) / sizeof(mid[0]); k++) {
			n = (size_t)snprintf(buf, sizeof(buf), "\"%.*s%s%s\"",
					     (int)i, "abcdefghijklmnopqrstuvw",
					     mid[k].s, "0123456789abcdefghij");
			parse_as_cjson(buf, n, mid[k].ok);
			ck_assert_msg(
				(engy_json_skip(buf, buf + n, 8) == buf + n) ==
					(mid[k].ok && mid[k].s[0] != '"'),
				"%s", buf);
		}
		snprintf(num, sizeof(num), "%.*s", (int)i + 1,
			 "98765432109876543210");
		n = (size_t)snprintf(buf, sizeof(buf), "[%s,-%s]", num, num);
		parse_as_cjson(buf, n, true);
		ck_assert_ptr_eq(engy_json_skip(buf, buf + n, 8), buf + n);
		n = (size_t)snprintf(buf, sizeof(buf), "[%s:12345678]", num);
		parse_as_cjson(buf, n, false);
		ck_assert_ptr_null(engy_json_skip(buf, buf + n, 8));
		n = (size_t)snprintf(buf, sizeof(buf), "[%s/12345678]", num);
		parse_as_cjson(buf, n, false);
		ck_assert_ptr_null(engy_json_skip(buf, buf + n, 8));
	}
	/* nesting: ENGY_JSON_PARSE_DEPTH containers, not one more (the
	 * lazy object counts as one of them) */
	d = nested(ENGY_JSON_PARSE_DEPTH, false);
	parse_as_cjson(d, strlen(d), true);
	free(d);
	d = nested(ENGY_JSON_PARSE_DEPTH + 1, false);
	parse_as_cjson(d, strlen(d), false);
	free(d);
	d = nested(ENGY_JSON_PARSE_DEPTH, true);
	parse_as_cjson(d, strlen(d), true);
	free(d);
	d = nested(ENGY_JSON_PARSE_DEPTH + 1, true);
	parse_as_cjson(d, strlen(d), false);
	free(d);
	d = nested(ENGY_JSON_PARSE_DEPTH - 2, false);
	lazy_as_cjson(d, true); /* in the array: one level more */
	free(d);
	d = nested(ENGY_JSON_PARSE_DEPTH - 1, false);
	lazy_as_cjson(d, false);
	free(d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("minerproto");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_leg_plan);
	tcase_add_test(tc, test_urls);
	tcase_add_test(tc, test_meta_parse);
	tcase_add_test(tc, test_ids);
	tcase_add_test(tc, test_hello);
	tcase_add_test(tc, test_heartbeat_chunk_error);
	tcase_add_test(tc, test_response);
	tcase_add_test(tc, test_frames_in);
	tcase_add_test(tc, test_params);
	tcase_add_test(tc, test_checkpoint);
	tcase_add_test(tc, test_json_skip);
	tcase_add_test(tc, test_json_lazy);
	tcase_add_test(tc, test_json_parse);
	tcase_add_test(tc, test_json_parse_decimals);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
