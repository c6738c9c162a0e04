/* SPDX-License-Identifier: MIT */
/*
 * The Responses and legacy completions side of the buyer API
 * (lib/buyerapi/resp.c, resp_out.c) and the gateway's stop strings
 * (lib/buyerapi/stop.c): bodies translated into the chat body the miner
 * gets (which the chat template and the miner's field parser accept),
 * the refusals naming their fields, the response object and its event
 * stream, stop strings cut across every chunking.
 *
 * Expected values: the field names, item and event shapes are the OpenAI
 * Responses API reference's; the translations and cut points are worked
 * out by hand here.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buyerapi_check.h"
#include "resp.h"
#include "stop.h"

static char err[256];

static int rparse(const char *json, struct engy_api_req *req)
{
	err[0] = '\0';
	return engy_resp_parse(json, strlen(json), NULL, req, err, sizeof(err));
}

START_TEST(test_resp_items)
{
	struct engy_api_req req;

	ck_assert_int_eq(
		rparse("{\"model\":\"m\",\"instructions\":\"Be brief.\","
		       "\"input\":[{\"role\":\"user\",\"content\":[{\"type\":"
		       "\"input_text\",\"text\":\"Weather?\"}]},"
		       "{\"role\":\"developer\",\"content\":\"Use tools.\"},"
		       "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":"
		       "[{\"type\":\"summary_text\",\"text\":\"think\"}]},"
		       "{\"type\":\"function_call\",\"call_id\":\"c1\","
		       "\"name\":\"w\",\"arguments\":\"{\\\"a\\\":1}\"},"
		       "{\"type\":\"function_call\",\"call_id\":\"c2\","
		       "\"name\":\"w\",\"arguments\":\"{}\"},"
		       "{\"type\":\"function_call_output\",\"call_id\":\"c1\","
		       "\"output\":\"sunny\"},"
		       "{\"type\":\"function_call_output\",\"call_id\":\"c2\","
		       "\"output\":[{\"type\":\"input_text\",\"text\":\"ok\"}]},"
		       "{\"role\":\"assistant\",\"content\":[{\"type\":"
		       "\"output_text\",\"text\":\"Sunny.\"}]},"
		       "{\"role\":\"user\",\"content\":\"thanks\"}],"
		       "\"tools\":[{\"type\":\"function\",\"name\":\"w\","
		       "\"parameters\":{\"type\":\"object\"}}],"
		       "\"tool_choice\":{\"type\":\"function\",\"name\":\"w\"},"
		       "\"max_output_tokens\":7,\"temperature\":0.5,"
		       "\"store\":false,\"stream\":true}",
		       &req),
		0);
	ck_assert_int_eq(req.route, ENGY_ROUTE_RESPONSES);
	ck_assert(req.stream && req.has_max_tokens && req.max_tokens == 7);
	ck_assert_str_eq(req.max_tokens_field, "max_output_tokens");
	ck_assert_int_eq(jsize(req.body, "messages"), 7);
	/* the system texts first, joined */
	ck_assert_str_eq(jstr(req.body, "messages.0.role"), "system");
	ck_assert_str_eq(jstr(req.body, "messages.0.content"),
			 "Be brief.\n\nUse tools.");
	ck_assert_str_eq(jstr(req.body, "messages.1.content"), "Weather?");
	/* reasoning and both calls in one assistant turn */
	ck_assert_str_eq(jstr(req.body, "messages.2.role"), "assistant");
	ck_assert_str_eq(jstr(req.body, "messages.2.reasoning_content"),
			 "think");
	ck_assert_int_eq(jsize(req.body, "messages.2.tool_calls"), 2);
	ck_assert_str_eq(jstr(req.body, "messages.2.tool_calls.1.id"), "c2");
	ck_assert_str_eq(jstr(req.body, "messages.3.role"), "tool");
	ck_assert_str_eq(jstr(req.body, "messages.3.tool_call_id"), "c1");
	ck_assert_str_eq(jstr(req.body, "messages.4.content"), "ok");
	ck_assert_str_eq(jstr(req.body, "messages.5.content"), "Sunny.");
	ck_assert_str_eq(jstr(req.body, "messages.6.content"), "thanks");
	ck_assert_str_eq(jstr(req.body, "tools.0.function.name"), "w");
	ck_assert_str_eq(jstr(req.body, "tool_choice.function.name"), "w");
	ck_assert_int_eq(jnum(req.body, "max_tokens"), 7);
	miner_accepts(&req);
	engy_api_req_free(&req);
}
END_TEST

