/* SPDX-License-Identifier: MIT */
/*
 * A JSON object parsed member by member, where named members are checked
 * but not built: their text is kept as one cJSON_Raw node.  A miner's
 * response frame is mostly its commitment (proofs, the prompt's and the
 * answer's token ids: one number per token); the gateway needs it only
 * for the entries the tee samples and for probes, so building it as a
 * tree (a node, a strtod and a free per token id) on every answer is
 * work on the loop thread for nothing.
 */
#ifndef ENGY_JSON_LAZY_H
#define ENGY_JSON_LAZY_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Deepest nesting engy_json_skip() follows inside a skipped value. */
#define ENGY_JSON_SKIP_DEPTH 256

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
 * engy_json_parse_lazy() - @s..@s+@len as a JSON object whose members
 * named in @raw_keys (NULL-terminated) are cJSON_Raw nodes holding their
 * text (checked by engy_json_skip()), every other member parsed by cJSON.
 * NULL for anything else, or for an object this path does not take (a
 * key with escapes): the caller parses it whole with cJSON instead, so
 * the lazy path only ever saves work and never changes what is accepted.
 * Free with cJSON_Delete().
 */
cJSON *engy_json_parse_lazy(const char *s, size_t len,
			    const char *const *raw_keys);

#endif /* ENGY_JSON_LAZY_H */
