/* SPDX-License-Identifier: MIT */
/*
 * backend-sglang's rules without a serve: /generate bodies, the chunk
 * plan with the one-token overlap, how cumulative or incremental lists
 * line up with kept tokens, what serve errors become, the model facts
 * from the serve and the checkpoint; and the built module as the host
 * sees it (descriptor, options with their environment twins, create's
 * refusals, info() from a checkpoint).  tests/integration/backend_sglang.sh
 * drives it against serves.
 *
 * Oracle: hand-derived by the test's author from sglang's /generate API
 * and specs/serve.md; the serve side is exercised against scripted serves
 * in backend_sglang.sh.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <engy/backend.h>
#include <engy/plugin.h>

#include "fake_host.h"
#include "sgl_resp.h"
#include "sgl_model.h"
#include "sgl_request.h"

static cJSON *body_of(const struct sgl_call_spec *c)
{
	size_t len;
	char *b = sgl_body_generate(c, &len);
	cJSON *j;

	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(len, strlen(b));
	j = cJSON_Parse(b);
	ck_assert_msg(j != NULL, "not JSON: %s", b);
	free(b);
	return j;
}

START_TEST(test_body_generate)
{
	static const uint32_t prompt[] = { 151644, 872, 198 }, out[] = { 7, 0 };
	static const uint32_t stop[] = { 151645 };
	struct sgl_sampling sp = { .temperature = 0, .top_p = 1 };
	struct sgl_call_spec c = {
		.prompt = prompt,
		.n_prompt = 3,
		.out = out,
		.n_out = 0,
		.ask = 16,
		.sp = &sp,
		.rid = "engy-ab",
		.stream = true,
		.hidden = true,
		.logprob = true,
	};
	size_t len;
	char *b = sgl_body_generate(&c, &len);
	cJSON *j, *s;

	/* specs/protocol.md §4's body, field for field. */
	ck_assert_str_eq(b, "{\"input_ids\":[151644,872,198],"
			    "\"sampling_params\":{\"max_new_tokens\":16,"
			    "\"temperature\":0},\"rid\":\"engy-ab\","
			    "\"return_logprob\":true,"
			    "\"return_hidden_states\":true,\"stream\":true}");
	free(b);
	/* engy's GEMM extension (specs/serve.md), only when asked */
	c.gemm_trace = true;
	b = sgl_body_generate(&c, &len);
	ck_assert_ptr_nonnull(strstr(
		b,
		"\"return_hidden_states\":true,\"return_gemm_trace\":true,"));
	free(b);
	c.gemm_trace = false;

	/* A constraint: sglang's sampling_params.json_schema, a string. */
	sp.json_schema = "{\"enum\":[\"a\\\"b\"]}";
	b = sgl_body_generate(&c, &len);
	j = cJSON_Parse(b);
	ck_assert_str_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(j, "sampling_params"),
				    "json_schema")
			->valuestring,
		"{\"enum\":[\"a\\\"b\"]}");
	cJSON_Delete(j);
	free(b);
	sp.json_schema = NULL;

	/* top_logprobs: sglang's top_logprobs_num, only with return_logprob */
	c.top_n = 3;
	b = sgl_body_generate(&c, &len);
	ck_assert_ptr_nonnull(strstr(b, "\"return_logprob\":true,"
					"\"top_logprobs_num\":3,"));
	free(b);
	c.logprob = false;
	b = sgl_body_generate(&c, &len);
	ck_assert_ptr_null(strstr(b, "top_logprobs_num"));
	free(b);
	c.logprob = true;
	c.top_n = 0;

	/* A continuation: kept tokens follow the prompt; every sampling
	 * option that is not off is sent. */
	sp.temperature = 0.5;
	sp.top_p = 0.9;
	sp.top_k = 20;
	sp.has_seed = true;
	sp.seed = 42;
	sp.stop = stop;
	sp.n_stop = 1;
	c.n_out = 2;
	c.stream = false;
	c.hidden = false;
	c.all_positions = true;
	j = body_of(&c);
	s = cJSON_GetObjectItem(j, "input_ids");
	ck_assert_int_eq(cJSON_GetArraySize(s), 5);
	ck_assert_int_eq(cJSON_GetArrayItem(s, 3)->valueint, 7);
	ck_assert_int_eq(cJSON_GetArrayItem(s, 4)->valueint, 0);
	s = cJSON_GetObjectItem(j, "sampling_params");
	ck_assert(cJSON_GetObjectItem(s, "temperature")->valuedouble == 0.5);
	ck_assert(cJSON_GetObjectItem(s, "top_p")->valuedouble == 0.9);
	ck_assert_int_eq(cJSON_GetObjectItem(s, "top_k")->valueint, 20);
	ck_assert_int_eq(cJSON_GetObjectItem(s, "sampling_seed")->valueint, 42);
	ck_assert_int_eq(
		cJSON_GetArrayItem(cJSON_GetObjectItem(s, "stop_token_ids"), 0)
			->valueint,
		151645);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "stream")));
	ck_assert_ptr_null(cJSON_GetObjectItem(j, "return_hidden_states"));
	ck_assert_int_eq(cJSON_GetObjectItem(j, "logprob_start_len")->valueint,
			 0);
	cJSON_Delete(j);

	/* Only kept tokens (a prompt of none is not a thing, but no comma
	 * may lead the list either way). */
	c.n_prompt = 0;
	j = body_of(&c);
	s = cJSON_GetObjectItem(j, "input_ids");
	ck_assert_int_eq(cJSON_GetArraySize(s), 2);
	cJSON_Delete(j);

	b = sgl_body_abort("engy-ab-c2", &len);
	ck_assert_str_eq(b, "{\"rid\":\"engy-ab-c2\"}");
	free(b);
}
END_TEST

