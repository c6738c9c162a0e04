/* SPDX-License-Identifier: MIT */
/*
 * Constrained decoding: a JSON-schema subset compiled into a byte-level
 * pushdown automaton, and the per-step token mask it gives over a
 * vocabulary (specs/serve.md "Constrained decoding").
 *
 * A compiled constraint (struct engy_cons) is immutable and may be shared
 * between threads; a matcher state (struct engy_cons_state) belongs to one
 * generation.  The automaton is a bounded set of bounded stacks: at most
 * ENGY_CONS_MAX_STACKS alternatives alive at once (anyOf branches that the
 * bytes so far do not tell apart), each at most ENGY_CONS_MAX_DEPTH frames
 * deep, so one byte costs O(stacks x depth) whatever the schema; the
 * compiler refuses a schema that could need more (no exponential blowup).
 *
 * The output grammar is compact JSON: no whitespace except one optional
 * space after ':' and ','; object properties in the schema's order
 * (optional ones may be left out); numbers of at most 15 integer and 15
 * fraction digits.  Nothing here logs or keeps what it matches.
 */
#ifndef ENGY_CONSTRAIN_H
#define ENGY_CONSTRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define ENGY_CONS_MAX_STACKS 16
#define ENGY_CONS_MAX_DEPTH  32
/* Compile-time limits on a schema. */
#define ENGY_CONS_MAX_NODES    2048
#define ENGY_CONS_MAX_NEST     24  /* schema objects inside each other */
#define ENGY_CONS_MAX_PROPS    64  /* properties of one object */
#define ENGY_CONS_MAX_ENUM     64  /* values of one enum */
#define ENGY_CONS_MAX_LITERAL  512 /* bytes of one enum value or key */
#define ENGY_CONS_MAX_BRANCHES 16  /* anyOf / oneOf / type arrays */
#define ENGY_CONS_MAX_AFFIX    256 /* bytes of the prefix or suffix */

struct engy_cons;
struct engy_cons_state;

/*
 * engy_cons_compile() - @schema (a JSON schema; NULL for "any JSON
 * object", OpenAI's json_object) between the literal @prefix and @suffix
 * (NULL or "" for none).  Returns 0, -EINVAL with a reason in @err that
 * names the unsupported feature and where ("unsupported keyword
 * \"pattern\" at /properties/email"), -E2BIG over a limit, or -ENOMEM.
 */
int engy_cons_compile(const cJSON *schema, const char *prefix,
		      const char *suffix, struct engy_cons **out, char *err,
		      size_t errlen);
void engy_cons_free(struct engy_cons *c);

/* A fresh matcher at the start of the output. */
struct engy_cons_state *engy_cons_state_new(const struct engy_cons *c);
void engy_cons_state_free(struct engy_cons_state *s);
/* A copy of @s (NULL when out of memory). */
struct engy_cons_state *engy_cons_state_dup(const struct engy_cons_state *s);

/*
 * engy_cons_feed() - advance @s by @n bytes: 0, or -EINVAL when they are
 * not a continuation the constraint allows (@s is then unchanged).
 */
int engy_cons_feed(struct engy_cons_state *s, const uint8_t *p, size_t n);

/* The output so far is complete: the generation may end here. */
bool engy_cons_done(const struct engy_cons_state *s);

/* Some byte may still follow (false once the output is complete and
 * nothing can extend it). */
bool engy_cons_more(const struct engy_cons_state *s);

/*
 * engy_cons_min_close() - at least how many bytes still finish the output
 * (0: complete; never fewer than needed).  A byte-level vocabulary has a
 * token for each byte, so that many tokens always suffice.
 */
uint32_t engy_cons_min_close(const struct engy_cons_state *s);

/*
 * A vocabulary as the mask needs it: each id's bytes (the tokenizer's
 * decoding of that one id, without UTF-8 repair); ids with no bytes
 * (special tokens, unused ids) are never allowed.
 */
struct engy_cons_vocab;

struct engy_cons_vocab *engy_cons_vocab_new(size_t n_ids);
/* Sets id @id's bytes (copied): 0, -ERANGE, -ENOMEM. */
int engy_cons_vocab_set(struct engy_cons_vocab *v, uint32_t id,
			const uint8_t *p, size_t n);
/* Ready for masks once every id is set (builds the prefix tree). */
int engy_cons_vocab_seal(struct engy_cons_vocab *v);
void engy_cons_vocab_free(struct engy_cons_vocab *v);
size_t engy_cons_vocab_size(const struct engy_cons_vocab *v);

/*
 * engy_cons_mask() - @allow[id] = 1 for every id whose bytes the
 * constraint allows next from @s, else 0 (@allow has vocab_size bytes).
 * End-of-sequence ids are the caller's: allow them iff engy_cons_done().
 * Returns the number of ids allowed.  Costs one walk of the vocabulary's
 * prefix tree, pruned where the automaton dies.
 */
size_t engy_cons_mask(const struct engy_cons_state *s,
		      const struct engy_cons_vocab *v, uint8_t *allow);

/*
 * engy_cons_mask_logits() - the mask applied to @logits [vocab_size]:
 * refused ids get -INFINITY; the @n_eos ids in @eos stay only when the
 * output is complete.  @left: the tokens the generation may still emit,
 * this one included (0: no limit); near its end only ids after which the
 * output can still be completed in time stay (so that a long string or
 * an open object is closed before max_tokens rather than cut).
 * @scratch has vocab_size bytes.  Returns the ids left (0: nothing may
 * follow, the generation must stop).
 */
size_t engy_cons_mask_logits(const struct engy_cons_state *s,
			     const struct engy_cons_vocab *v, float *logits,
			     const uint32_t *eos, size_t n_eos, uint32_t left,
			     uint8_t *scratch);

/* engy_cons_feed() of id @id's bytes. */
int engy_cons_feed_id(struct engy_cons_state *s,
		      const struct engy_cons_vocab *v, uint32_t id);

/* ---- forced tool calls (an OpenAI chat body's tools and tool_choice) ---- */

/*
 * engy_cons_tool_choice() - 1 when @body forces a tool call (tool_choice
 * "required", or naming a function, *@only then that name, borrowed),
 * else 0.
 */
int engy_cons_tool_choice(const cJSON *body, const char **only);

/*
 * engy_cons_tool_schema() - the schema a forced call's JSON must match:
 * {"name": const, "arguments": the tool's parameters (any object when it
 * has none)}, one tool's or an anyOf over @tools (normalized OpenAI
 * tools; only the one named @only when not NULL).  NULL when no tool
 * matches or out of memory.
 */
cJSON *engy_cons_tool_schema(const cJSON *tools, const char *only);

#endif /* ENGY_CONSTRAIN_H */
