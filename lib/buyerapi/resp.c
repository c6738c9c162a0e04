// SPDX-License-Identifier: MIT
/*
 * POST /v1/responses and POST /v1/completions: the buyer's body rewritten
 * as the chat completions body it means, then checked by the chat parser
 * (lib/buyerapi/oai.c) like any chat request (specs/buyer-api.md §7).
 * What only these routes have is checked here, with messages naming their
 * own fields ("input[2].call_id: ...").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buyerapi_int.h"
#include "jsonget.h"
#include "resp.h"

#define FAIL(...) engy_api_fail(err, errlen, -EINVAL, __VA_ARGS__)
#define ZDR	  "engy stores nothing (zero data retention)"

struct rparse {
	char *err;
	size_t errlen;
	const struct engy_api_limits *lim;
	cJSON *msgs;		    /* the chat messages being built */
	struct engy_sse_out system; /* the system texts, joined */
	size_t n_system;
};

static bool is_str(const cJSON *j, const char *s)
{
	return cJSON_IsString(j) && strcmp(j->valuestring, s) == 0;
}

/* Copy @key of @in to @out under @as (when present and not null). */
static int pass(const cJSON *in, const char *key, cJSON *out, const char *as)
{
	const cJSON *j = engy_api_get(in, key);
	cJSON *d;

	if (!j)
		return 0;
	d = cJSON_Duplicate(j, true);
	if (!d || !cJSON_AddItemToObject(out, as, d)) {
		cJSON_Delete(d);
		return -ENOMEM;
	}
	return 0;
}

/* A text for the leading system message (instructions, and system or
 * developer items wherever they stand: the chat template takes one
 * system turn, first).  Gathered here, put first at the end (linear in
 * the body however many such items it has). */
static int add_system(struct rparse *p, const char *text)
{
	if (p->n_system++)
		engy_sse_out_add(&p->system, "\n\n", 2);
	engy_sse_out_adds(&p->system, text);
	return p->system.err;
}

static int put_system(struct rparse *p)
{
	cJSON *m;

	if (!p->n_system)
		return 0;
	if (p->system.err)
		return -ENOMEM;
	m = cJSON_CreateObject();
	if (!m || !cJSON_AddStringToObject(m, "role", "system") ||
	    !cJSON_AddStringToObject(m, "content",
				     p->system.buf ? p->system.buf : "") ||
	    !cJSON_InsertItemInArray(p->msgs, 0, m)) {
		cJSON_Delete(m);
		return -ENOMEM;
	}
	return 0;
}

/* The text of a content: a string, or an array of text parts
 * (input_text, output_text, text, summary_text, reasoning_text, refusal)
 * joined; NULL with @err set otherwise.  Returns a malloc'd string. */
static char *content_text(struct rparse *p, const cJSON *c, const char *where,
			  size_t i, int *rc)
{
	char *err = p->err;
	size_t errlen = p->errlen, j = 0;
	struct engy_sse_out o;
	const cJSON *part, *type, *text;
	char *s;

	*rc = 0;
	if (cJSON_IsString(c)) {
		s = strdup(c->valuestring);
		*rc = s ? 0 : -ENOMEM;
		return s;
	}
	if (!cJSON_IsArray(c)) {
		*rc = FAIL("input[%zu].%s: expected a string or an array of "
			   "text parts",
			   i, where);
		return NULL;
	}
	engy_sse_out_init(&o);
	engy_sse_out_add(&o, "", 0);
	cJSON_ArrayForEach(part, c)
	{
		type = engy_api_get(part, "type");
		text = engy_api_get(part, "text");
		if (!text)
			text = engy_api_get(part, "refusal");
		if (!cJSON_IsObject(part) || !cJSON_IsString(type)) {
			*rc = FAIL("input[%zu].%s[%zu].type: missing or not a "
				   "string",
				   i, where, j);
			break;
		}
		if (!is_str(type, "input_text") &&
		    !is_str(type, "output_text") && !is_str(type, "text") &&
		    !is_str(type, "summary_text") &&
		    !is_str(type, "reasoning_text") &&
		    !is_str(type, "refusal")) {
			*rc = FAIL("input[%zu].%s[%zu].type: \"%s\" parts are "
				   "not supported (text only)",
				   i, where, j,
				   engy_api_ident(type->valuestring));
			break;
		}
		if (!cJSON_IsString(text)) {
			*rc = FAIL("input[%zu].%s[%zu].text: expected a string",
				   i, where, j);
			break;
		}
		engy_sse_out_adds(&o, text->valuestring);
		j++;
	}
	if (*rc || o.err) {
		if (!*rc)
			*rc = -ENOMEM;
		engy_sse_out_free(&o);
		return NULL;
	}
	s = engy_sse_out_take(&o, &j);
	engy_sse_out_free(&o);
	if (!s)
		*rc = -ENOMEM;
	return s;
}

