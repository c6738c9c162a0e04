/* SPDX-License-Identifier: MIT */
/*
 * JSON read strictly in one pass and built as the very tree cJSON builds
 * (engy_json_parse()), and a JSON object parsed member by member, where
 * named members are checked but not built: their text is kept as one
 * cJSON_Raw node (engy_json_parse_lazy()).
 *
 * cJSON scans a string twice and copies every number to a buffer for
 * strtod(); here a string is scanned once and an integer of up to 15
 * digits (a token id, a count) is converted directly.  What these
 * functions do not take they leave to cJSON, so they only ever save work.
 *
 * A miner's response frame is mostly its commitment (proofs, the prompt's
 * and the answer's token ids: one number per token); the gateway needs it
 * only for the entries the tee samples and for probes, so building it as
 * a tree (a node, a strtod and a free per token id) on every answer is
 * work on the loop thread for nothing.
 */
#ifndef ENGY_JSON_LAZY_H
#define ENGY_JSON_LAZY_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Deepest nesting engy_json_skip() follows inside a skipped value. */
#define ENGY_JSON_SKIP_DEPTH 256

/* Deepest nesting engy_json_parse() builds (cJSON's is 1000). */
#define ENGY_JSON_PARSE_DEPTH 256

/*
 * engy_json_skip() - the end of the one JSON value at @p (no leading
 * white space), or NULL when @p..@end does not start with a valid value
 * nested at most @max_depth deep.  Strict RFC 8259 (no leading zeros, no
 * control characters in strings, escapes as cJSON reads them: a high
 * surrogate must be followed by a low one), so whatever it accepts cJSON
 * parses.
 */
const char *engy_json_skip(const char *p, const char *end, unsigned max_depth);

/*
 * engy_json_parse() - the one JSON value at @s..@s+@len (after any bytes
 * up to a space, which cJSON skips too) as the tree
 * cJSON_ParseWithLengthOpts(@s, @len, @end, false) builds, node for node:
 * members in their order, duplicate keys kept, strings unescaped to the
 * same UTF-8, numbers to the same double and the same saturated int.
 * *@end (when @end is not NULL) is set past the value as cJSON sets it;
 * text after the value is the caller's to judge.  NULL, *@end untouched,
 * for what this path does not take: text engy_json_skip() refuses (where
 * cJSON is laxer: other white space, control characters in strings, a
 * byte-order mark), nesting deeper than ENGY_JSON_PARSE_DEPTH, a string
 * holding \u0000, a number cJSON reads otherwise (over 63 bytes, or
 * followed by a byte it would read as part of it), or no memory.  The
 * caller then parses with cJSON, so the answer is never different.  Free
 * with cJSON_Delete().
 */
cJSON *engy_json_parse(const char *s, size_t len, const char **end);

/*
 * engy_json_parse_lazy() - @s..@s+@len as a JSON object whose members
 * named in @raw_keys (NULL-terminated, matched against the unescaped key)
 * are cJSON_Raw nodes holding their text (checked by engy_json_skip()),
 * every other member built as engy_json_parse() builds it.  The object
 * may have white space around it, nothing else.  NULL for anything else,
 * or for what engy_json_parse() does not take (the object counts as one
 * level of nesting): the caller parses it whole with cJSON instead, so
 * the lazy path only ever saves work and never changes what is accepted.
 * Free with cJSON_Delete().
 */
cJSON *engy_json_parse_lazy(const char *s, size_t len,
			    const char *const *raw_keys);

#endif /* ENGY_JSON_LAZY_H */
