/* SPDX-License-Identifier: MIT */
/*
 * Pieces the batch and the streaming generation parsers share: where a tool
 * call starts, how a parameter value is typed, call ids.  The two parsers
 * walk the text independently; these leaf rules keep them in agreement.
 */
#ifndef ENGY_GENPARSE_INT_H
#define ENGY_GENPARSE_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "chat_util.h"

#define GEN_THINK     "<think>"
#define GEN_THINK_END "</think>"
#define GEN_TC	      "<tool_call>"
#define GEN_TC_END    "</tool_call>"
#define GEN_FN	      "<function="
#define GEN_FN_END    "</function>"
#define GEN_PARAM     "<parameter="
#define GEN_PARAM_END "</parameter>"
#define GEN_LEN(m)    (sizeof(m) - 1)

/* Whitespace trimmed off reasoning and content (ASCII, one byte each). */
static inline bool engy_gen_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
	       c == '\f';
}

enum {
	ENGY_GEN_MORE = 0, /* undecided until more text (or the end) arrives */
	ENGY_GEN_FAIL,	   /* not a tool call: the marker is plain text */
	ENGY_GEN_XML,	   /* <function=NAME> opened a call */
	ENGY_GEN_JSON,	   /* a whole hermes JSON call */
};

struct engy_gen_probe {
	size_t used;	  /* bytes of the text the decision covers */
	const char *name; /* XML: the trimmed function name (into the text) */
	size_t name_len;
	char *json_name; /* JSON: malloc'd name and arguments */
	char *json_args;
};

/*
 * engy_gen_probe() - does the text at @p (which starts with "<tool_call>")
 * open a tool call?  @final: no more text will come.  XML: @used covers up to
 * the '>' of <function=NAME>; JSON: the block through </tool_call> (or the
 * end).  Returns ENGY_GEN_* or -ENOMEM.
 */
int engy_gen_probe(const char *p, size_t n, bool final,
		   struct engy_gen_probe *pr);

/*
 * engy_gen_fname() - @p starts right after "<function=": the name ends at
 * '>', must not hold '<' or a newline and must not be blank.  Returns
 * ENGY_GEN_MORE, ENGY_GEN_FAIL or ENGY_GEN_XML with *@gt = offset of '>'.
 */
int engy_gen_fname(const char *p, size_t n, bool final, size_t *gt);

/* Narrow [*p, *p + *n) by engy_gen_ws on both sides. */
void engy_gen_trim(const char **p, size_t *n);

/* The "properties" object of tool @name in @tools, or NULL. */
const cJSON *engy_gen_tool_props(const cJSON *tools, const char *name,
				 size_t n);

/*
 * engy_gen_param_json() - append `"KEY": VALUE` for a <parameter=KEY> whose
 * raw value is @val (one leading and one trailing newline already removed),
 * typed by the schema in @props.
 */
void engy_gen_param_json(struct engy_chat_buf *b, const cJSON *props,
			 const char *key, size_t klen, const char *val,
			 size_t vlen);

/* Call ids: "<prefix><index>" when @prefix is set, else call_<24 hex>. */
void engy_gen_call_id(const char *prefix, size_t index, char *out, size_t cap);

/* Strip one leading and one trailing '\n' from a parameter value. */
void engy_gen_value_strip(const char **p, size_t *n);

#endif /* ENGY_GENPARSE_INT_H */
