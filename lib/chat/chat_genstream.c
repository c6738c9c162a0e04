/* SPDX-License-Identifier: MIT */
/*
 * Streaming generation parser: the rules of genparse.c as a state machine
 * over arbitrary byte splits.  It emits only what no later byte can change:
 * text that could still begin a marker, trailing whitespace (which a section
 * end would trim) and an incomplete UTF-8 character are held back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "genparse.h"
#include "genparse_int.h"

enum state {
	S_START,   /* before the first non-space byte: <think>? */
	S_REASON,  /* reasoning text */
	S_CONTENT, /* content text */
	S_TRY,	   /* at a <tool_call>: does it open a call? */
	S_SEEK,	   /* among calls: skipping to the next <tool_call> */
	S_BODY,	   /* inside <function=NAME>: next tag */
	S_PKEY,	   /* after <parameter=: the key up to '>' */
	S_PVAL,	   /* a parameter value */
	S_AFTER,   /* after </function>: another <function= or </tool_call> */
	S_DONE,
};

struct engy_genstream {
	struct engy_genparse_opts o;
	engy_gen_cb cb;
	void *arg;
	enum state state;
	enum state from; /* S_TRY: the text state it came from; S_SEEK once
			    committed */
	struct engy_chat_buf in; /* pending input; [off, len) unprocessed */
	size_t off;
	size_t scan; /* S_PKEY: bytes already searched for '>' */
	bool final;
	int err;
	/* The text section being emitted. */
	bool started;
	struct engy_chat_buf ws; /* held trailing whitespace */
	/* Tool calls. */
	size_t ncalls;
	char *name;
	size_t nlen;
	const cJSON *props;
	char **keys;
	size_t nkeys;
	struct engy_chat_buf key;
	struct engy_chat_buf val;
};

static const char *const m_reason[] = { GEN_THINK_END, GEN_TC, NULL };
static const char *const m_reason_notools[] = { GEN_THINK_END, NULL };
static const char *const m_content[] = { GEN_TC, NULL };
static const char *const m_none[] = { NULL };
static const char *const m_body[] = { GEN_PARAM, GEN_FN_END, GEN_TC_END, NULL };
static const char *const m_val[] = { GEN_PARAM_END, GEN_PARAM, GEN_FN_END,
				     GEN_TC_END, NULL };
static const char *const m_after[] = { GEN_FN, GEN_TC_END, NULL };

static int emit(struct engy_genstream *s, enum engy_gen_kind kind,
		const char *p, size_t n, size_t index, const char *id)
{
	struct engy_gen_delta d = {
		.kind = kind, .text = p, .len = n, .index = index, .id = id
	};
	int rc;

	if (s->err)
		return s->err;
	if (!n)
		return 0;
	rc = s->cb(s->arg, &d);
	if (rc)
		s->err = rc;
	return rc;
}

/* Earliest of @marks in p[0..n); *@which is its index. */
static const char *earliest(const char *p, size_t n, const char *const *marks,
			    int *which)
{
	const char *best = NULL, *f;
	int i;

	for (i = 0; marks[i]; i++) {
		f = engy_chat_find(p, best ? (size_t)(best - p) : n, marks[i]);
		if (f) {
			best = f;
			*which = i;
		}
	}
	return best;
}

/* Longest suffix of p[0..n) that is a proper prefix of one of @marks. */
static size_t holdback(const char *p, size_t n, const char *const *marks)
{
	size_t best = 0, k, m;
	int i;

	for (i = 0; marks[i]; i++) {
		m = strlen(marks[i]);
		for (k = m - 1 < n ? m - 1 : n; k > best; k--)
			if (memcmp(p + n - k, marks[i], k) == 0) {
				best = k;
				break;
			}
	}
	return best;
}

/* p[0..n) cut so that it does not end inside a UTF-8 character. */
static size_t utf8_whole(const char *p, size_t n)
{
	size_t i = n, k = 0, need;
	unsigned char c;

	while (i > 0 && k < 3 && ((unsigned char)p[i - 1] & 0xc0) == 0x80) {
		i--;
		k++;
	}
	if (i == 0)
		return n;
	c = (unsigned char)p[i - 1];
	need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
	return need > 1 && n - (i - 1) < need ? i - 1 : n;
}

static enum engy_gen_kind section_kind(const struct engy_genstream *s)
{
	enum state st = s->state == S_TRY ? s->from : s->state;

