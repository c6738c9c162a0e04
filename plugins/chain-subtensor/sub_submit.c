/* SPDX-License-Identifier: MIT */
/* set_weights: build, sign, submit, find the block, read the outcome. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ss58.h"
#include "sub.h"
#include "xxhash.h"

/* Pool-time refusals of current subtensor runtimes ("Custom error: N"). */
static const char *custom_name(long n)
{
	switch (n) {
	case 1:
		return "StakeAmountTooLow";
	case 3:
		return "SubnetNotExists";
	case 6:
		return "RateLimitExceeded";
	case 15:
		return "InvalidRevealRound";
	case 16:
		return "CommitNotFound";
	case 17:
		return "CommitBlockNotInRevealRange";
	case 18:
		return "InputLengthsUnequal";
	case 19:
		return "UidNotFound";
	case 255:
		return "BadRequest";
	}
	return NULL;
}

static void pool_refusal(struct sub_job *j, struct rpc *r)
{
	const char *c = strstr(r->err, "Custom error: ");
	const char *name = c ? custom_name(strtol(c + 14, NULL, 10)) : NULL;

	snprintf(j->error, sizeof(j->error), "%s%s%s%s", r->err,
		 name ? " (subtensor: " : "", name ? name : "",
		 name ? ")" : "");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int header_number(struct rpc *r, const char *hash_hex, uint64_t *n)
{
	const cJSON *res, *num;
	char params[96];
	cJSON *root;
	int rc;

	snprintf(params, sizeof(params), "[\"%s\"]", hash_hex);
	rc = rpc_call(r, "chain_getHeader", params, &root, &res);
	if (rc)
		return rc;
	num = cJSON_GetObjectItemCaseSensitive(res, "number");
	rc = cJSON_IsString(num) && engy_hex_quantity(num->valuestring, n) == 0
		     ? 0
		     : -EPROTO;
	cJSON_Delete(root);
	return rc;
}

/* Is @ext among block @number's extrinsics?  *@index when found. */
static int block_has(struct rpc *r, uint64_t number, const uint8_t *ext,
		     size_t len, char hash_hex[67], bool *found,
		     uint32_t *index)
{
	const cJSON *res, *list, *it;
	char params[96];
	cJSON *root;
	uint32_t i = 0;
	int rc;

	*found = false;
	snprintf(params, sizeof(params), "[%llu]", (unsigned long long)number);
	rc = rpc_call_str(r, "chain_getBlockHash", params, hash_hex, 67);
	if (rc)
		return rc;
	snprintf(params, sizeof(params), "[\"%s\"]", hash_hex);
	rc = rpc_call(r, "chain_getBlock", params, &root, &res);
	if (rc)
		return rc;
	list = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(res, "block"), "extrinsics");
	cJSON_ArrayForEach(it, list)
	{
		uint8_t *b;
		size_t n;

		if (cJSON_IsString(it) &&
		    engy_hex_decode_alloc(it->valuestring, &b, &n) == 0) {
			/* with its length prefix, or the bare body */
			if ((n == len && memcmp(b, ext, len) == 0) ||
			    (n < len && n + 1 >= len - 4 &&
			     memcmp(b, ext + (len - n), n) == 0))
				*found = true;
			free(b);
		}
		if (*found) {
			*index = i;
			break;
		}
		i++;
	}
	cJSON_Delete(root);
	return 0;
}

static int outcome(struct sub_job *j, struct rpc *r, const char *hash_hex,
		   uint32_t index)
{
	struct sub *s = j->s;
	struct engy_meta_outcome o;
	struct sub_at at = { 0 };
	uint8_t *ev;
	size_t len;
	int rc;

	snprintf(at.hex, sizeof(at.hex), "%s", hash_hex);
	rc = sub_storage(s, r, &at, "System", "Events", NULL, NULL, 0, &ev,
			 &len, j->error, sizeof(j->error));
	if (rc)
		return rc;
	rc = engy_meta_outcome(s->md, ev, len, index, &o, j->error,
			       sizeof(j->error));
	free(ev);
	if (rc)
		return rc;
	if (!o.found) {
		snprintf(j->error, sizeof(j->error),
			 "no ExtrinsicSuccess/ExtrinsicFailed event for "
			 "extrinsic %u",
			 index);
		return -EPROTO;
	}
	j->submit.success = o.success;
	if (!o.success)
		snprintf(j->error, sizeof(j->error), "%s", o.error);
	return 0;
}