START_TEST(test_rid_ok)
{
	char long_rid[130];

	ck_assert(sgl_rid_ok("engy-0123456789abcdef"));
	ck_assert(sgl_rid_ok("a"));
	ck_assert(!sgl_rid_ok(""));
	ck_assert(!sgl_rid_ok("a\"b"));
	ck_assert(!sgl_rid_ok("a\\b"));
	ck_assert(!sgl_rid_ok("a\nb"));
	ck_assert(!sgl_rid_ok("caf\xc3\xa9"));
	memset(long_rid, 'r', 129);
	long_rid[129] = '\0';
	ck_assert(!sgl_rid_ok(long_rid));
	long_rid[128] = '\0';
	ck_assert(sgl_rid_ok(long_rid));
}
END_TEST

/* The calls of a 30-token greedy generation with gen_chunk 7. */
START_TEST(test_plan_overlap)
{
	static const struct {
		size_t feed;
		uint32_t ask, drop;
	} want[] = { { 0, 7, 0 },
		     { 6, 8, 1 },
		     { 13, 8, 1 },
		     { 20, 8, 1 },
		     { 27, 3, 1 } };
	struct sgl_chunk c;
	size_t n_out = 0, i;

	for (i = 0; i < 5; i++) {
		ck_assert_int_eq(sgl_plan_chunk(n_out, 30, 7, true, &c), 0);
		ck_assert_uint_eq(c.feed_out, want[i].feed);
		ck_assert_uint_eq(c.ask, want[i].ask);
		ck_assert_uint_eq(c.drop, want[i].drop);
		/* All but the last kept token go back; the regenerated one
		 * is dropped, so each call keeps ask - drop new tokens. */
		ck_assert_uint_eq(c.feed_out + c.drop, n_out);
		n_out += c.ask - c.drop;
	}
	ck_assert_uint_eq(n_out, 30);
	ck_assert_int_eq(sgl_plan_chunk(30, 30, 7, true, &c), 1);
	ck_assert_int_eq(sgl_plan_chunk(31, 30, 7, true, &c), 1);
	/* One call when it fits; a sampled continuation sends everything. */
	ck_assert_int_eq(sgl_plan_chunk(0, 4096, 4096, true, &c), 0);
	ck_assert(c.ask == 4096 && c.drop == 0 && c.feed_out == 0);
	ck_assert_int_eq(sgl_plan_chunk(7, 20, 7, false, &c), 0);
	ck_assert(c.ask == 7 && c.drop == 0 && c.feed_out == 7);
	ck_assert_int_eq(sgl_plan_chunk(14, 20, 7, false, &c), 0);
	ck_assert(c.ask == 6 && c.feed_out == 14);
}
END_TEST