START_TEST(test_resp_refusals)
{
	static const struct {
		const char *body, *needle;
	} bad[] = {
		{ "{\"model\":\"m\",\"input\":\"x\",\"store\":true}",
		  "store: engy stores nothing (zero data retention)" },
		{ "{\"model\":\"m\",\"input\":\"x\",\"previous_response_id\":"
		  "\"r\"}",
		  "previous_response_id: engy stores nothing" },
		{ "{\"model\":\"m\",\"input\":[{\"type\":\"item_reference\","
		  "\"id\":\"x\"}]}",
		  "input[0]: an item_reference" },
		{ "{\"model\":\"m\",\"input\":[{\"type\":\"web_search_call\"}]}",
		  "input[0].type: \"web_search_call\" items" },
		{ "{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":"
		  "[{\"type\":\"input_image\"}]}]}",
		  "input[0].content[0].type: \"input_image\" parts" },
		{ "{\"model\":\"m\",\"input\":\"x\",\"tools\":[{\"type\":"
		  "\"file_search\"}]}",
		  "tools[0].type: only \"function\"" },
		{ "{\"model\":\"m\",\"input\":[{\"type\":\"function_call\","
		  "\"name\":\"f\"}]}",
		  "input[0].call_id" },
		{ "{\"model\":\"m\"}", "input: missing" },
		{ "{\"input\":\"x\"}", "model: missing" },
		{ "{\"model\":\"m\",\"input\":[]}", "input: empty" },
		{ "{\"model\":\"m\",\"input\":[{\"role\":\"assistant\","
		  "\"content\":\"a\"}]}",
		  "messages: no user query found" },
	};
	struct engy_api_req req;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(rparse(bad[i].body, &req), -EINVAL);
		ck_assert_msg(strstr(err, bad[i].needle), "%s: got %s",
			      bad[i].body, err);
		ck_assert_ptr_null(req.body);
	}
}
END_TEST

START_TEST(test_cmpl)
{
	const char *b =
		"{\"model\":\"m\",\"prompt\":[\"Once\"],\"stop\":\"\\n\","
		"\"stream\":true,\"stream_options\":"
		"{\"include_usage\":true}}";
	struct engy_api_req req;

	ck_assert_int_eq(
		engy_cmpl_parse(b, strlen(b), NULL, &req, err, sizeof(err)), 0);
	ck_assert_int_eq(req.route, ENGY_ROUTE_COMPLETIONS);
	ck_assert(req.stream && req.include_usage);
	ck_assert_str_eq(jstr(req.body, "messages.0.content"), "Once");
	ck_assert_int_eq(jnum(req.body, "max_tokens"), 16);
	ck_assert(cJSON_IsFalse(
		jget(req.body, "chat_template_kwargs.enable_thinking")));
	ck_assert_str_eq(jstr(req.body, "stop"), "\n");
	miner_accepts(&req);
	engy_api_req_free(&req);
	b = "{\"model\":\"m\",\"prompt\":[1,2]}";
	ck_assert_int_eq(
		engy_cmpl_parse(b, strlen(b), NULL, &req, err, sizeof(err)),
		-EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "prompt: expected a string"));
}
END_TEST

/* Every chunking of @text through the filter gives @want and a match
 * exactly when @hit. */