/* The last chat message when it is an assistant turn that may still take
 * text, reasoning or calls; else a new assistant message (content null). */
static cJSON *assistant(struct rparse *p)
{
	/* a cJSON array's first child links back to its last: O(1) */
	cJSON *last = p->msgs->child ? p->msgs->child->prev : NULL;
	cJSON *m;

	if (last && is_str(engy_json_get(last, "role"), "assistant"))
		return last;
	m = cJSON_CreateObject();
	if (!m || !cJSON_AddStringToObject(m, "role", "assistant") ||
	    !cJSON_AddNullToObject(m, "content") ||
	    !cJSON_AddItemToArray(p->msgs, m)) {
		cJSON_Delete(m);
		return NULL;
	}
	return m;
}

static int set_str(cJSON *obj, const char *key, const char *val)
{
	cJSON *s = cJSON_CreateString(val);

	if (!s)
		return -ENOMEM;
	if (engy_json_get(obj, key))
		cJSON_ReplaceItemInObjectCaseSensitive(obj, key, s);
	else
		cJSON_AddItemToObject(obj, key, s);
	return 0;
}

static int msg_item(struct rparse *p, size_t i, const cJSON *it)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *role = engy_api_get(it, "role");
	const char *r;
	cJSON *m, *c;
	char *text;
	int rc;

	if (!cJSON_IsString(role))
		return FAIL("input[%zu].role: missing or not a string", i);
	r = role->valuestring;
	if (strcmp(r, "user") && strcmp(r, "assistant") &&
	    strcmp(r, "system") && strcmp(r, "developer"))
		return FAIL("input[%zu].role: expected user, assistant, system "
			    "or developer",
			    i);
	if (!engy_api_get(it, "content"))
		return FAIL("input[%zu].content: missing", i);
	text = content_text(p, engy_api_get(it, "content"), "content", i, &rc);
	if (!text)
		return rc ? rc : -ENOMEM;
	if (!strcmp(r, "system") || !strcmp(r, "developer")) {
		rc = add_system(p, text);
		free(text);
		return rc;
	}
	if (!strcmp(r, "assistant")) {
		m = assistant(p);
		c = m ? engy_json_get(m, "content") : NULL;
		if (m && (cJSON_IsString(c) || engy_json_get(m, "tool_calls")))
			m = NULL; /* a turn with text or calls: a new one */
		if (!m) {
			m = cJSON_CreateObject();
			if (!m ||
			    !cJSON_AddStringToObject(m, "role", "assistant") ||
			    !cJSON_AddItemToArray(p->msgs, m)) {
				cJSON_Delete(m);
				free(text);
				return -ENOMEM;
			}
		}
		rc = set_str(m, "content", text);
		free(text);
		return rc;
	}
	m = cJSON_CreateObject();
	rc = m && cJSON_AddStringToObject(m, "role", "user") &&
			     cJSON_AddStringToObject(m, "content", text) &&
			     cJSON_AddItemToArray(p->msgs, m)
		     ? 0
		     : -ENOMEM;
	if (rc)
		cJSON_Delete(m);
	free(text);
	return rc;
}

static int call_item(struct rparse *p, size_t i, const cJSON *it)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *id = engy_api_get(it, "call_id");
	const cJSON *name = engy_api_get(it, "name");
	const cJSON *args = engy_api_get(it, "arguments");
	cJSON *m, *calls;

	if (!cJSON_IsString(id) || !id->valuestring[0] ||
	    strlen(id->valuestring) >= ENGY_API_MAX_NAME)
		return FAIL("input[%zu].call_id: expected a call id", i);
	if (!cJSON_IsString(name))
		return FAIL("input[%zu].name: expected a string", i);
	if (args && !cJSON_IsString(args))
		return FAIL("input[%zu].arguments: expected a string", i);
	if (args && !engy_api_args_ok(args->valuestring))
		return FAIL("input[%zu].arguments: not the JSON text of an "
			    "object",
			    i);
	m = assistant(p);
	if (!m)
		return -ENOMEM;
	calls = engy_json_get(m, "tool_calls");
	if (!calls && !(calls = cJSON_AddArrayToObject(m, "tool_calls")))
		return -ENOMEM;
	return engy_api_add_call(calls, id->valuestring, name->valuestring,
				 args);
}

