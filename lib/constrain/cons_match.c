/* SPDX-License-Identifier: MIT */
/*
 * The automaton: each live stack is one reading of the bytes so far; a
 * byte advances every stack (an anyOf at the top forks into its
 * branches), identical stacks merge, dead ones drop.  A value that ends
 * without a closing byte (a number, an enum value) pops when the next byte
 * cannot extend it, and that byte goes to the frame below.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cons_int.h"

struct ctx {
	const struct engy_cons *c;
	struct engy_cons_state *out;
	bool overflow;
};

#define D		ENGY_CONS_MAX_DEPTH
#define DIGIT(b)	((b) >= '0' && (b) <= '9')
#define MAX_INT_DIGITS	15
#define MAX_FRAC_DIGITS 15
#define MAX_EXP_DIGITS	3

static void emit(struct ctx *x, const struct cons_frame *fr, int d)
{
	struct engy_cons_state *o = x->out;
	unsigned i;

	for (i = 0; i < o->n; i++)
		if (o->depth[i] == d &&
		    !memcmp(o->fr[i], fr, (size_t)d * sizeof(*fr)))
			return;
	if (o->n == ENGY_CONS_MAX_STACKS) {
		x->overflow = true;
		return;
	}
	o->depth[o->n] = (uint8_t)d;
	memcpy(o->fr[o->n], fr, (size_t)d * sizeof(*fr));
	o->n++;
}

static void step(struct ctx *x, struct cons_frame *fr, int d, uint8_t b);

/* Push @node above a frame already set to its after-value phase, and feed
 * it @b. */
static void push(struct ctx *x, struct cons_frame *fr, int d, uint16_t node,
		 uint8_t phase, bool feed, uint8_t b)
{
	if (d >= D)
		return; /* too deep: this reading dies */
	memset(&fr[d], 0, sizeof(fr[d]));
	fr[d].node = node;
	fr[d].phase = phase;
	if (feed)
		step(x, fr, d + 1, b);
	else
		emit(x, fr, d + 1);
}

/* The top frame is complete and did not take @b: pop, feed it below. */
static void pop_feed(struct ctx *x, struct cons_frame *fr, int d, uint8_t b)
{
	if (d > 1)
		step(x, fr, d - 1, b);
}

static const struct cons_item *item(const struct ctx *x,
				    const struct cons_node *n, unsigned i)
{
	return &x->c->items[n->first + i];
}

/* Properties i.. that may come next: up to and including the first
 * required one. */
static uint64_t candidates(const struct cons_node *n, uint32_t i)
{
	uint64_t m = 0;

	for (; i < n->n; i++) {
		m |= 1ull << i;
		if (n->required >> i & 1)
			break;
	}
	return m;
}

static bool required_from(const struct cons_node *n, uint32_t i)
{
	return i < 64 && (n->required >> i) != 0;
}

static void step_enum(struct ctx *x, const struct cons_node *n,
		      struct cons_frame *fr, int d, uint8_t b)
{
	struct cons_frame *f = &fr[d - 1];
	uint64_t keep = 0,
		 m = f->phase ? f->mask
			      : (n->n >= 64 ? ~0ull : (1ull << n->n) - 1);
	bool ended = false;
	unsigned i;

	for (i = 0; i < n->n; i++) {
		const struct cons_item *it = item(x, n, i);

		if (!(m >> i & 1))
			continue;
		if (f->a == it->len)
			ended = true;
		else if ((uint8_t)it->s[f->a] == b)
			keep |= 1ull << i;
	}
	if (ended) {
		struct cons_frame cp[D];

		memcpy(cp, fr, (size_t)d * sizeof(*fr));
		pop_feed(x, cp, d, b);
	}
	if (keep) {
		f->phase = 1;
		f->mask = keep;
		f->a++;
		emit(x, fr, d);
	}
}

static void step_number(struct ctx *x, const struct cons_node *n,
			struct cons_frame *fr, int d, uint8_t b)
{
	struct cons_frame *f = &fr[d - 1];
	bool integer = n->flags & NF_INTEGER;