START_TEST(test_chunk_more)
{
	/* Only a call cut by length that got all it asked for, in budget. */
	ck_assert(sgl_chunk_more(ENGY_SGLRESP_FINISH_LENGTH, 8, 8, 14, 30));
	ck_assert(!sgl_chunk_more(ENGY_SGLRESP_FINISH_STOP, 8, 8, 14, 30));
	ck_assert(!sgl_chunk_more(ENGY_SGLRESP_FINISH_ABORT, 8, 8, 14, 30));
	ck_assert(!sgl_chunk_more(ENGY_SGLRESP_FINISH_LENGTH, 5, 8, 14, 30));
	ck_assert(!sgl_chunk_more(ENGY_SGLRESP_FINISH_LENGTH, 8, 8, 30, 30));
}
END_TEST

START_TEST(test_list_new_from)
{
	ck_assert_int_eq(sgl_list_new_from(0, 4, 4), 0); /* first */
	ck_assert_int_eq(sgl_list_new_from(3, 5, 5), 3); /* cumulative */
	ck_assert_int_eq(sgl_list_new_from(3, 5, -1), 3);
	ck_assert_int_eq(sgl_list_new_from(3, 2, 5), 0);   /* a delta */
	ck_assert_int_eq(sgl_list_new_from(3, 3, 3), 3);   /* none new */
	ck_assert_int_eq(sgl_list_new_from(5, 3, -1), -1); /* shrank */
	ck_assert_int_eq(sgl_list_new_from(5, 3, 5), -1);
	ck_assert_int_eq(sgl_list_new_from(0, 0, 0), 0);
}
END_TEST

START_TEST(test_take)
{
	struct sgl_avail a = { .ids = 5,
			       .rows = 5,
			       .lps = 5,
			       .taken = 0,
			       .drop = 0,
			       .room = 100 };

	ck_assert_uint_eq(sgl_take(&a), 5);
	a.rows = 2; /* rows lag: wait for them */
	ck_assert_uint_eq(sgl_take(&a), 2);
	a.rows = SIZE_MAX; /* not asked */
	a.lps = 3;
	ck_assert_uint_eq(sgl_take(&a), 3);
	a.lps = SIZE_MAX;
	a.room = 4; /* the budget ends first */
	ck_assert_uint_eq(sgl_take(&a), 4);
	a.drop = 1; /* the dropped token is not kept */
	ck_assert_uint_eq(sgl_take(&a), 5);
	a.taken = 3; /* never backwards */
	a.ids = 2;
	ck_assert_uint_eq(sgl_take(&a), 3);
	a.ids = 10;
	a.taken = 3;
	a.room = 2; /* 2 kept after those already in */
	ck_assert_uint_eq(sgl_take(&a), 5);
	a.room = 0;
	ck_assert_uint_eq(sgl_take(&a), 3);
}
END_TEST