static int output_item(struct rparse *p, size_t i, const cJSON *it)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *id = engy_api_get(it, "call_id");
	const cJSON *out = engy_api_get(it, "output");
	cJSON *m;
	char *text;
	int rc;

	if (!cJSON_IsString(id) || !id->valuestring[0])
		return FAIL("input[%zu].call_id: expected a call id", i);
	if (!out)
		return FAIL("input[%zu].output: missing", i);
	text = content_text(p, out, "output", i, &rc);
	if (!text)
		return rc ? rc : -ENOMEM;
	m = cJSON_CreateObject();
	if (!m || !cJSON_AddStringToObject(m, "role", "tool") ||
	    !cJSON_AddStringToObject(m, "content", text) ||
	    !cJSON_AddStringToObject(m, "tool_call_id", id->valuestring) ||
	    !cJSON_AddItemToArray(p->msgs, m)) {
		cJSON_Delete(m);
		free(text);
		return -ENOMEM;
	}
	free(text);
	return 0;
}

/* A reasoning item: its text (content, else summary) becomes the next
 * assistant turn's reasoning_content. */
static int reasoning_item(struct rparse *p, size_t i, const cJSON *it)
{
	const cJSON *c = engy_api_get(it, "content");
	cJSON *m;
	char *text;
	int rc;

	if (!c || !cJSON_GetArraySize(c))
		c = engy_api_get(it, "summary");
	if (!c)
		return 0;
	text = content_text(
		p, c, c == engy_api_get(it, "summary") ? "summary" : "content",
		i, &rc);
	if (!text)
		return rc ? rc : -ENOMEM;
	m = assistant(p);
	if (m && (cJSON_IsString(engy_json_get(m, "content")) ||
		  engy_json_get(m, "tool_calls"))) {
		/* reasoning after that turn's text or calls: a new turn */
		m = cJSON_CreateObject();
		if (m && (!cJSON_AddStringToObject(m, "role", "assistant") ||
			  !cJSON_AddNullToObject(m, "content") ||
			  !cJSON_AddItemToArray(p->msgs, m))) {
			cJSON_Delete(m);
			m = NULL;
		}
	}
	rc = m ? set_str(m, "reasoning_content", text) : -ENOMEM;
	free(text);
	return rc;
}

static int copy_input(struct rparse *p, const cJSON *in)
{
	char *err = p->err;
	size_t errlen = p->errlen, i = 0, n;
	const cJSON *input = engy_api_get(in, "input"), *it, *type;
	int rc;

	if (!input)
		return FAIL("input: missing");
	if (cJSON_IsString(input)) {
		cJSON *m = cJSON_CreateObject();

		if (!m || !cJSON_AddItemToArray(p->msgs, m)) {
			cJSON_Delete(m);
			return -ENOMEM;
		}
		if (!cJSON_AddStringToObject(m, "role", "user") ||
		    !cJSON_AddStringToObject(m, "content", input->valuestring))
			return -ENOMEM;
		return 0;
	}
	if (!cJSON_IsArray(input))
		return FAIL("input: expected a string or an array of items");
	n = (size_t)cJSON_GetArraySize(input);
	if (!n)
		return FAIL("input: empty");
	if (p->lim && p->lim->max_messages && n > p->lim->max_messages)
		return FAIL("input: %zu items is above the limit of %zu", n,
			    p->lim->max_messages);
	cJSON_ArrayForEach(it, input)
	{
		if (!cJSON_IsObject(it))
			return FAIL("input[%zu]: expected an object", i);
		type = engy_api_get(it, "type");
		if (type && !cJSON_IsString(type))
			return FAIL("input[%zu].type: expected a string", i);
		if (!type || is_str(type, "message"))
			rc = msg_item(p, i, it);
		else if (is_str(type, "function_call"))
			rc = call_item(p, i, it);
		else if (is_str(type, "function_call_output"))
			rc = output_item(p, i, it);
		else if (is_str(type, "reasoning"))
			rc = reasoning_item(p, i, it);
		else if (is_str(type, "item_reference"))
			rc = FAIL(
				"input[%zu]: an item_reference names a stored "
				"item, and " ZDR
				": send the item itself (with the AI SDK: "
				"providerOptions.openai.store = false)",
				i);
		else
			rc = FAIL("input[%zu].type: \"%s\" items are not "
				  "supported (message, function_call, "
				  "function_call_output, reasoning)",
				  i, engy_api_ident(type->valuestring));
		if (rc)
			return rc;
		i++;
	}
	return 0;
}