	switch (f->phase) {
	case 0: /* start */
		if (b == '-' && !(n->flags & NF_NONNEG)) {
			f->phase = 1;
		} else if (b == '0') {
			f->phase = 2;
		} else if (DIGIT(b)) {
			f->phase = 3;
			f->a = 1;
		} else {
			return;
		}
		break;
	case 1: /* after '-' */
		if (b == '0')
			f->phase = 2;
		else if (DIGIT(b))
			f->phase = 3, f->a = 1;
		else
			return;
		break;
	case 2: /* "0" */
	case 3: /* integer digits */
		if (f->phase == 3 && DIGIT(b) && f->a < MAX_INT_DIGITS) {
			f->a++;
		} else if (b == '.' && !integer) {
			f->phase = 4;
			f->a = 0;
		} else if ((b == 'e' || b == 'E') && !integer) {
			f->phase = 6;
			f->a = 0;
		} else {
			pop_feed(x, fr, d, b);
			return;
		}
		break;
	case 4: /* after '.' */
	case 5: /* fraction digits */
		if (DIGIT(b) && f->a < MAX_FRAC_DIGITS) {
			f->phase = 5;
			f->a++;
		} else if (f->phase == 5 && (b == 'e' || b == 'E')) {
			f->phase = 6;
			f->a = 0;
		} else if (f->phase == 5) {
			pop_feed(x, fr, d, b);
			return;
		} else {
			return;
		}
		break;
	case 6: /* after 'e' */
		if (b == '+' || b == '-')
			f->phase = 7;
		else if (DIGIT(b))
			f->phase = 8, f->a = 1;
		else
			return;
		break;
	case 7: /* after the exponent's sign */
		if (!DIGIT(b))
			return;
		f->phase = 8;
		f->a = 1;
		break;
	default: /* 8: exponent digits */
		if (DIGIT(b) && f->a < MAX_EXP_DIGITS) {
			f->a++;
		} else {
			pop_feed(x, fr, d, b);
			return;
		}
		break;
	}
	emit(x, fr, d);
}