static void chunkings(const char *stops, const char *text, const char *want,
		      bool hit)
{
	cJSON *body = jparse(stops);
	struct engy_api_stopper f;
	struct engy_api_result r = { .content = text,
				     .content_len = strlen(text),
				     .finish_reason = "stop" };
	struct engy_sse_out o;
	size_t piece, at, n = strlen(text);

	for (piece = 1; piece <= n; piece++) {
		engy_api_stopper_init(&f, body);
		engy_sse_out_init(&o);
		for (at = 0; at < n; at += piece)
			ck_assert_int_eq(
				engy_api_stopper_feed(
					&f, text + at,
					n - at < piece ? n - at : piece, &o),
				0);
		if (!hit) /* the rest is let out at the end */
			engy_sse_out_add(&o, f.held, f.held_len);
		ck_assert_int_eq(o.len, strlen(want));
		ck_assert(!memcmp(o.buf ? o.buf : "", want, o.len));
		ck_assert(f.hit == hit);
		engy_sse_out_free(&o);
		engy_api_stopper_free(&f);
	}
	engy_api_stops_init(&f.st, body);
	engy_api_result_stops(&r, &f.st, 0);
	ck_assert_int_eq(r.content_len, strlen(want));
	ck_assert((r.stop_sequence != NULL) == hit);
	cJSON_Delete(body);
}

START_TEST(test_stops)
{
	chunkings("{\"stop\":\"\\n\"}", "ab.\ncd", "ab.", true);
	chunkings("{\"stop\":[\"}\"]}", "{\"a\":1} tail", "{\"a\":1", true);
	chunkings("{\"stop\":[\"END\"]}", "xENDyy", "x", true);
	chunkings("{\"stop\":[\"END\"]}", "xENyEN", "xENyEN", false);
	/* the match that ends first wins, however the text came */
	chunkings("{\"stop\":[\"abcd\",\"bc\"]}", "zabcd", "za", true);
	chunkings("{\"stop\":[\"ab\",\"xaby\"]}", "qxaby", "qx", true);
	chunkings("{\"stop\":[\"ü\"]}", "grün", "gr", true);
	chunkings("{}", "anything\n}", "anything\n}", false);
}
END_TEST

START_TEST(test_finish_rules)
{
	cJSON *body = jparse("{\"stop\":[\"\\n\",\"}\"]}");
	struct engy_api_stops st;
	struct engy_api_result r = { .content = "abc",
				     .content_len = 3,
				     .finish_reason = "stop",
				     .completion_tokens = 8 };

	engy_api_stops_init(&st, body);
	engy_api_result_stops(&r, &st, 8);
	ck_assert_str_eq(r.finish_reason, "length");
	r.finish_reason = "stop";
	engy_api_result_stops(&r, &st, 9);
	ck_assert_str_eq(r.finish_reason, "stop");
	/* the miner's matched stop, only when it is one of the buyer's */
	r.matched_stop = "}";
	engy_api_result_stops(&r, &st, 8);
	ck_assert_str_eq(r.finish_reason, "stop");
	ck_assert_str_eq(r.stop_sequence, "}");
	r.matched_stop = "injected";
	engy_api_result_stops(&r, &st, 0);
	ck_assert_ptr_null(r.stop_sequence);
	cJSON_Delete(body);
}
END_TEST