	return st == S_REASON ? ENGY_GEN_REASONING : ENGY_GEN_CONTENT;
}

/* Section text: leading whitespace dropped, trailing whitespace held. */
static int section_text(struct engy_genstream *s, const char *p, size_t n)
{
	size_t k;
	int rc;

	if (!s->started) {
		while (n && engy_gen_ws(*p)) {
			p++;
			n--;
		}
		if (!n)
			return 0;
		s->started = true;
	}
	for (k = n; k && engy_gen_ws(p[k - 1]); k--)
		;
	if (k) {
		engy_chat_buf_add(&s->ws, p, k);
		if (s->ws.err)
			return s->ws.err;
		rc = emit(s, section_kind(s), s->ws.p, s->ws.len, 0, NULL);
		s->ws.len = 0;
		if (rc)
			return rc;
	}
	engy_chat_buf_add(&s->ws, p + k, n - k);
	return s->ws.err;
}

static void section_end(struct engy_genstream *s)
{
	s->started = false;
	s->ws.len = 0;
}

static int call_start(struct engy_genstream *s, const char *name, size_t nlen)
{
	char id[64], *dup;

	engy_gen_call_id(s->o.id_prefix, s->ncalls, id, sizeof(id));
	dup = strndup(name, nlen);
	if (!dup)
		return -ENOMEM;
	free(s->name);
	s->name = dup;
	s->nlen = nlen;
	s->props = engy_gen_tool_props(s->o.tools, name, nlen);
	return emit(s, ENGY_GEN_TOOL_NAME, name, nlen, s->ncalls, id);
}

static int call_end(struct engy_genstream *s)
{
	size_t i;
	int rc;

	rc = emit(s, ENGY_GEN_TOOL_ARGS, s->nkeys ? "}" : "{}",
		  s->nkeys ? 1 : 2, s->ncalls, NULL);
	for (i = 0; i < s->nkeys; i++)
		free(s->keys[i]);
	s->nkeys = 0;
	s->ncalls++;
	return rc;
}