static bool hex(uint8_t b)
{
	return DIGIT(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F');
}

/* Phases: 0 before '"', 1 in the text, 2 after '\', 3 \u digits (a of
 * them, b their value), 4 UTF-8 continuation bytes (x left; b = lo << 8 |
 * hi of the next one).  Lengths: mask's high half counts code points (for
 * minLength), its low half UTF-16 units (for maxLength), so that a string
 * meets both readings of a length (JSON Schema's code points, and the
 * UTF-16 units of JavaScript validators such as zod). */
#define CP(f)  ((uint32_t)((f)->mask >> 32))
#define U16(f) ((uint32_t)(f)->mask)
static bool take(struct cons_frame *f, const struct cons_node *n, uint32_t u16)
{
	if ((uint64_t)U16(f) + u16 > n->max)
		return false;
	f->mask += (1ull << 32) + u16;
	return true;
}

static void step_string(struct ctx *x, const struct cons_node *n,
			struct cons_frame *fr, int d, uint8_t b)
{
	struct cons_frame *f = &fr[d - 1];

	switch (f->phase) {
	case 0:
		if (b != '"')
			return;
		f->phase = 1;
		break;
	case 1:
		if (b == '"') {
			if (CP(f) < n->min)
				return;
			emit(x, fr, d - 1);
			return;
		}
		if (b < 0x20 || b == 0x7f)
			return;
		if (!take(f, n, b >= 0xF0 ? 2 : 1))
			return;
		if (b == '\\') {
			f->phase = 2;
		} else if (b < 0x80) {
			/* one byte */
		} else if (b >= 0xC2 && b <= 0xDF) {
			f->phase = 4, f->x = 1, f->b = 0x80BF;
		} else if (b >= 0xE0 && b <= 0xEF) {
			f->phase = 4, f->x = 2;
			f->b = b == 0xE0 ? 0xA0BF : b == 0xED ? 0x809F : 0x80BF;
		} else if (b >= 0xF0 && b <= 0xF4) {
			f->phase = 4, f->x = 3;
			f->b = b == 0xF0 ? 0x90BF : b == 0xF4 ? 0x808F : 0x80BF;
		} else {
			return;
		}
		break;
	case 2:
		if (b == 'u') {
			f->phase = 3;
			f->a = 0;
			f->b = 0;
		} else if (b && strchr("\"\\/bfnrt", b)) {
			f->phase = 1;
		} else {
			return;
		}
		break;
	case 3:
		if (!hex(b))
			return;
		f->b = f->b << 4 |
		       (uint32_t)(DIGIT(b) ? b - '0' : (b | 0x20) - 'a' + 10);
		if (++f->a == 4) {
			/* a low surrogate completes the code point before it */
			if (f->b >= 0xDC00 && f->b <= 0xDFFF && CP(f) > 0)
				f->mask -= 1ull << 32;
			f->phase = 1, f->a = 0, f->b = 0;
		}
		break;
	default:
		if (b < (f->b >> 8) || b > (f->b & 0xff))
			return;
		f->b = 0x80BF;
		if (--f->x == 0)
			f->phase = 1, f->b = 0;
		break;
	}
	emit(x, fr, d);
}

/* The moves objects and arrays share.  Each records one optional space
 * after ',' or ':' in a flag field of the frame (@flag). */
#define OPT_SPACE(b, flag) ((b) == ' ' && !(flag) && ((flag) = 1))

/* Phase 0 of a container: take its opening byte @open. */
static void open_with(struct ctx *x, struct cons_frame *fr, int d, uint8_t b,
		      uint8_t open)
{
	if (b == open) {
		fr[d - 1].phase = 1;
		emit(x, fr, d);
	}
}

/* After a member: ',' (if @more) goes to @comma_phase with no space
 * taken yet; @close (if @end) closes the container. */
static void after_member(struct ctx *x, struct cons_frame *fr, int d, uint8_t b,
			 uint8_t close, uint8_t comma_phase, bool more,
			 bool end)
{
	struct cons_frame *f = &fr[d - 1];

	if (b == ',' && more) {
		f->phase = comma_phase;
		f->x = 0;
		emit(x, fr, d);
	} else if (b == close && end) {
		emit(x, fr, d - 1);
	}
}

/* Phases: 0 before '{', 1 after '{', 2 after ',' (x: space taken), 3 in
 * a key (b bytes of it; mask: the properties it may still be), 4 before
 * ':' (x: the property), 5 after ':' (b: space taken), 6 after a value.
 * a: the index after the last property written. */
static void step_object(struct ctx *x, const struct cons_node *n,
			struct cons_frame *fr, int d, uint8_t b)
{
	struct cons_frame *f = &fr[d - 1];
	uint64_t keep = 0;
	unsigned i;

	switch (f->phase) {
	case 0:
		open_with(x, fr, d, b, '{');
		return;
	case 2:
		if (OPT_SPACE(b, f->x))
			break;
		/* fall through */
	case 1:
		if (b == '}' && f->phase == 1 && !required_from(n, 0)) {
			emit(x, fr, d - 1);
			return;
		}
		if (b != '"')
			return;
		f->mask = candidates(n, f->a);
		if (!f->mask)
			return;
		f->phase = 3;
		f->x = 0;
		break;
	case 3:
		for (i = 0; i < n->n; i++) {
			const struct cons_item *it = item(x, n, i);

			if (!(f->mask >> i & 1))
				continue;
			if (b == '"' && it->len == f->b) {
				f->phase = 4;
				f->x = (uint8_t)i;
				f->mask = 0;
				f->b = 0;
				emit(x, fr, d);
				return;
			}
			if (f->b < it->len && (uint8_t)it->s[f->b] == b)
				keep |= 1ull << i;
		}
		if (!keep)
			return;
		f->mask = keep;
		f->b++;
		break;
	case 4:
		if (b != ':')
			return;
		f->phase = 5;
		break;
	case 5:
		if (OPT_SPACE(b, f->b))
			break;
		i = f->x;
		f->phase = 6;
		f->a = i + 1;
		f->x = 0;
		f->b = 0;
		push(x, fr, d, item(x, n, i)->node, 0, true, b);
		return;
	default:
		after_member(x, fr, d, b, '}', 2, candidates(n, f->a) != 0,
			     !required_from(n, f->a));
		return;
	}
	emit(x, fr, d);
}

/* Any object.  Phases: 0 before '{', 1 after '{', 2 after ',' (x: space
 * taken), 3 after a key, 4 after ':' (x: space taken), 5 after a value. */
static void step_anyobj(struct ctx *x, const struct cons_node *n,
			struct cons_frame *fr, int d, uint8_t b)
{
	struct cons_frame *f = &fr[d - 1];

	switch (f->phase) {
	case 0:
		open_with(x, fr, d, b, '{');
		return;
	case 2:
		if (OPT_SPACE(b, f->x))
			break;
		/* fall through */
	case 1:
		if (b == '}' && f->phase == 1) {
			emit(x, fr, d - 1);
			return;
		}
		if (b != '"')
			return;
		f->phase = 3;
		f->x = 0;
		push(x, fr, d, item(x, n, 0)->node, 1, false, 0);
		return;
	case 3:
		if (b != ':')
			return;
		f->phase = 4;
		break;
	case 4:
		if (OPT_SPACE(b, f->x))
			break;
		f->phase = 5;
		f->x = 0;
		push(x, fr, d, item(x, n, 1)->node, 0, true, b);
		return;
	default:
		after_member(x, fr, d, b, '}', 2, true, true);
		return;
	}
	emit(x, fr, d);
}

/* Phases: 0 before '[', 1 after '[', 2 after an item, 3 after ',' (x:
 * space taken).  a: items so far. */
static void step_array(struct ctx *x, const struct cons_node *n,
		       struct cons_frame *fr, int d, uint8_t b)
{
	struct cons_frame *f = &fr[d - 1];

	switch (f->phase) {
	case 0:
		open_with(x, fr, d, b, '[');
		return;
	case 1:
		if (b == ']') {
			if (n->min == 0)
				emit(x, fr, d - 1);
			return;
		}
		if (n->max == 0)
			return;
		f->phase = 2;
		f->a = 1;
		push(x, fr, d, item(x, n, 0)->node, 0, true, b);
		return;
	case 2:
		after_member(x, fr, d, b, ']', 3, f->a < n->max,
			     f->a >= n->min);
		return;
	default:
		if (OPT_SPACE(b, f->x))
			break;
		f->phase = 2;
		f->a++;
		f->x = 0;
		push(x, fr, d, item(x, n, 0)->node, 0, true, b);
		return;
	}
	emit(x, fr, d);
}

/* phase: the item next; a: bytes of a literal item matched. */
static void step_seq(struct ctx *x, const struct cons_node *n,
		     struct cons_frame *fr, int d, uint8_t b)
{
	struct cons_frame *f = &fr[d - 1];
	const struct cons_item *it;

	if (f->phase >= n->n) {
		pop_feed(x, fr, d, b);
		return;
	}
	it = item(x, n, f->phase);
	if (!it->s) {
		f->phase++;
		f->a = 0;
		push(x, fr, d, it->node, 0, true, b);
		return;
	}
	if ((uint8_t)it->s[f->a] != b)
		return;
	if (++f->a == it->len) {
		f->phase++;
		f->a = 0;
	}
	emit(x, fr, d);
}

static void step(struct ctx *x, struct cons_frame *fr, int d, uint8_t b)
{
	const struct cons_node *n;
	struct cons_frame cp[D];
	unsigned i;

	if (d == 0)
		return;
	n = &x->c->nodes[fr[d - 1].node];
	switch (n->kind) {
	case K_ANYOF:
		for (i = 0; i < n->n; i++) {
			memcpy(cp, fr, (size_t)(d - 1) * sizeof(*fr));
			memset(&cp[d - 1], 0, sizeof(cp[d - 1]));
			cp[d - 1].node = item(x, n, i)->node;
			step(x, cp, d, b);
		}
		return;
	case K_SEQ:
		step_seq(x, n, fr, d, b);
		return;
	case K_OBJECT:
		step_object(x, n, fr, d, b);
		return;
	case K_ANYOBJ:
		step_anyobj(x, n, fr, d, b);
		return;
	case K_ARRAY:
		step_array(x, n, fr, d, b);
		return;
	case K_STRING:
		step_string(x, n, fr, d, b);
		return;
	case K_NUMBER:
		step_number(x, n, fr, d, b);
		return;
	default:
		step_enum(x, n, fr, d, b);
		return;
	}
}

bool engy_cons_step(const struct engy_cons_state *in, uint8_t b,
		    struct engy_cons_state *out)
{
	struct cons_frame fr[D];
	struct ctx x = { in->c, out, false };
	unsigned i;

	out->c = in->c;
	out->n = 0;
	for (i = 0; i < in->n; i++) {
		memcpy(fr, in->fr[i], in->depth[i] * sizeof(fr[0]));
		step(&x, fr, in->depth[i], b);
	}
	if (x.overflow)
		out->n = 0; /* refused at compile time; never reached */
	return out->n > 0;
}

void engy_cons_copy(struct engy_cons_state *dst,
		    const struct engy_cons_state *src)
{
	unsigned i;

	dst->c = src->c;
	dst->n = src->n;
	for (i = 0; i < src->n; i++) {
		dst->depth[i] = src->depth[i];
		memcpy(dst->fr[i], src->fr[i],
		       src->depth[i] * sizeof(src->fr[i][0]));
	}
}

struct engy_cons_state *engy_cons_state_new(const struct engy_cons *c)
{
	struct engy_cons_state *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->c = c;
	s->n = 1;
	s->depth[0] = 1;
	s->fr[0][0].node = c->root;
	return s;
}

struct engy_cons_state *engy_cons_state_dup(const struct engy_cons_state *s)
{
	struct engy_cons_state *d = malloc(sizeof(*d));

	if (d)
		engy_cons_copy(d, s);
	return d;
}

void engy_cons_state_free(struct engy_cons_state *s)
{
	free(s);
}

int engy_cons_feed(struct engy_cons_state *s, const uint8_t *p, size_t n)
{
	struct engy_cons_state *a, *b, *t;
	size_t i;

	if (!n)
		return 0;
	a = malloc(sizeof(*a));
	b = malloc(sizeof(*b));
	if (!a || !b) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	engy_cons_copy(a, s);
	for (i = 0; i < n; i++) {
		if (!engy_cons_step(a, p[i], b)) {
			free(a);
			free(b);
			return -EINVAL;
		}
		t = a, a = b, b = t;
	}
	engy_cons_copy(s, a);
	free(a);
	free(b);
	return 0;
}

/* A frame that may end where it stands (the byte after it decides). */
static bool can_end(const struct engy_cons *c, const struct cons_frame *f)
{
	const struct cons_node *n = &c->nodes[f->node];
	unsigned i;

	switch (n->kind) {
	case K_NUMBER:
		return f->phase == 2 || f->phase == 3 || f->phase == 5 ||
		       f->phase == 8;
	case K_ENUM:
		if (!f->phase)
			return false;
		for (i = 0; i < n->n; i++)
			if ((f->mask >> i & 1) &&
			    c->items[n->first + i].len == f->a)
				return true;
		return false;
	case K_SEQ:
		return f->phase >= n->n;
	default:
		return false;
	}
}

bool engy_cons_done(const struct engy_cons_state *s)
{
	unsigned i;
	int k;

	for (i = 0; i < s->n; i++) {
		for (k = s->depth[i] - 1; k >= 0; k--)
			if (!can_end(s->c, &s->fr[i][k]))
				break;
		if (k < 0)
			return true;
	}
	return false;
}

bool engy_cons_more(const struct engy_cons_state *s)
{
	unsigned i;

	for (i = 0; i < s->n; i++)
		if (s->depth[i] > 0 &&
		    !(s->depth[i] == 1 && can_end(s->c, &s->fr[i][0]) &&
		      s->c->nodes[s->fr[i][0].node].kind == K_SEQ))
			return true;
	return false;
}

/* ---- the shortest way to finish ---- */

#define INF_LEN 0x3fffffffu

static uint32_t add(uint32_t a, uint32_t b)
{
	return a >= INF_LEN || b >= INF_LEN || a + b >= INF_LEN ? INF_LEN
								: a + b;
}

/* @k more items, each with its comma, then ']'. */
static uint32_t items_len(uint32_t m, uint32_t k)
{
	uint64_t r = (uint64_t)k * ((uint64_t)m + 1) + 1;

	return m >= INF_LEN || r >= INF_LEN ? INF_LEN : (uint32_t)r;
}

/* Bytes of a property written in full after a comma: ,"key":value */
static uint32_t prop_len(const struct engy_cons *c, const struct cons_item *it)
{
	return add(it->len + 4, c->nodes[it->node].minlen);
}

/* The required properties from @j on, then '}'. */
static uint32_t req_rest(const struct engy_cons *c, const struct cons_node *n,
			 uint32_t j)
{
	uint32_t r = 1;

	for (; j < n->n; j++)
		if (n->required >> j & 1)
			r = add(r, prop_len(c, &c->items[n->first + j]));
	return r;
}

/* A key to write next, one of @cand (@done of its bytes written), its
 * value, and what must follow it. */
static uint32_t key_rest(const struct engy_cons *c, const struct cons_node *n,
			 uint64_t cand, uint32_t done)
{
	uint32_t best = INF_LEN, i, l;

	for (i = 0; i < n->n; i++) {
		const struct cons_item *it = &c->items[n->first + i];

		if (!(cand >> i & 1))
			continue;
		l = add(add(it->len - (done < it->len ? done : it->len) + 2,
			    c->nodes[it->node].minlen),
			req_rest(c, n, i + 1));
		best = l < best ? l : best;
	}
	return best;
}

static uint32_t node_min(const struct engy_cons *c, const struct cons_node *n)
{
	uint32_t r = INF_LEN, i, m, l;

	switch (n->kind) {
	case K_STRING:
		return add(2, n->min);
	case K_NUMBER:
		return 1;
	case K_ENUM:
		for (i = 0; i < n->n; i++)
			r = c->items[n->first + i].len < r
				    ? c->items[n->first + i].len
				    : r;
		return r;
	case K_ANYOBJ:
		return 2;
	case K_ARRAY:
		m = c->nodes[c->items[n->first].node].minlen;
		/* [ item (,item)* ] */
		return n->min ? add(1, items_len(m, n->min)) : 2;
	case K_OBJECT:
		/* '{' the required properties (the first without its
		 * comma: one byte over, never under) '}' */
		return add(1, req_rest(c, n, 0));
	case K_SEQ:
		r = 0;
		for (i = 0; i < n->n; i++) {
			const struct cons_item *it = &c->items[n->first + i];

			r = add(r, it->s ? it->len : c->nodes[it->node].minlen);
		}
		return r;
	default: /* anyOf */
		for (i = 0; i < n->n; i++) {
			l = c->nodes[c->items[n->first + i].node].minlen;
			r = l < r ? l : r;
		}
		return r;
	}
}

bool engy_cons_minlen(struct engy_cons *c)
{
	bool changed = true;
	size_t i, rounds = 0;

	for (i = 0; i < c->n_nodes; i++)
		c->nodes[i].minlen = INF_LEN;
	/* Each round fixes one more level at least; the lengths only go
	 * down, so n_nodes + 1 rounds reach the fixpoint. */
	while (changed && rounds++ <= c->n_nodes) {
		changed = false;
		for (i = 0; i < c->n_nodes; i++) {
			uint32_t m = node_min(c, &c->nodes[i]);

			if (m < c->nodes[i].minlen) {
				c->nodes[i].minlen = m;
				changed = true;
			}
		}
	}
	return c->nodes[c->root].minlen < INF_LEN;
}

/* Bytes that finish @f once the frames above it are done (never fewer
 * than needed). */
static uint32_t frame_close(const struct engy_cons *c,
			    const struct cons_frame *f)
{
	const struct cons_node *n = &c->nodes[f->node];
	uint32_t r, i, m;

	switch (n->kind) {
	case K_STRING:
		switch (f->phase) {
		case 0:
			return n->minlen;
		case 1:
			return 1 + (CP(f) < n->min ? n->min - CP(f) : 0);
		case 2:
			return 2 + (CP(f) < n->min ? n->min - CP(f) : 0);
		case 3:
			return 5 - f->a + (CP(f) < n->min ? n->min - CP(f) : 0);
		default:
			return f->x + 1 + (CP(f) < n->min ? n->min - CP(f) : 0);
		}
	case K_NUMBER:
		return f->phase == 2 || f->phase == 3 || f->phase == 5 ||
				       f->phase == 8
			       ? 0
			       : 1;
	case K_ENUM:
		if (!f->phase)
			return n->minlen;
		r = INF_LEN;
		for (i = 0; i < n->n; i++)
			if ((f->mask >> i & 1) &&
			    c->items[n->first + i].len - f->a < r)
				r = c->items[n->first + i].len - f->a;
		return r;
	case K_ANYOBJ:
		switch (f->phase) {
		case 0:
			return 2;
		case 1:
		case 5:
			return 1;
		case 2:
			return 5; /* "":0} */
		case 3:
			return 3; /* :0} */
		default:
			return 2; /* 0} */
		}
	case K_ARRAY:
		m = c->nodes[c->items[n->first].node].minlen;
		switch (f->phase) {
		case 0:
			return n->minlen;
		case 1:
			return n->min ? n->minlen - 1 : 1;
		case 2:
			return add(
				items_len(m, n->min > f->a ? n->min - f->a : 0),
				0);
		default:
			return add(m, items_len(m, n->min > f->a + 1
							   ? n->min - f->a - 1
							   : 0));
		}
	case K_OBJECT:
		switch (f->phase) {
		case 0:
			return n->minlen;
		case 1:
			return req_rest(c, n, 0);
		case 2:
			return key_rest(c, n, candidates(n, f->a), 0) + 1;
		case 3:
			return key_rest(c, n, f->mask, f->b);
		case 4:
			return add(1,
				   add(c->nodes[c->items[n->first + f->x].node]
					       .minlen,
				       req_rest(c, n, f->x + 1u)));
		case 5:
			return add(
				c->nodes[c->items[n->first + f->x].node].minlen,
				req_rest(c, n, f->x + 1u));
		default:
			return req_rest(c, n, f->a);
		}
	case K_SEQ:
		r = 0;
		for (i = f->phase; i < n->n; i++) {
			const struct cons_item *it = &c->items[n->first + i];

			r = add(r, it->s ? it->len - (i == f->phase ? f->a : 0)
					 : c->nodes[it->node].minlen);
		}
		return r;
	default: /* anyOf not yet expanded */
		return n->minlen;
	}
}

uint32_t engy_cons_min_close(const struct engy_cons_state *s)
{
	uint32_t best = INF_LEN, r;
	unsigned i;
	int k;

	for (i = 0; i < s->n; i++) {
		r = 0;
		for (k = 0; k < s->depth[i]; k++)
			r = add(r, frame_close(s->c, &s->fr[i][k]));
		best = r < best ? r : best;
	}
	return best;
}