/* Follow new blocks from @from until @ext is in one, or the timeout. */
static int wait_inclusion(struct sub_job *j, struct rpc *r, uint64_t from,
			  const uint8_t *ext, size_t len)
{
	struct sub *s = j->s;
	double deadline = now_s() + (double)s->c->inclusion_timeout_s;
	uint64_t next = from;
	int rc;

	for (;;) {
		struct sub_at best;

		rc = sub_best(s, r, &best, j->error, sizeof(j->error));
		if (rc)
			return rc;
		for (; next <= best.number; next++) {
			char hex[67];
			bool found;
			uint32_t index;

			rc = block_has(r, next, ext, len, hex, &found, &index);
			if (rc) {
				snprintf(j->error, sizeof(j->error),
					 "reading block %llu: %s",
					 (unsigned long long)next, r->err);
				return rc;
			}
			if (found) {
				j->submit.included = true;
				j->submit.block = next;
				engy_hex_decode(j->submit.block_hash, 32, hex);
				return outcome(j, r, hex, index);
			}
		}
		if (now_s() >= deadline) {
			snprintf(j->error, sizeof(j->error),
				 "not in a block within %llds (last block read "
				 "%llu)",
				 (long long)s->c->inclusion_timeout_s,
				 (unsigned long long)(next - 1));
			return -ETIMEDOUT;
		}
		if (!sub_nap(s, (long)s->c->poll_ms)) {
			snprintf(j->error, sizeof(j->error),
				 "cancelled while waiting for inclusion");
			return -ECANCELED;
		}
	}
}

/* Everything the signing payload needs besides the call. */
static int params(struct sub_job *j, struct rpc *r, const struct sub_at *best,
		  struct engy_ext_params *p)
{
	struct sub *s = j->s;
	char hex[67], ss58[ENGY_SS58_ADDR_SIZE], arg[96];
	const cJSON *res;
	cJSON *root;
	int rc;

	if (!s->have_genesis) {
		rc = rpc_call_str(r, "chain_getBlockHash", "[0]", hex,
				  sizeof(hex));
		if (rc || engy_hex_decode(s->genesis, 32, hex) != 32) {
			snprintf(j->error, sizeof(j->error), "genesis hash: %s",
				 r->err);
			return rc ? rc : -EPROTO;
		}
		s->have_genesis = true;
	}
	memcpy(p->genesis, s->genesis, 32);
	p->spec_version = s->spec_version;
	p->tx_version = s->tx_version;
	p->era_period = (uint64_t)s->c->era_period;
	if (p->era_period) {
		/* Born at the finalized head: no reorg takes its hash away. */
		rc = rpc_call_str(r, "chain_getFinalizedHead", "[]", hex,
				  sizeof(hex));
		if (!rc)
			rc = header_number(r, hex, &p->era_block);
		if (rc || engy_hex_decode(p->era_hash, 32, hex) != 32 ||
		    p->era_block > best->number) {
			p->era_block = best->number;
			memcpy(p->era_hash, best->hash, 32);
		}
	}
	engy_ss58_encode(ss58, sizeof(ss58), j->signer.account,
			 ENGY_SS58_PREFIX_BITTENSOR);
	snprintf(arg, sizeof(arg), "[\"%s\"]", ss58);
	rc = rpc_call(r, "system_accountNextIndex", arg, &root, &res);
	if (rc) {
		snprintf(j->error, sizeof(j->error),
			 "system_accountNextIndex: %s", r->err);
		return rc;
	}
	rc = cJSON_IsNumber(res) && res->valuedouble >= 0 &&
			     res->valuedouble <= UINT32_MAX
		     ? 0
		     : -EPROTO;
	if (!rc)
		p->nonce = (uint32_t)res->valuedouble;
	cJSON_Delete(root);
	if (rc)
		snprintf(j->error, sizeof(j->error),
			 "system_accountNextIndex: not a nonce");
	return rc;
}

static int build(struct sub_job *j, const struct engy_ext_params *p,
		 const uint8_t *call, size_t call_len, const char *what,
		 struct engy_scale_buf *ext, size_t *payload_len)
{
	struct sub *s = j->s;
	struct engy_scale_buf pay;
	uint8_t hash[32], sig[64];
	const uint8_t *msg;
	size_t mlen;
	int rc;

	engy_scale_buf_init(&pay);
	rc = engy_ext_payload(&s->layout, p, call, call_len, &pay);
	if (rc) {
		snprintf(j->error, sizeof(j->error), "cannot encode %s", what);
		goto out;
	}
	*payload_len = pay.len;
	msg = engy_ext_to_sign(pay.p, pay.len, hash, &mlen);
	rc = j->signer.sign(j->signer.arg, msg, mlen, sig);
	if (rc) {
		snprintf(j->error, sizeof(j->error), "the signer failed: %s",
			 strerror(-rc));
		goto out;
	}
	rc = engy_ext_signed(&s->layout, p, call, call_len, j->signer.account,
			     sig, ext);
	if (!rc)
		engy_ext_hash(ext->p, ext->len, j->submit.tx_hash);
out:
	engy_scale_buf_free(&pay);
	return rc;
}