static int copy_tools(struct rparse *p, const cJSON *in, cJSON *chat)
{
	char *err = p->err;
	size_t errlen = p->errlen, i = 0;
	const cJSON *tools = engy_api_get(in, "tools"), *t, *type;
	cJSON *arr, *nt, *fn;

	if (!tools)
		return 0;
	if (!cJSON_IsArray(tools))
		return FAIL("tools: expected an array");
	arr = cJSON_AddArrayToObject(chat, "tools");
	if (!arr)
		return -ENOMEM;
	cJSON_ArrayForEach(t, tools)
	{
		if (!cJSON_IsObject(t))
			return FAIL("tools[%zu]: expected an object", i);
		type = engy_api_get(t, "type");
		if (!is_str(type, "function"))
			return FAIL("tools[%zu].type: only \"function\" tools "
				    "are served",
				    i);
		if (!cJSON_IsString(engy_api_get(t, "name")))
			return FAIL("tools[%zu].name: expected a string", i);
		nt = cJSON_CreateObject();
		if (!nt || !cJSON_AddItemToArray(arr, nt)) {
			cJSON_Delete(nt);
			return -ENOMEM;
		}
		fn = cJSON_AddObjectToObject(nt, "function");
		if (!fn || !cJSON_AddStringToObject(nt, "type", "function") ||
		    pass(t, "name", fn, "name") ||
		    pass(t, "description", fn, "description") ||
		    pass(t, "parameters", fn, "parameters") ||
		    pass(t, "strict", fn, "strict"))
			return -ENOMEM;
		i++;
	}
	return 0;
}

static int copy_tool_choice(struct rparse *p, const cJSON *in, cJSON *chat)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *c = engy_api_get(in, "tool_choice");
	cJSON *o, *fn;

	if (!c || cJSON_IsString(c))
		return pass(in, "tool_choice", chat, "tool_choice");
	if (!cJSON_IsObject(c) || !is_str(engy_api_get(c, "type"), "function"))
		return FAIL("tool_choice: expected \"none\", \"auto\", "
			    "\"required\" or {\"type\": \"function\", "
			    "\"name\": …}");
	if (!cJSON_IsString(engy_api_get(c, "name")))
		return FAIL("tool_choice.name: expected a string");
	o = cJSON_AddObjectToObject(chat, "tool_choice");
	fn = o ? cJSON_AddObjectToObject(o, "function") : NULL;
	if (!fn || !cJSON_AddStringToObject(o, "type", "function") ||
	    pass(c, "name", fn, "name"))
		return -ENOMEM;
	return 0;
}

/* text.format: text (nothing), json_object, json_schema → the chat
 * path's response_format, which decides what it serves. */
static int copy_format(struct rparse *p, const cJSON *in, cJSON *chat)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *text = engy_api_get(in, "text"), *f, *type;
	cJSON *rf, *js;

	if (!text)
		return 0;
	if (!cJSON_IsObject(text))
		return FAIL("text: expected an object");
	f = engy_api_get(text, "format");
	if (!f)
		return 0;
	type = engy_api_get(f, "type");
	if (!cJSON_IsObject(f) || !cJSON_IsString(type))
		return FAIL("text.format.type: expected a string");
	if (is_str(type, "text"))
		return 0;
	rf = cJSON_AddObjectToObject(chat, "response_format");
	if (!rf || !cJSON_AddStringToObject(rf, "type", type->valuestring))
		return -ENOMEM;
	if (!is_str(type, "json_schema"))
		return 0;
	js = cJSON_AddObjectToObject(rf, "json_schema");
	if (!js || pass(f, "name", js, "name") ||
	    pass(f, "description", js, "description") ||
	    pass(f, "schema", js, "schema") || pass(f, "strict", js, "strict"))
		return -ENOMEM;
	return 0;
}