START_TEST(test_error_text)
{
	char out[512];

	sgl_error_text(400,
		       "The server is not configured to return hidden "
		       "states. Please set `--enable-return-hidden-states`",
		       out, sizeof(out));
	ck_assert_str_eq(out, SGL_NO_HIDDEN_MSG);
	ck_assert(strstr(out, "serve returned no hidden states: start sglang "
			      "with --enable-return-hidden-states") == out);
	sgl_error_text(500, "internal boom", out, sizeof(out));
	ck_assert_str_eq(out, "serve returned HTTP 500: internal boom");
	sgl_error_text(404, "", out, sizeof(out));
	ck_assert_str_eq(out, "serve returned HTTP 404");
	sgl_error_text(0, "stream boom", out, sizeof(out));
	ck_assert_str_eq(out, "serve error: stream boom");
	sgl_error_text(500, "x", out, 10);
	ck_assert_uint_eq(strlen(out), 9);
}
END_TEST

#define J(s) s, strlen(s)

START_TEST(test_model_facts)
{
	struct engy_model_info mi = { .size = sizeof(mi) };

	ck_assert_int_eq(
		sgl_parse_model_info(
			J("{\"model_path\":\"/m/Qwen3\","
			  "\"tokenizer_path\":\"/m/Qwen3\",\"is_generation\":"
			  "true}"),
			&mi),
		0);
	ck_assert_str_eq(mi.path, "/m/Qwen3");
	ck_assert_uint_eq(mi.hidden_size, 0);
	ck_assert_int_eq(
		sgl_parse_model_info(
			J("{\"model_path\":\"/m/x\","
			  "\"hidden_size\":2048,\"vocab_size\":151936}"),
			&mi),
		0);
	ck_assert_uint_eq(mi.hidden_size, 2048);
	ck_assert_uint_eq(mi.vocab_size, 151936);
	ck_assert_int_eq(
		sgl_parse_models(
			J("{\"object\":\"list\",\"data\":"
			  "[{\"id\":\"Qwen3.6\",\"max_model_len\":262144}]}"),
			&mi),
		0);
	ck_assert_str_eq(mi.name, "Qwen3.6");
	ck_assert_uint_eq(mi.max_context, 262144);
	ck_assert_int_eq(sgl_parse_models(J("{\"data\":[]}"), &mi), 0);
	ck_assert_str_eq(mi.name, "Qwen3.6");
	ck_assert_int_eq(sgl_parse_models(J("<html>"), &mi), -EBADMSG);
	ck_assert_int_eq(sgl_parse_model_info(J("[1]"), &mi), -EBADMSG);

	/* config.json: text_config wins; bad numbers are left out. */
	memset(&mi, 0, sizeof(mi));
	ck_assert_int_eq(
		sgl_parse_config(
			J("{\"hidden_size\":1,\"vocab_size\":"
			  "-5,\"eos_token_id\":[1,2,3,4,5],\"text_config\":{"
			  "\"hidden_size\":2048,\"vocab_size\":248320,"
			  "\"max_position_embeddings\":262144}}"),
			&mi),
		0);
	ck_assert_uint_eq(mi.hidden_size, 2048);
	ck_assert_uint_eq(mi.vocab_size, 248320);
	ck_assert_uint_eq(mi.max_context, 262144);
	ck_assert(mi.eos_ids[0] == 1 && mi.eos_ids[3] == 4);
	ck_assert_int_eq(
		sgl_parse_gen_config(J("{\"eos_token_id\":151645}"), &mi), 0);
	ck_assert(mi.eos_ids[0] == 151645 && mi.eos_ids[1] == 0);
	ck_assert_int_eq(sgl_parse_gen_config(J("{\"eos_token_id\":[151645,"
						"151643]}"),
					      &mi),
			 0);
	ck_assert(mi.eos_ids[0] == 151645 && mi.eos_ids[1] == 151643 &&
		  mi.eos_ids[2] == 0);
	ck_assert_int_eq(sgl_parse_config(J("{\"hidden_size\":2.5}"), &mi), 0);
	ck_assert_uint_eq(mi.hidden_size, 2048);
	ck_assert_int_eq(sgl_parse_config(J(""), &mi), -EBADMSG);
}
END_TEST

/* ---- the module -------------------------------------------------------- */