void sub_do_set_weights(struct sub_job *j, struct rpc *r)
{
	struct sub *s = j->s;
	const struct engy_meta_variant *v;
	struct engy_scale_buf cbuf;
	uint8_t pallet, call;
	struct sub_at best;
	uint64_t cr;
	int rc;

	engy_scale_buf_init(&cbuf);
	rc = sub_best(s, r, &best, j->error, sizeof(j->error));
	if (!rc)
		rc = sub_runtime(s, r, &best, j->error, sizeof(j->error));
	if (rc)
		goto out;
	if (engy_meta_call(s->md, "SubtensorModule", "set_weights", &pallet,
			   &call, &v) ||
	    engy_call_check_set_weights(s->md, v, j->error, sizeof(j->error))) {
		if (!j->error[0])
			snprintf(j->error, sizeof(j->error),
				 "the runtime has no "
				 "SubtensorModule.set_weights");
		rc = -ENOTSUP;
		goto out;
	}
	if (s->layout_rc) {
		snprintf(j->error, sizeof(j->error),
			 "cannot sign for spec %u: %s", s->spec_version,
			 s->layout_err);
		rc = -ENOTSUP;
		goto out;
	}
	rc = sub_u64_item(s, r, &best, "CommitRevealWeightsEnabled", j->netuid,
			  0, &cr, j->error, sizeof(j->error));
	if (rc)
		goto out;
	if (cr) {
		snprintf(j->error, sizeof(j->error),
			 "commit-reveal is enabled on subnet %u: the chain "
			 "refuses set_weights there (CommitRevealEnabled); "
			 "commit instead (commit_weights)",
			 j->netuid);
		rc = -ENOTSUP;
		goto out;
	}
	rc = engy_call_set_weights(s->md, pallet, call, j->netuid, j->uids,
				   j->weights, j->n, j->version_key, &cbuf);
	if (rc) {
		snprintf(j->error, sizeof(j->error),
			 "cannot encode set_weights");
		goto out;
	}
	rc = sub_submit_call(j, r, &best, cbuf.p, cbuf.len, "set_weights");
out:
	j->submit.status = rc;
	if (!rc && j->submit.success)
		j->error[0] = '\0';
	engy_scale_buf_free(&cbuf);
}

int sub_submit_call(struct sub_job *j, struct rpc *r, const struct sub_at *best,
		    const uint8_t *call, size_t call_len, const char *what)
{
	struct sub *s = j->s;
	struct engy_ext_params p = { 0 };
	struct engy_scale_buf ext;
	const cJSON *res;
	cJSON *root;
	size_t payload_len = 0;
	char *arg;
	int rc;

	engy_scale_buf_init(&ext);
	rc = params(j, r, best, &p);
	if (!rc)
		rc = build(j, &p, call, call_len, what, &ext, &payload_len);
	if (rc)
		goto out;
	arg = malloc(2 * ext.len + 8);
	if (!arg) {
		rc = -ENOMEM;
		goto out;
	}
	arg[0] = '[';
	arg[1] = '"';
	engy_hex_encode(arg + 2, ext.p, ext.len);
	strcat(arg, "\"]");
	rc = rpc_call(r, "author_submitExtrinsic", arg, &root, &res);
	free(arg);
	if (rc == -EREMOTEIO) {
		/* The node refused it: an answer, not an unknown. */
		pool_refusal(j, r);
		rc = 0;
		goto out;
	}
	if (rc) {
		snprintf(j->error, sizeof(j->error),
			 "author_submitExtrinsic: %s", r->err);
		goto out;
	}
	cJSON_Delete(root);
	if (strcmp(what, "set_weights") == 0)
		engy_info(
			s->h,
			"event=submitted netuid=%u uids=%zu nonce=%u "
			"era_block=%llu bytes=%zu payload_bytes=%zu signed=%s",
			j->netuid, j->n, p.nonce,
			(unsigned long long)p.era_block, ext.len, payload_len,
			payload_len > ENGY_EXT_HASH_OVER ? "blake2b-256"
							 : "payload");
	else
		engy_info(
			s->h,
			"event=submitted call=%s netuid=%u uids=%zu nonce=%u "
			"era_block=%llu bytes=%zu payload_bytes=%zu signed=%s",
			what, j->netuid, j->n, p.nonce,
			(unsigned long long)p.era_block, ext.len, payload_len,
			payload_len > ENGY_EXT_HASH_OVER ? "blake2b-256"
							 : "payload");
	rc = wait_inclusion(j, r, best->number + 1, ext.p, ext.len);
out:
	engy_scale_buf_free(&ext);
	return rc;
}