/* What a stored-nothing gateway cannot do, refused plainly. */
static int refuse_stored(struct rparse *p, const cJSON *in)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *j;

	if (cJSON_IsTrue(engy_api_get(in, "store")))
		return FAIL("store: " ZDR ": no response is kept to be "
			    "retrieved later; send store: false or leave it "
			    "out");
	j = engy_api_get(in, "store");
	if (j && !cJSON_IsBool(j))
		return FAIL("store: expected true or false");
	if (engy_api_get(in, "previous_response_id"))
		return FAIL("previous_response_id: " ZDR ", so there is no "
			    "earlier response to continue; send the whole "
			    "conversation in input");
	if (engy_api_get(in, "conversation"))
		return FAIL("conversation: " ZDR ", so there are no "
			    "conversations; send the whole conversation in "
			    "input");
	if (cJSON_IsTrue(engy_api_get(in, "background")))
		return FAIL("background: " ZDR ": a background response "
			    "would have to be kept until fetched");
	if (engy_api_get(in, "prompt"))
		return FAIL("prompt: stored prompt templates are not served "
			    "(" ZDR ")");
	return 0;
}

static int resp_chat(struct rparse *p, const cJSON *in, cJSON *chat)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *j, *eff, *inc, *it;
	int rc;

	rc = refuse_stored(p, in);
	if (rc)
		return rc;
	if (pass(in, "model", chat, "model"))
		return -ENOMEM;
	p->msgs = cJSON_AddArrayToObject(chat, "messages");
	if (!p->msgs)
		return -ENOMEM;
	j = engy_api_get(in, "instructions");
	if (j && !cJSON_IsString(j))
		return FAIL("instructions: expected a string");
	if (j && j->valuestring[0] && (rc = add_system(p, j->valuestring)))
		return rc;
	rc = copy_input(p, in);
	if (!rc)
		rc = put_system(p);
	if (!rc)
		rc = copy_tools(p, in, chat);
	if (!rc)
		rc = copy_tool_choice(p, in, chat);
	if (!rc)
		rc = copy_format(p, in, chat);
	if (rc)
		return rc;
	j = engy_api_get(in, "reasoning");
	if (j && !cJSON_IsObject(j))
		return FAIL("reasoning: expected an object");
	eff = j ? engy_api_get(j, "effort") : NULL;
	if (eff && !cJSON_IsString(eff))
		return FAIL("reasoning.effort: expected a string");
	/* include: "message.output_text.logprobs" asks for logprobs */
	inc = engy_api_get(in, "include");
	if (inc && !cJSON_IsArray(inc))
		return FAIL("include: expected an array of strings");
	cJSON_ArrayForEach(
		it, inc) if (is_str(it, "message.output_text.logprobs") &&
			     !engy_json_get(chat, "logprobs") &&
			     !cJSON_AddTrueToObject(chat,
						    "logprobs")) return -ENOMEM;
	if (pass(in, "max_output_tokens", chat, "max_completion_tokens") ||
	    pass(in, "temperature", chat, "temperature") ||
	    pass(in, "top_p", chat, "top_p") ||
	    /* top_logprobs without the include: logprobs [] (OpenAI) */
	    (engy_json_get(chat, "logprobs") &&
	     pass(in, "top_logprobs", chat, "top_logprobs")) ||
	    pass(in, "parallel_tool_calls", chat, "parallel_tool_calls") ||
	    pass(in, "stream", chat, "stream") ||
	    (eff && pass(j, "effort", chat, "reasoning_effort")))
		return -ENOMEM;
	return 0;
}

