/* SPDX-License-Identifier: MIT */
/*
 * Server-sent events splitter (see sse.h).  A byte-driven state machine
 * whose only hot loop is the run of a data value, found with memchr, so a
 * long final event costs two memchr passes over its bytes.
 */
#include <string.h>

#include "sse.h"

enum {
	S_LINE,	 /* at the start of a line */
	S_FIELD, /* in a field name */
	S_COLON, /* just after the colon: one space may follow */
	S_DATA,	 /* in the value of a data line */
	S_SKIP,	 /* in a comment or a field we ignore */
};

#define FIELD_OTHER 0xffu /* flen marker: not "data" */

void engy_sse_init(struct engy_sse *s, const struct engy_sse_cb *cb, void *arg)
{
	memset(s, 0, sizeof(*s));
	s->cb = cb;
	s->arg = arg;
	s->state = S_LINE;
}

static bool field_is_data(const struct engy_sse *s)
{
	return s->flen == 4 && memcmp(s->field, "data", 4) == 0;
}

/* A data line starts: lines of one event are joined with "\n". */
static int data_line(struct engy_sse *s)
{
	int rc = 0;

	if (s->has_data && s->cb->data)
		rc = s->cb->data(s->arg, "\n", 1);
	s->has_data = true;
	return rc;
}

/* A line ended in @state. */
static int end_line(struct engy_sse *s)
{
	int rc = 0;

	switch (s->state) {
	case S_LINE: /* blank line: dispatch */
		if (s->has_data && s->cb->event)
			rc = s->cb->event(s->arg);
		s->has_data = false;
		break;
	case S_FIELD: /* a name without a colon has an empty value */
		if (field_is_data(s))
			rc = data_line(s);
		break;
	case S_COLON:
		if (field_is_data(s))
			rc = data_line(s);
		break;
	default:
		break;
	}
	s->state = S_LINE;
	return rc;
}

/* Where the next CR or LF is in [p, end), or end. */
static const char *find_eol(const char *p, const char *end)
{
	const char *lf = memchr(p, '\n', (size_t)(end - p));
	const char *cr = memchr(p, '\r', (size_t)((lf ? lf : end) - p));

	return cr ? cr : lf ? lf : end;
}

/* Drop the UTF-8 BOM that may open the stream, across feeds. */
static const char *skip_bom(struct engy_sse *s, const char *p, const char *end)
{
	static const unsigned char bom[3] = { 0xef, 0xbb, 0xbf };

	while (!s->bom_checked && p < end) {
		if ((unsigned char)*p != bom[s->bom_seen]) {
			s->bom_checked = true;
			if (s->bom_seen) {
				/* Not a BOM after all: those bytes begin a
				 * field name that is not "data". */
				s->state = S_FIELD;
				s->flen = FIELD_OTHER;
			}
			break;
		}
		p++;
		if (++s->bom_seen == 3)
			s->bom_checked = true;
	}
	return p;
}

int engy_sse_feed(struct engy_sse *s, const char *p, size_t n)
{
	const char *end = p + n, *eol;
	int rc;

	if (s->err)
		return s->err;
	p = skip_bom(s, p, end);
	while (p < end) {
		char c = *p;

		if (s->skip_lf) {
			s->skip_lf = false;
			if (c == '\n') {
				p++;
				continue;
			}
		}
		if (c == '\r' || c == '\n') {
			s->skip_lf = c == '\r';
			p++;
			rc = end_line(s);
			if (rc)
				goto fail;
			continue;
		}
		switch (s->state) {
		case S_LINE:
			if (c == ':') {
				s->state = S_SKIP;
				p++;
				break;
			}
			s->state = S_FIELD;
			s->flen = 0;
			/* fall through */
		case S_FIELD:
			p++;
			if (c == ':') {
				s->state = S_COLON;
				break;
			}
			if (s->flen < 4 && c == "data"[s->flen])
				s->field[s->flen++] = c;
			else
				s->flen = FIELD_OTHER;
			break;
		case S_COLON:
			if (!field_is_data(s)) {
				s->state = S_SKIP;
				break;
			}
			rc = data_line(s);
			if (rc)
				goto fail;
			s->state = S_DATA;
			if (c == ' ')
				p++;
			break;
		case S_DATA:
			eol = find_eol(p, end);
			if (s->cb->data) {
				rc = s->cb->data(s->arg, p, (size_t)(eol - p));
				if (rc)
					goto fail;
			}
			p = eol;
			break;
		default: /* S_SKIP */
			p = find_eol(p, end);
			break;
		}
	}
	return 0;
fail:
	s->err = rc;
	return rc;
}

int engy_sse_end(struct engy_sse *s)
{
	if (s->err)
		return s->err;
	/* A data line cut before its line end still belongs to an event
	 * that never got its blank line. */
	return s->has_data || (s->state != S_LINE && field_is_data(s)) ? 1 : 0;
}