START_TEST(test_resp_stream)
{
	struct engy_api_req req;
	struct engy_resp_stream s;
	struct engy_sse_out o;
	struct engy_api_call call = { "call_1", "w", "{\"a\":1}" };
	struct engy_api_result r = { .content = "Hi there",
				     .content_len = 8,
				     .reasoning = "hmm",
				     .reasoning_len = 3,
				     .calls = &call,
				     .n_calls = 1,
				     .finish_reason = "tool_calls",
				     .prompt_tokens = 5,
				     .completion_tokens = 4 };
	static const char *const want[] = {
		"response.created",
		"response.in_progress",
		"response.output_item.added",
		"response.reasoning_summary_part.added",
		"response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done",
		"response.reasoning_summary_part.done",
		"response.output_item.done",
		"response.output_item.added",
		"response.content_part.added",
		"response.output_text.delta",
		"response.output_text.delta",
		"response.output_text.done",
		"response.content_part.done",
		"response.output_item.done",
		"response.output_item.added",
		"response.function_call_arguments.delta",
		"response.function_call_arguments.done",
		"response.output_item.done",
		"response.completed",
	};
	struct evs v;
	int i;

	ck_assert_int_eq(rparse("{\"model\":\"m\",\"input\":\"x\"}", &req), 0);
	engy_sse_out_init(&o);
	ck_assert_int_eq(engy_resp_stream_init(&s, &req, "resp_1", 1), 0);
	engy_resp_stream_text(&s, NULL, 0, "hmm", 3, &o);
	engy_resp_stream_text(&s, "Hi", 2, NULL, 0, &o);
	ck_assert_int_eq(engy_resp_stream_finish(&s, &r, &o), 0);
	evs_read(&v, o.buf);
	ck_assert_int_eq(v.n, (int)(sizeof(want) / sizeof(want[0])));
	for (i = 0; i < v.n; i++) {
		ck_assert_str_eq(v.e[i].name, want[i]);
		ck_assert_str_eq(jstr(v.e[i].json, "type"), want[i]);
		ck_assert_int_eq(jnum(v.e[i].json, "sequence_number"), i);
	}
	ck_assert_str_eq(jstr(v.e[11].json, "delta"), " there");
	ck_assert_str_eq(jstr(v.e[12].json, "text"), "Hi there");
	ck_assert_str_eq(jstr(v.e[17].json, "arguments"), "{\"a\":1}");
	ck_assert_str_eq(jstr(v.e[18].json, "item.call_id"), "call_1");
	ck_assert_str_eq(jstr(v.e[19].json, "response.status"), "completed");
	ck_assert_str_eq(jstr(v.e[19].json, "response.output.0.type"),
			 "reasoning");
	ck_assert_str_eq(jstr(v.e[19].json, "response.output.1.content.0.text"),
			 "Hi there");
	ck_assert_str_eq(jstr(v.e[19].json, "response.output.2.name"), "w");
	ck_assert_int_eq(jnum(v.e[19].json, "response.usage.total_tokens"), 9);
	evs_free(&v);
	engy_resp_stream_free(&s);
	engy_sse_out_free(&o);
	engy_api_req_free(&req);
}
END_TEST

/* logprobs: true reaches the miner; its logprobs come back rendered from
 * checked fields, and a malformed list (a positive or non-number
 * logprob, a token not a string) is dropped, not relayed. */