static int cmpl_chat(struct rparse *p, const cJSON *in, cJSON *chat)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *prompt = engy_api_get(in, "prompt"), *j;
	cJSON *m, *kw;

	if (pass(in, "model", chat, "model"))
		return -ENOMEM;
	if (cJSON_IsArray(prompt) && cJSON_GetArraySize(prompt) == 1 &&
	    cJSON_IsString(cJSON_GetArrayItem(prompt, 0)))
		prompt = cJSON_GetArrayItem(prompt, 0);
	if (!prompt)
		return FAIL("prompt: missing");
	if (!cJSON_IsString(prompt))
		return FAIL("prompt: expected a string (token arrays and "
			    "batches are not served)");
	if (cJSON_IsTrue(engy_api_get(in, "echo")))
		return FAIL("echo: not served");
	if (engy_api_get(in, "suffix"))
		return FAIL("suffix: not served");
	j = engy_api_get(in, "best_of");
	if (j && !engy_api_int(j, 1, 1))
		return FAIL("best_of: only 1 is served");
	/* logprobs: N (1..5) the N likeliest alternatives of each token,
	 * as chat's logprobs: true, top_logprobs: N; 0 as absent */
	j = engy_api_get(in, "logprobs");
	if (j && !cJSON_IsNull(j) && !engy_api_int(j, 0, 5))
		return FAIL("logprobs: expected an integer in 0..5");
	if (j && cJSON_IsNumber(j) && j->valuedouble > 0 &&
	    (!cJSON_AddTrueToObject(chat, "logprobs") ||
	     !cJSON_AddNumberToObject(chat, "top_logprobs", j->valuedouble)))
		return -ENOMEM;
	p->msgs = cJSON_AddArrayToObject(chat, "messages");
	m = p->msgs ? cJSON_CreateObject() : NULL;
	if (!m || !cJSON_AddItemToArray(p->msgs, m)) {
		cJSON_Delete(m);
		return -ENOMEM;
	}
	if (!cJSON_AddStringToObject(m, "role", "user") ||
	    !cJSON_AddStringToObject(m, "content", prompt->valuestring))
		return -ENOMEM;
	/* OpenAI's default cap on a legacy completion is 16 tokens. */
	j = engy_api_get(in, "max_tokens");
	if (j ? pass(in, "max_tokens", chat, "max_tokens")
	      : !cJSON_AddNumberToObject(chat, "max_tokens", 16))
		return -ENOMEM;
	/* A completion is text: the model answers without thinking. */
	kw = cJSON_AddObjectToObject(chat, "chat_template_kwargs");
	if (!kw || !cJSON_AddFalseToObject(kw, "enable_thinking"))
		return -ENOMEM;
	if (pass(in, "temperature", chat, "temperature") ||
	    pass(in, "top_p", chat, "top_p") || pass(in, "n", chat, "n") ||
	    pass(in, "seed", chat, "seed") || pass(in, "stop", chat, "stop") ||
	    pass(in, "stream", chat, "stream") ||
	    pass(in, "stream_options", chat, "stream_options") ||
	    pass(in, "presence_penalty", chat, "presence_penalty") ||
	    pass(in, "frequency_penalty", chat, "frequency_penalty"))
		return -ENOMEM;
	return 0;
}

static int translate(const char *json, size_t len,
		     const struct engy_api_limits *lim,
		     struct engy_api_req *req, char *err, size_t errlen,
		     enum engy_api_route route)
{
	struct rparse p = { .err = err, .errlen = errlen, .lim = lim };
	struct engy_api_limits l2 = { 0 };
	cJSON *in = NULL, *chat = NULL;
	char *text = NULL;
	int rc;

	memset(req, 0, sizeof(*req));
	engy_sse_out_init(&p.system);
	rc = engy_api_parse_root(json, len, lim, &in, err, errlen);
	if (rc)
		return rc;
	chat = cJSON_CreateObject();
	if (!chat)
		rc = -ENOMEM;
	else if (!engy_api_get(in, "model"))
		rc = FAIL("model: missing");
	else
		rc = route == ENGY_ROUTE_RESPONSES ? resp_chat(&p, in, chat)
						   : cmpl_chat(&p, in, chat);
	cJSON_Delete(in);
	engy_sse_out_free(&p.system);
	if (!rc && !(text = cJSON_PrintUnformatted(chat)))
		rc = -ENOMEM;
	cJSON_Delete(chat);
	if (rc) {
		if (rc == -ENOMEM)
			engy_api_fail(err, errlen, rc, "out of memory");
		return rc;
	}
	/* The body size was checked on the buyer's bytes; the rest of the
	 * limits hold on the translation. */
	if (lim) {
		l2 = *lim;
		l2.max_body_bytes = 0;
	}
	rc = engy_oai_parse(text, strlen(text), lim ? &l2 : NULL, req, err,
			    errlen);
	free(text);
	if (!rc)
		req->route = route;
	return rc;
}

int engy_resp_parse(const char *json, size_t len,
		    const struct engy_api_limits *lim, struct engy_api_req *req,
		    char *err, size_t errlen)
{
	int rc = translate(json, len, lim, req, err, errlen,
			   ENGY_ROUTE_RESPONSES);

	if (!rc && req->has_max_tokens)
		req->max_tokens_field = "max_output_tokens";
	return rc;
}

int engy_cmpl_parse(const char *json, size_t len,
		    const struct engy_api_limits *lim, struct engy_api_req *req,
		    char *err, size_t errlen)
{
	return translate(json, len, lim, req, err, errlen,
			 ENGY_ROUTE_COMPLETIONS);
}