static void *dl;
static const struct engy_plugin *plug;
static const struct engy_backend_ops *ops;

static void load(void)
{
	dl = dlopen(BACKEND_SGLANG_SO, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(dl != NULL, "dlopen: %s", dlerror());
	plug = dlsym(dl, ENGY_PLUGIN_SYMBOL);
	ck_assert_ptr_nonnull(plug);
	ops = plug->ops;
}

static const struct engy_opt *opt(const char *name)
{
	const struct engy_opt *o;

	for (o = plug->opts; o->name; o++)
		if (strcmp(o->name, name) == 0)
			return o;
	ck_abort_msg("no option %s", name);
	return NULL;
}

struct conf {
	uint8_t *b;
	const char *urls[2];
};

/* Defaults as the host applies them (strings stay NULL). */
static void fill(struct conf *c)
{
	const struct engy_opt *o;

	c->b = calloc(1, plug->conf_size);
	ck_assert_ptr_nonnull(c->b);
	c->urls[0] = "http://127.0.0.1:8000";
	for (o = plug->opts; o->name; o++) {
		int64_t i;
		double d;
		bool t;
		struct engy_strv sv = { 1, c->urls };

		switch (o->type) {
		case ENGY_OPT_INT:
			i = strtoll(o->def, NULL, 10);
			memcpy(c->b + o->offset, &i, sizeof(i));
			break;
		case ENGY_OPT_FLOAT:
			d = strtod(o->def, NULL);
			memcpy(c->b + o->offset, &d, sizeof(d));
			break;
		case ENGY_OPT_BOOL:
			t = strcmp(o->def, "true") == 0;
			memcpy(c->b + o->offset, &t, sizeof(t));
			break;
		case ENGY_OPT_STR_LIST:
			memcpy(c->b + o->offset, &sv, sizeof(sv));
			break;
		default:
			break;
		}
	}
}

static void set(struct conf *c, const char *name, const void *v, size_t n)
{
	memcpy(c->b + opt(name)->offset, v, n);
}

START_TEST(test_descriptor)
{
	load();
	ck_assert_uint_eq(plug->kind, ENGY_KIND_BACKEND);
	ck_assert_str_eq(plug->name, "backend-sglang");
	ck_assert(plug->create && plug->start && plug->stop && plug->destroy);
	ck_assert_uint_ge(ops->size, sizeof(struct engy_backend_ops));
	ck_assert(ops->info && ops->generate && ops->cancel && ops->prefill);
	/* The public miner's environment names. */
	ck_assert_str_eq(opt("gen_chunk")->env, "TOPLOC_GEN_CHUNK");
	ck_assert_str_eq(opt("gen_chunk")->def, "4096");
	ck_assert_str_eq(opt("stream_flush_s")->env, "STREAM_FLUSH_S");
	ck_assert_str_eq(opt("stream_flush_s")->def, "0.05");
	ck_assert_str_eq(opt("max_request_s")->env, "MAX_REQUEST_S");
	ck_assert_str_eq(opt("max_request_s")->def, "1800");
	ck_assert_str_eq(opt("serve_http_s")->env, "SERVE_HTTP_S");
	ck_assert_str_eq(opt("max_inflight")->env, "MAX_INFLIGHT");
	ck_assert_uint_eq(opt("serve_urls")->type, ENGY_OPT_STR_LIST);
	ck_assert_uint_eq(opt("api_key")->flags & ENGY_OPT_SECRET,
			  ENGY_OPT_SECRET);
	ck_assert_ptr_nonnull(opt("checkpoint"));
	ck_assert_ptr_nonnull(opt("connect_timeout_s"));
	dlclose(dl);
}
END_TEST

static void refused(struct conf *c, const char *needle)
{
	struct engy_host *h = fake_host_new("backend-sglang");
	void *inst = (void *)1;

	ck_assert_int_eq(plug->create(h, c->b, &inst), -EINVAL);
	ck_assert_ptr_null(inst);
	ck_assert_msg(strstr(fake_host_log(h), needle) != NULL, "log: %s",
		      fake_host_log(h));
	fake_host_free(h);
	free(c->b);
}

START_TEST(test_create_refuses)
{
	const char *ftp[] = { "ftp://x" }, *path = "/nonexistent/ckpt";
	struct engy_strv none = { 0, NULL }, bad = { 1, ftp };
	struct conf c;
	double d;
	int64_t i;

	load();
	fill(&c);
	set(&c, "serve_urls", &none, sizeof(none));
	refused(&c, "option=serve_urls");
	fill(&c);
	set(&c, "serve_urls", &bad, sizeof(bad));
	refused(&c, "http:// or https://");
	fill(&c);
	d = -1;
	set(&c, "stream_flush_s", &d, sizeof(d));
	refused(&c, "option=stream_flush_s");
	fill(&c);
	d = 0;
	set(&c, "max_request_s", &d, sizeof(d));
	refused(&c, "option=max_request_s");
	fill(&c);
	i = 0;
	set(&c, "gen_chunk", &i, sizeof(i));
	refused(&c, "option=gen_chunk");
	fill(&c);
	set(&c, "checkpoint", &path, sizeof(path));
	refused(&c, "/nonexistent/ckpt/config.json");
	dlclose(dl);
}
END_TEST

/* create() does no I/O but the checkpoint's; info() answers from it. */
START_TEST(test_info_from_checkpoint)
{
	char dir[] = "/tmp/engy-sgl-XXXXXX", path[64];
	struct engy_model_info mi = { .size = sizeof(mi) };
	struct engy_host *h = fake_host_new("backend-sglang");
	const char *ck = dir;
	struct conf c;
	void *inst;
	FILE *f;

	load();
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/config.json", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("{\"hidden_size\":2048,\"vocab_size\":151936,"
	      "\"max_position_embeddings\":40960,\"eos_token_id\":151645}",
	      f);
	fclose(f);

	fill(&c);
	ck_assert_int_eq(plug->create(h, c.b, &inst), 0);
	ck_assert_int_eq(ops->info(inst, &mi), -EAGAIN);
	plug->destroy(inst);

	set(&c, "checkpoint", &ck, sizeof(ck));
	ck_assert_int_eq(plug->create(h, c.b, &inst), 0);
	ck_assert_int_eq(ops->info(inst, &mi), 0);
	ck_assert_uint_eq(mi.size, sizeof(mi));
	ck_assert_uint_eq(mi.hidden_size, 2048);
	ck_assert_uint_eq(mi.vocab_size, 151936);
	ck_assert_uint_eq(mi.max_context, 40960);
	ck_assert_uint_eq(mi.eos_ids[0], 151645);
	ck_assert_str_eq(mi.path, dir);
	ck_assert_str_eq(mi.name, dir + 5);
	plug->destroy(inst);
	fake_host_free(h);
	free(c.b);
	unlink(path);
	rmdir(dir);
	dlclose(dl);
}
END_TEST

static Suite *sgl_suite(void)
{
	Suite *s = suite_create("backend_sglang");
	TCase *tc = tcase_create("rules");
	TCase *tm = tcase_create("module");

	tcase_add_test(tc, test_body_generate);
	tcase_add_test(tc, test_rid_ok);
	tcase_add_test(tc, test_plan_overlap);
	tcase_add_test(tc, test_chunk_more);
	tcase_add_test(tc, test_list_new_from);
	tcase_add_test(tc, test_take);
	tcase_add_test(tc, test_error_text);
	tcase_add_test(tc, test_model_facts);
	suite_add_tcase(s, tc);
	tcase_add_test(tm, test_descriptor);
	tcase_add_test(tm, test_create_refuses);
	tcase_add_test(tm, test_info_from_checkpoint);
	suite_add_tcase(s, tm);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(sgl_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