START_TEST(test_logprobs)
{
	const char *b = "{\"model\":\"m\",\"logprobs\":true,\"messages\":"
			"[{\"role\":\"user\",\"content\":\"x\"}]}";
	static const char *const outs[] = {
		"{\"choices\":[{\"finish_reason\":\"stop\",\"message\":{"
		"\"content\":\"Hi!\"},\"logprobs\":{\"content\":[{\"token\":"
		"\"Hi\",\"logprob\":-0.5,\"bytes\":[72,105],\"top_logprobs\":"
		"[]},{\"token\":\"!\",\"logprob\":-1.25}]}}]}",
		"{\"choices\":[{\"finish_reason\":\"stop\",\"message\":{"
		"\"content\":\"Hi\"},\"logprobs\":{\"content\":[{\"token\":"
		"\"Hi\",\"logprob\":0.5}]}}]}",
		"{\"choices\":[{\"finish_reason\":\"stop\",\"message\":{"
		"\"content\":\"Hi\"},\"logprobs\":{\"content\":[{\"token\":"
		"7,\"logprob\":-1}]}}]}",
	};
	struct engy_api_req req;
	struct engy_api_result r;
	struct engy_sse_out o;
	cJSON *out, *j;
	size_t i;

	ck_assert_int_eq(
		engy_oai_parse(b, strlen(b), NULL, &req, err, sizeof(err)), 0);
	ck_assert(req.logprobs && cJSON_IsTrue(jget(req.body, "logprobs")));
	miner_accepts(&req);
	for (i = 0; i < 3; i++) {
		out = jparse(outs[i]);
		ck_assert_int_eq(
			engy_api_result_parse(out, &r, err, sizeof(err)), 0);
		engy_sse_out_init(&o);
		ck_assert_int_eq(engy_oai_response(&o, &req, "c", 1, &r), 0);
		j = jparse(o.buf);
		if (i == 0) {
			ck_assert_int_eq(jsize(j, "choices.0.logprobs.content"),
					 2);
			ck_assert_str_eq(
				jstr(j, "choices.0.logprobs.content.0.token"),
				"Hi");
			ck_assert(jnum(j, "choices.0.logprobs.content.1."
					  "logprob") == -1.25);
			/* bytes the miner left out are the token's */
			ck_assert_int_eq(jnum(j, "choices.0.logprobs.content."
						 "1.bytes.0"),
					 33);
		} else {
			ck_assert(cJSON_IsNull(jget(j, "choices.0.logprobs")));
		}
		cJSON_Delete(j);
		engy_sse_out_free(&o);
		engy_api_result_free(&r);
		cJSON_Delete(out);
	}
	engy_api_req_free(&req);
}
END_TEST

/* A tokenizer stand-in: ids below 100 are "t<id>", the rest unknown. */
static int fake_decode(void *arg, uint32_t id, char **text, size_t *len)
{
	char buf[16];

	(void)arg;
	if (id >= 100)
		return -ERANGE;
	snprintf(buf, sizeof(buf), "t%u", id);
	*text = strdup(buf);
	*len = strlen(buf);
	return *text ? 0 : -ENOMEM;
}

/* One miner output whose single token has @top as its alternatives. */
static char *top_out(const char *top)
{
	static char buf[8192];

	snprintf(buf, sizeof(buf),
		 "{\"choices\":[{\"finish_reason\":\"stop\",\"message\":{"
		 "\"content\":\"Hi\"},\"logprobs\":{\"content\":[{\"token\":"
		 "\"Hi\",\"logprob\":-0.5,\"bytes\":[72,105],\"top_logprobs\":"
		 "%s}]}}]}",
		 top);
	return buf;
}

/*
 * top_logprobs: chat's top_logprobs N (with logprobs) reaches the miner
 * and routes only to workers that serve alternatives; at most N of the
 * miner's alternatives are rendered, without its ids; hostile lists (more
 * than 20, unsorted, a positive logprob, an id that is no uint32) drop the
 * logprobs; the gateway's tokenizer renames alternatives by id and an id
 * out of its vocabulary drops them.  Legacy completions' logprobs: N and
 * the Responses include map to the same request.  Expected values are
 * written here by hand from OpenAI's documented shapes.
 */