static int param_end(struct engy_genstream *s)
{
	struct engy_chat_buf b = { 0 };
	const char *k = s->key.p ? s->key.p : "", *v = s->val.p ? s->val.p : "";
	size_t kn = s->key.len, vn = s->val.len, i;
	char **keys;
	int rc;

	engy_gen_trim(&k, &kn);
	for (i = 0; i < s->nkeys; i++)
		if (strlen(s->keys[i]) == kn && memcmp(s->keys[i], k, kn) == 0)
			return 0;
	keys = realloc(s->keys, (s->nkeys + 1) * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	s->keys = keys;
	keys[s->nkeys] = strndup(k, kn);
	if (!keys[s->nkeys])
		return -ENOMEM;
	engy_chat_buf_adds(&b, s->nkeys ? ", " : "{");
	s->nkeys++;
	engy_gen_value_strip(&v, &vn);
	engy_gen_param_json(&b, s->props, k, kn, v, vn);
	rc = b.err ? b.err
		   : emit(s, ENGY_GEN_TOOL_ARGS, b.p, b.len, s->ncalls, NULL);
	engy_chat_buf_free(&b);
	return rc;
}

/* S_REASON / S_CONTENT.  Returns 1 on progress, 0 when it needs input. */
static int st_text(struct engy_genstream *s, const char *p, size_t n)
{
	const char *const *marks = s->state == S_CONTENT
					   ? (s->o.tools ? m_content : m_none)
				   : s->o.tools ? m_reason
						: m_reason_notools;
	const char *f;
	size_t safe;
	int w = 0, rc;

	f = earliest(p, n, marks, &w);
	if (f) {
		rc = section_text(s, p, (size_t)(f - p));
		if (rc)
			return rc;
		s->off += (size_t)(f - p);
		if (strcmp(marks[w], GEN_TC) == 0) {
			s->from = s->state;
			s->state = S_TRY;
		} else {
			s->off += GEN_LEN(GEN_THINK_END);
			section_end(s);
			s->state = S_CONTENT;
		}
		return 1;
	}
	if (s->final) {
		rc = section_text(s, p, n);
		s->off += n;
		section_end(s);
		s->state = S_DONE;
		return rc ? rc : 1;
	}
	safe = utf8_whole(p, n - holdback(p, n, marks));
	s->off += safe;
	rc = section_text(s, p, safe);
	return rc;
}

static int st_start(struct engy_genstream *s, const char *p, size_t n)
{
	size_t i = 0;

	while (i < n && engy_gen_ws(p[i]))
		i++;
	s->off += i;
	p += i;
	n -= i;
	if (engy_chat_has_prefix(p, n, GEN_THINK)) {
		s->off += GEN_LEN(GEN_THINK);
		s->state = S_REASON;
		return 1;
	}
	if (!s->final &&
	    (!n || (n < GEN_LEN(GEN_THINK) && memcmp(p, GEN_THINK, n) == 0)))
		return 0;
	s->state = s->o.think_open ? S_REASON : S_CONTENT;
	return 1;
}

static int st_try(struct engy_genstream *s, const char *p, size_t n)
{
	struct engy_gen_probe pr = { 0 };
	int rc = engy_gen_probe(p, n, s->final, &pr);
	char id[64];

	if (rc <= ENGY_GEN_MORE)
		return rc;
	if (rc == ENGY_GEN_FAIL) {
		s->off += GEN_LEN(GEN_TC);
		if (s->from == S_SEEK) {
			s->state = S_SEEK;
			return 1;
		}
		s->state = s->from;
		rc = section_text(s, p, GEN_LEN(GEN_TC));
		return rc ? rc : 1;
	}
	section_end(s);
	s->off += pr.used;
	if (rc == ENGY_GEN_JSON) {
		engy_gen_call_id(s->o.id_prefix, s->ncalls, id, sizeof(id));
		rc = emit(s, ENGY_GEN_TOOL_NAME, pr.json_name,
			  strlen(pr.json_name), s->ncalls, id);
		free(pr.json_name);
		if (!rc)
			rc = emit(s, ENGY_GEN_TOOL_ARGS, pr.json_args,
				  strlen(pr.json_args), s->ncalls, NULL);
		free(pr.json_args);
		s->ncalls++;
		s->state = S_SEEK;
		return rc ? rc : 1;
	}
	s->state = S_BODY;
	rc = call_start(s, pr.name, pr.name_len);
	return rc ? rc : 1;
}

static int st_seek(struct engy_genstream *s, const char *p, size_t n)
{
	const char *f = engy_chat_find(p, n, GEN_TC);

	if (f) {
		s->off += (size_t)(f - p);
		s->from = S_SEEK;
		s->state = S_TRY;
		return 1;
	}
	if (s->final) {
		s->off += n;
		s->state = S_DONE;
		return 1;
	}
	s->off += n - holdback(p, n, m_content);
	return 0;
}

static int st_body(struct engy_genstream *s, const char *p, size_t n)
{
	const char *f;
	int w = 0, rc;

	f = earliest(p, n, m_body, &w);
	if (!f) {
		if (!s->final) {
			s->off += n - holdback(p, n, m_body);
			return 0;
		}
		s->off += n;
		s->state = S_DONE;
		rc = call_end(s);
		return rc ? rc : 1;
	}
	s->off += (size_t)(f - p) + strlen(m_body[w]);
	if (w == 0) {
		s->key.len = 0;
		s->scan = 0;
		s->state = S_PKEY;
		return 1;
	}
	s->state = w == 1 ? S_AFTER : S_SEEK;
	rc = call_end(s);
	return rc ? rc : 1;
}

static int st_pkey(struct engy_genstream *s, const char *p, size_t n)
{
	const char *gt = memchr(p + s->scan, '>', n - s->scan);
	int rc;

	if (!gt) {
		s->scan = n;
		if (!s->final)
			return 0;
		/* The key never closed: the parameter is dropped. */
		s->off += n;
		s->state = S_DONE;
		rc = call_end(s);
		return rc ? rc : 1;
	}
	engy_chat_buf_add(&s->key, p, (size_t)(gt - p));
	if (s->key.err)
		return s->key.err;
	s->off += (size_t)(gt - p) + 1;
	s->val.len = 0;
	s->state = S_PVAL;
	return 1;
}

static int st_pval(struct engy_genstream *s, const char *p, size_t n)
{
	const char *f;
	size_t keep;
	int w = 0, rc;

	f = earliest(p, n, m_val, &w);
	if (!f && !s->final) {
		keep = holdback(p, n, m_val);
		engy_chat_buf_add(&s->val, p, n - keep);
		s->off += n - keep;
		return s->val.err;
	}
	engy_chat_buf_add(&s->val, p, f ? (size_t)(f - p) : n);
	if (s->val.err)
		return s->val.err;
	s->off += f ? (size_t)(f - p) : n;
	rc = param_end(s);
	if (rc)
		return rc;
	if (!f) {
		s->state = S_DONE;
		rc = call_end(s);
		return rc ? rc : 1;
	}
	if (w == 0)
		s->off += GEN_LEN(GEN_PARAM_END);
	s->state = S_BODY;
	return 1;
}

static int st_after(struct engy_genstream *s, const char *p, size_t n)
{
	const char *f, *q;
	size_t gt;
	int w = 0, rc;

	f = earliest(p, n, m_after, &w);
	if (!f) {
		if (s->final) {
			s->off += n;
			s->state = S_DONE;
			return 1;
		}
		s->off += n - holdback(p, n, m_after);
		return 0;
	}
	if (w == 1) {
		s->off += (size_t)(f - p) + GEN_LEN(GEN_TC_END);
		s->state = S_SEEK;
		return 1;
	}
	s->off += (size_t)(f - p);
	q = f + GEN_LEN(GEN_FN);
	rc = engy_gen_fname(q, n - (size_t)(q - p), s->final, &gt);
	if (rc == ENGY_GEN_MORE)
		return 0;
	if (rc == ENGY_GEN_FAIL) {
		s->off += GEN_LEN(GEN_FN);
		return 1;
	}
	s->off += GEN_LEN(GEN_FN) + gt + 1;
	s->state = S_BODY;
	p = q;
	engy_gen_trim(&p, &gt);
	rc = call_start(s, p, gt);
	return rc ? rc : 1;
}

static int run(struct engy_genstream *s)
{
	const char *p;
	size_t n;
	int rc = 1;

	while (rc > 0 && s->state != S_DONE) {
		p = s->in.p + s->off;
		n = s->in.len - s->off;
		switch (s->state) {
		case S_START:
			rc = st_start(s, p, n);
			break;
		case S_REASON:
		case S_CONTENT:
			rc = st_text(s, p, n);
			break;
		case S_TRY:
			rc = st_try(s, p, n);
			break;
		case S_SEEK:
			rc = st_seek(s, p, n);
			break;
		case S_BODY:
			rc = st_body(s, p, n);
			break;
		case S_PKEY:
			rc = st_pkey(s, p, n);
			break;
		case S_PVAL:
			rc = st_pval(s, p, n);
			break;
		case S_AFTER:
			rc = st_after(s, p, n);
			break;
		case S_DONE:
			rc = 0;
			break;
		}
	}
	if (rc < 0 && !s->err)
		s->err = rc;
	/* Keep the pending tail at the front so the buffer stays small. */
	if (s->off && (s->off == s->in.len || s->off > 4096)) {
		memmove(s->in.p, s->in.p + s->off, s->in.len - s->off);
		s->in.len -= s->off;
		s->off = 0;
	}
	return s->err;
}

int engy_genstream_new(const struct engy_genparse_opts *o, engy_gen_cb cb,
		       void *arg, struct engy_genstream **out)
{
	struct engy_genstream *s;

	*out = NULL;
	if (!cb)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (o)
		s->o = *o;
	s->cb = cb;
	s->arg = arg;
	s->state = S_START;
	*out = s;
	return 0;
}

int engy_genstream_feed(struct engy_genstream *s, const char *p, size_t n)
{
	if (s->err)
		return s->err;
	if (s->final || (!p && n))
		return -EINVAL;
	if (!n)
		return 0;
	engy_chat_buf_add(&s->in, p, n);
	if (s->in.err)
		return s->err = s->in.err;
	return run(s);
}

int engy_genstream_finish(struct engy_genstream *s)
{
	if (s->err)
		return s->err;
	if (s->final)
		return -EINVAL;
	s->final = true;
	if (!s->in.p)
		engy_chat_buf_add(&s->in, "", 0);
	if (s->in.err)
		return s->err = s->in.err;
	return run(s);
}

size_t engy_genstream_calls(const struct engy_genstream *s)
{
	return s->ncalls;
}

void engy_genstream_free(struct engy_genstream *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nkeys; i++)
		free(s->keys[i]);
	free(s->keys);
	free(s->name);
	engy_chat_buf_free(&s->in);
	engy_chat_buf_free(&s->ws);
	engy_chat_buf_free(&s->key);
	engy_chat_buf_free(&s->val);
	free(s);
}