START_TEST(test_top_logprobs)
{
	const char *b =
		"{\"model\":\"m\",\"logprobs\":true,\"top_logprobs\":"
		"2,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";
	static const char three[] =
		"[{\"token\":\"Hi\",\"logprob\":-0.5,\"bytes\":[72,105],"
		"\"id\":7},{\"token\":\"Ho\",\"logprob\":-1.5,\"id\":8},"
		"{\"token\":\"He\",\"logprob\":-2,\"id\":9}]";
	const char *bad[] = {
		"[{\"token\":\"a\",\"logprob\":-2},{\"token\":\"b\","
		"\"logprob\":-1}]", /* unsorted */
		"[{\"token\":\"a\",\"logprob\":0.5}]",
		"[{\"token\":\"a\",\"logprob\":-1,\"id\":-1}]",
		"[{\"token\":\"a\",\"logprob\":-1,\"id\":1.5}]",
		"[{\"token\":7,\"logprob\":-1}]",
		"{\"token\":\"a\"}",
		NULL, /* 21 alternatives, built below */
	};
	struct engy_api_req req;
	struct engy_api_result r;
	struct engy_sse_out o, many;
	struct engy_oai_stream st;
	struct engy_resp_ids rids = { "rs_1", "msg_1", 0 };
	cJSON *out, *j;
	size_t i;
	char *ev;

	ck_assert_int_eq(
		engy_oai_parse(b, strlen(b), NULL, &req, err, sizeof(err)), 0);
	ck_assert_uint_eq(req.top_logprobs, 2);
	ck_assert_uint_eq(req.constraint, ENGY_API_CONS_TOPLP);
	ck_assert_int_eq(jnum(req.body, "top_logprobs"), 2);
	miner_accepts(&req);
	/* rendered: at most 2, each {token, logprob, bytes}, no id */
	out = jparse(top_out(three));
	ck_assert_int_eq(engy_api_result_parse(out, &r, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(r.logprobs);
	engy_sse_out_init(&o);
	ck_assert_int_eq(engy_oai_response(&o, &req, "c", 1, &r), 0);
	j = jparse(o.buf);
	ck_assert_int_eq(jsize(j, "choices.0.logprobs.content.0.top_logprobs"),
			 2);
	ck_assert_str_eq(
		jstr(j, "choices.0.logprobs.content.0.top_logprobs.1.token"),
		"Ho");
	ck_assert(jnum(j, "choices.0.logprobs.content.0.top_logprobs.1."
			  "logprob") == -1.5);
	ck_assert_int_eq(
		jnum(j, "choices.0.logprobs.content.0.top_logprobs.1.bytes.1"),
		'o');
	ck_assert_int_eq(
		jnum(j, "choices.0.logprobs.content.0.top_logprobs.0.bytes.0"),
		72);
	ck_assert_ptr_null(
		jget(j, "choices.0.logprobs.content.0.top_logprobs.0.id"));
	cJSON_Delete(j);
	engy_sse_out_free(&o);
	/* streamed: the logprobs chunk carries the same */
	engy_sse_out_init(&o);
	ck_assert_int_eq(engy_oai_stream_init(&st, &req, "c", 1), 0);
	ck_assert_int_eq(engy_oai_stream_finish(&st, &r, &o), 0);
	ev = strstr(o.buf, "\"top_logprobs\":[{\"token\":\"Hi\"");
	ck_assert_ptr_nonnull(ev);
	ck_assert_ptr_nonnull(strstr(ev, "\"token\":\"Ho\""));
	ck_assert_ptr_null(strstr(ev, "\"token\":\"He\""));
	engy_oai_stream_free(&st);
	engy_sse_out_free(&o);
	/* the gateway's tokenizer names them by id */
	ck_assert_int_eq(
		engy_api_logprobs_name((cJSON *)r.logprobs, fake_decode, NULL),
		0);
	engy_sse_out_init(&o);
	ck_assert_int_eq(engy_oai_response(&o, &req, "c", 1, &r), 0);
	j = jparse(o.buf);
	ck_assert_str_eq(
		jstr(j, "choices.0.logprobs.content.0.top_logprobs.0.token"),
		"t7");
	ck_assert_int_eq(
		jnum(j, "choices.0.logprobs.content.0.top_logprobs.0.bytes.1"),
		'7');
	ck_assert_int_eq(
		jsize(j, "choices.0.logprobs.content.0.top_logprobs.0.bytes"),
		2);
	cJSON_Delete(j);
	engy_sse_out_free(&o);
	engy_api_result_free(&r);
	cJSON_Delete(out);
	/* an id out of the tokenizer's vocabulary, or none: refused */
	out = jparse(top_out("[{\"token\":\"a\",\"logprob\":-1,\"id\":100}]"));
	ck_assert_int_eq(engy_api_result_parse(out, &r, err, sizeof(err)), 0);
	ck_assert_int_eq(
		engy_api_logprobs_name((cJSON *)r.logprobs, fake_decode, NULL),
		-ERANGE);
	engy_api_result_free(&r);
	cJSON_Delete(out);
	out = jparse(top_out("[{\"token\":\"a\",\"logprob\":-1}]"));
	ck_assert_int_eq(engy_api_result_parse(out, &r, err, sizeof(err)), 0);
	ck_assert_int_eq(
		engy_api_logprobs_name((cJSON *)r.logprobs, fake_decode, NULL),
		-EINVAL);
	engy_api_result_free(&r);
	cJSON_Delete(out);
	/* hostile lists: the logprobs are dropped (null), the answer stays */
	engy_sse_out_init(&many);
	engy_sse_out_add(&many, "[", 1);
	for (i = 0; i < 21; i++)
		engy_sse_out_addf(&many, "%s{\"token\":\"a\",\"logprob\":-%zu}",
				  i ? "," : "", i + 1);
	engy_sse_out_add(&many, "]", 1);
	bad[6] = many.buf;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		out = jparse(top_out(bad[i]));
		ck_assert_int_eq(
			engy_api_result_parse(out, &r, err, sizeof(err)), 0);
		ck_assert_msg(r.logprobs == NULL, "accepted %s", bad[i]);
		ck_assert_str_eq(r.content, "Hi");
		engy_api_result_free(&r);
		cJSON_Delete(out);
	}
	engy_sse_out_free(&many);
	engy_api_req_free(&req);

	/* legacy completions: logprobs: 2 */
	b = "{\"model\":\"m\",\"prompt\":\"Once\",\"logprobs\":2}";
	ck_assert_int_eq(
		engy_cmpl_parse(b, strlen(b), NULL, &req, err, sizeof(err)), 0);
	ck_assert(req.logprobs);
	ck_assert_uint_eq(req.top_logprobs, 2);
	miner_accepts(&req);
	out = jparse(top_out(three));
	ck_assert_int_eq(engy_api_result_parse(out, &r, err, sizeof(err)), 0);
	engy_sse_out_init(&o);
	ck_assert_int_eq(engy_cmpl_response(&o, &req, "cmpl-1", 1, &r), 0);
	j = jparse(o.buf);
	ck_assert_str_eq(jstr(j, "choices.0.logprobs.tokens.0"), "Hi");
	ck_assert(jnum(j, "choices.0.logprobs.token_logprobs.0") == -0.5);
	ck_assert(jnum(j, "choices.0.logprobs.top_logprobs.0.Ho") == -1.5);
	ck_assert(jnum(j, "choices.0.logprobs.top_logprobs.0.Hi") == -0.5);
	ck_assert_int_eq(jsize(j, "choices.0.logprobs.top_logprobs.0"), 2);
	ck_assert_int_eq(jnum(j, "choices.0.logprobs.text_offset.0"), 0);
	cJSON_Delete(j);
	engy_sse_out_free(&o);
	engy_api_result_free(&r);
	cJSON_Delete(out);
	engy_api_req_free(&req);
	b = "{\"model\":\"m\",\"prompt\":\"Once\",\"logprobs\":6}";
	ck_assert_int_eq(
		engy_cmpl_parse(b, strlen(b), NULL, &req, err, sizeof(err)),
		-EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "logprobs: expected an integer"));

	/* Responses: the include and top_logprobs */
	ck_assert_int_eq(
		rparse("{\"model\":\"m\",\"input\":\"x\",\"top_logprobs\":2,"
		       "\"include\":[\"message.output_text.logprobs\"]}",
		       &req),
		0);
	ck_assert_uint_eq(req.top_logprobs, 2);
	out = jparse(top_out(three));
	ck_assert_int_eq(engy_api_result_parse(out, &r, err, sizeof(err)), 0);
	engy_sse_out_init(&o);
	ck_assert_int_eq(engy_resp_response(&o, &req, "resp_1", 1, &rids, &r),
			 0);
	j = jparse(o.buf);
	ck_assert_int_eq(jsize(j, "output.0.content.0.logprobs.0.top_logprobs"),
			 2);
	ck_assert_str_eq(
		jstr(j, "output.0.content.0.logprobs.0.top_logprobs.1.token"),
		"Ho");
	cJSON_Delete(j);
	engy_sse_out_free(&o);
	engy_api_result_free(&r);
	cJSON_Delete(out);
	engy_api_req_free(&req);
	/* without the include: no logprobs asked (OpenAI answers []) */
	ck_assert_int_eq(rparse("{\"model\":\"m\",\"input\":\"x\","
				"\"top_logprobs\":2}",
				&req),
			 0);
	ck_assert_uint_eq(req.top_logprobs, 0);
	ck_assert_ptr_null(jget(req.body, "top_logprobs"));
	engy_api_req_free(&req);
}
END_TEST

/* Outside bytes bounded: input holds at most max_messages items (the
 * parser is linear in the body); a stream broken off ends with the
 * Responses error event. */
START_TEST(test_limits_and_error)
{
	struct engy_api_limits lim = { .max_body_bytes = 4096,
				       .max_messages = 2 };
	const char *b = "{\"model\":\"m\",\"input\":[{\"role\":\"user\","
			"\"content\":\"a\"},{\"role\":\"developer\","
			"\"content\":\"b\"},{\"role\":\"user\",\"content\":"
			"\"c\"}]}";
	struct engy_apierr e = { .status = 502,
				 .message = "the worker's leg closed" };
	struct engy_api_req req;
	struct engy_resp_stream s;
	struct engy_sse_out o;
	struct evs v;

	ck_assert_int_eq(
		engy_resp_parse(b, strlen(b), &lim, &req, err, sizeof(err)),
		-EINVAL);
	ck_assert_str_eq(err, "input: 3 items is above the limit of 2");
	lim.max_body_bytes = 16;
	ck_assert_int_eq(
		engy_resp_parse(b, strlen(b), &lim, &req, err, sizeof(err)),
		-E2BIG);
	ck_assert_int_eq(rparse("{\"model\":\"m\",\"input\":\"x\"}", &req), 0);
	engy_sse_out_init(&o);
	engy_resp_stream_init(&s, &req, "resp_1", 1);
	engy_resp_stream_text(&s, "Hi", 2, NULL, 0, &o);
	ck_assert_int_eq(engy_resp_stream_error(&s, &o, &e), 0);
	evs_read(&v, o.buf);
	ck_assert_str_eq(v.e[v.n - 1].name, "error");
	ck_assert_str_eq(jstr(v.e[v.n - 1].json, "type"), "error");
	ck_assert_str_eq(jstr(v.e[v.n - 1].json, "code"), "bad_gateway");
	ck_assert_str_eq(jstr(v.e[v.n - 1].json, "message"),
			 "the worker's leg closed");
	ck_assert_int_eq(jnum(v.e[v.n - 1].json, "sequence_number"), v.n - 1);
	evs_free(&v);
	engy_resp_stream_free(&s);
	engy_sse_out_free(&o);
	engy_api_req_free(&req);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("resp");
	TCase *tc = tcase_create("resp");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_resp_items);
	tcase_add_test(tc, test_resp_refusals);
	tcase_add_test(tc, test_cmpl);
	tcase_add_test(tc, test_stops);
	tcase_add_test(tc, test_finish_rules);
	tcase_add_test(tc, test_resp_stream);
	tcase_add_test(tc, test_logprobs);
	tcase_add_test(tc, test_top_logprobs);
	tcase_add_test(tc, test_limits_and_error);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
