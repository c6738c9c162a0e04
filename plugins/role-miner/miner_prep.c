/* SPDX-License-Identifier: MIT */
/*
 * Before the first leg dials: everything a hello carries and a request
 * needs, read once.  The blocking part (files, nvidia-smi, GET /meta with
 * lib/http/httpc) runs on the worker pool; the loop only takes the result.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <engy/plugin.h>

#include "config.h"
#include "chat_template.h"
#include "httpc.h"
#include "miner_ckpt.h"
#include "miner_int.h"
#include "miner_prep.h"
#include "tokenizer.h"

#define META_MAX 65536 /* a /meta answer is under 64 KiB */

static double round1(double v)
{
	return (double)(long long)(v * 10 + 0.5) / 10;
}

/* "4x NAME", or "2x A, 1x B" for a mixed box. */
static void gpus_add(struct mprep *p, const char *name, unsigned n)
{
	size_t len = strlen(p->gpus);

	snprintf(p->gpus + len, sizeof(p->gpus) - len, "%s%ux %s",
		 len ? ", " : "", n, name);
}

static void probe_gpus(struct mprep *p)
{
	char line[128], last[128] = "";
	unsigned run = 0;
	FILE *f;

	f = popen("nvidia-smi --query-gpu=name,memory.total "
		  "--format=csv,noheader,nounits 2>/dev/null",
		  "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *comma = strrchr(line, ',');
		double mib;

		if (!comma)
			continue;
		*comma = '\0';
		mib = strtod(comma + 1, NULL);
		if (!p->gpu_count) {
			snprintf(p->gpu, sizeof(p->gpu), "%s", line);
			p->gpu_mem_gb = round1(mib / 1024);
		}
		p->gpu_count++;
		if (run && strcmp(last, line) != 0) {
			gpus_add(p, last, run);
			run = 0;
		}
		snprintf(last, sizeof(last), "%s", line);
		run++;
	}
	if (run)
		gpus_add(p, last, run);
	pclose(f);
}

static void probe_hw(struct mprep *p)
{
	struct sysinfo si;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (gethostname(p->host, sizeof(p->host)) < 0)
		snprintf(p->host, sizeof(p->host), "unknown");
	p->host[sizeof(p->host) - 1] = '\0';
	p->cpus = n > 0 ? (unsigned)n : 1;
	if (sysinfo(&si) == 0)
		p->ram_gb =
			round1((double)si.totalram * si.mem_unit / (1u << 30));
	if (p->gpu_probe)
		probe_gpus(p);
}

/* GET <GW>/meta; any failure plans for one worker, as the public client. */
static void fetch_meta(struct mprep *p)
{
	long ms = (long)(p->meta_timeout_s * 1000);
	const struct engy_httpc_req rq = {
		.url = p->meta_url,
		.timeout_ms = ms > 0 ? ms : 1,
		.connect_timeout_ms = ms > 0 ? ms : 1,
		.max_body = META_MAX - 1,
		.user_agent = "engy-miner/" PACKAGE_VERSION,
		.ca_file = p->ca_file,
		.insecure = p->insecure,
	};
	struct engy_httpc_resp rs;

	p->n_workers = 1;
	if (engy_httpc_do(NULL, &rq, &rs) < 0)
		snprintf(p->meta_note, sizeof(p->meta_note),
			 "GET /meta failed: %s", rs.err);
	else if (rs.status != 200)
		snprintf(p->meta_note, sizeof(p->meta_note),
			 "GET /meta: HTTP %ld", rs.status);
	else if (engy_gw_meta_parse(rs.body ? rs.body : "", rs.len,
				    &p->n_workers) < 0)
		snprintf(p->meta_note, sizeof(p->meta_note),
			 "GET /meta: not {\"workers\": N}");
	else
		snprintf(p->meta_note, sizeof(p->meta_note), "meta");
	engy_httpc_resp_free(&rs);
}

/* Pool thread: touches nothing but m->prep. */
static void prep_fn(void *arg)
{
	struct miner *m = arg;
	struct mprep *p = m->prep;
	char err[400];
	int rc;

	rc = engy_tokenizer_load(p->dir, &p->tok, err, sizeof(err));
	if (rc < 0) {
		snprintf(p->err, sizeof(p->err),
			 "cannot load the tokenizer: %s", err);
		p->rc = rc;
		return;
	}
	rc = engy_ckpt_model_root(p->dir, p->model_root, err, sizeof(err));
	if (rc < 0) {
		snprintf(p->err, sizeof(p->err), "model_root: %s", err);
		p->rc = rc;
		return;
	}
	p->variant = p->variant_opt >= 0 ? p->variant_opt
					 : engy_ckpt_chat_variant(p->dir);
	probe_hw(p);
	if (p->gw_workers) {
		p->n_workers = p->gw_workers;
		snprintf(p->meta_note, sizeof(p->meta_note), "ENGY_GW_WORKERS");
	} else {
		fetch_meta(p);
	}
}

static void add_stop(struct miner *m, const char *token)
{
	int id = engy_tokenizer_token_id(m->tok, token);

	if (id >= 0 && m->n_stop < sizeof(m->stop_ids) / sizeof(m->stop_ids[0]))
		m->stop_ids[m->n_stop++] = (uint32_t)id;
}

static int apply(struct miner *m, struct mprep *p)
{
	const struct miner_conf *c = m->c;
	char def[17];

	m->tok = p->tok;
	p->tok = NULL;
	memcpy(m->model_root, p->model_root, sizeof(m->model_root));
	if (c->model_root && c->model_root[0]) {
		MLOG(m, ENGY_LOG_WARNING,
		     "event=model_root_override computed=%s claimed=%s",
		     p->model_root, c->model_root);
		snprintf(m->model_root, sizeof(m->model_root), "%s",
			 c->model_root);
	}
	if (p->variant < 0) {
		MLOG(m, ENGY_LOG_WARNING,
		     "event=chat_template_unknown "
		     "reason=\"the checkpoint ships no Qwen3 chat "
		     "template\" "
		     "using=qwen3.6");
		p->variant = ENGY_CHAT_QWEN36;
	}
	m->variant = p->variant;
	/* Constrained decoding where the backend enforces it; forced tool
	 * calls where it also takes text around the JSON: the call is
	 * written in the hermes JSON form, which both templates' parsers
	 * read (specs/chat.md: a <tool_call> followed by a JSON object with
	 * a string name opens a call). */
	if (m->info.size >= offsetof(struct engy_model_info, constraints) +
				    sizeof(m->info.constraints) &&
	    (m->info.constraints & ENGY_BACKEND_CONS_JSON))
		m->constraints = MINER_CONS_JSON |
				 (m->info.constraints & ENGY_BACKEND_CONS_AFFIX
					  ? MINER_CONS_TOOL
					  : 0);
	/* top_logprobs where the backend gives alternatives */
	if (m->info.size >= offsetof(struct engy_model_info, caps) +
				    sizeof(m->info.caps) &&
	    (m->info.caps & ENGY_BACKEND_CAP_TOP_LOGPROBS))
		m->constraints |= MINER_CONS_TOPLP;
	snprintf(m->model, sizeof(m->model), "%s",
		 c->model && c->model[0] ? c->model : m->info.name);
	/* instance_id names the machine; worker_name may be chosen. */
	engy_worker_name(p->host, m->model, m->serve_urls, def);
	snprintf(m->instance_id, sizeof(m->instance_id), "%s",
		 c->instance_id && c->instance_id[0] ? c->instance_id : def);
	snprintf(m->worker_name, sizeof(m->worker_name), "%s",
		 c->worker_name && c->worker_name[0] ? c->worker_name
						     : m->instance_id);
	add_stop(m, "<|im_end|>");
	add_stop(m, "<|endoftext|>");
	m->hwbuf = *p;
	m->hwbuf.meta_url = NULL;
	m->hw.host = m->hwbuf.host;
	m->hw.cpus = m->hwbuf.cpus;
	m->hw.ram_gb = m->hwbuf.ram_gb;
	m->hw.gpu = m->hwbuf.gpu;
	m->hw.gpu_count = m->hwbuf.gpu_count;
	m->hw.gpu_mem_gb = m->hwbuf.gpu_mem_gb;
	m->hw.gpus = m->hwbuf.gpus;
	m->hw.parallelism =
		c->parallelism && c->parallelism[0] ? c->parallelism : NULL;
	m->cap.max_inflight_total = (unsigned)c->max_inflight;
	m->cap.max_input_tokens = (uint64_t)c->max_input_tokens;
	m->cap.max_output_tokens = (uint64_t)c->max_output_tokens;
	m->cap.max_request_s = c->max_request_s;
	MLOG(m, ENGY_LOG_INFO,
	     "event=miner_prepared model=%s model_root=%s chat_template=%s "
	     "worker_name=%s instance_id=%s gw_workers=%u from=\"%s\" "
	     "cpus=%u gpus=%u stop_ids=%zu",
	     m->model, m->model_root, engy_chat_variant_name(m->variant),
	     m->worker_name, m->instance_id, p->n_workers, p->meta_note,
	     m->hw.cpus, m->hw.gpu_count, m->n_stop);
	return miner_legs_start(m, p->n_workers);
}

static void prep_done(void *arg, int rc)
{
	struct miner *m = arg;
	struct mprep *p = m->prep;

	if (rc == 0 && !m->stopping && !miner_loop_over(m)) {
		if (p->rc) {
			MLOG(m, ENGY_LOG_ERR,
			     "event=prepare_failed "
			     "checkpoint=%s reason=\"%s\"",
			     p->dir, p->err);
			rc = p->rc;
		} else {
			rc = apply(m, p);
		}
		if (rc < 0)
			m->h->shutdown(m->h, 1);
	}
	miner_prep_free(m);
}

int miner_prep_start(struct miner *m)
{
	const struct miner_conf *c = m->c;
	const char *dir = c->checkpoint && c->checkpoint[0] ? c->checkpoint
							    : m->info.path;
	const char *ca = NULL;
	int insecure = 0;
	struct mprep *p;
	int rc;

	if (!dir[0]) {
		MLOG(m, ENGY_LOG_ERR,
		     "event=config_invalid option=checkpoint "
		     "reason=\"the miner tokenizes locally: set checkpoint "
		     "(ENGY_CHECKPOINT) to the model's directory\"");
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	m->prep = p;
	snprintf(p->dir, sizeof(p->dir), "%s", dir);
	p->variant_opt = strcmp(c->chat_template, "auto") == 0
				 ? -1
				 : engy_chat_variant_parse(c->chat_template);
	p->gpu_probe = c->gpu_probe;
	p->meta_timeout_s = c->meta_timeout_s;
	p->gw_workers = (unsigned)c->gw_workers;
	/* /meta is checked as the legs are: the transport's CA settings. */
	if (m->t->client_tls && m->t->client_tls(m->ti, &ca, &insecure) < 0) {
		ca = NULL;
		insecure = 0;
	}
	p->ca_file = ca;
	p->insecure = insecure != 0;
	rc = engy_gw_meta_url(c->gw, &p->meta_url, NULL);
	if (rc == 0)
		rc = m->h->work(m->h, prep_fn, prep_done, m);
	if (rc < 0) {
		miner_prep_free(m);
		return rc;
	}
	MLOG(m, ENGY_LOG_INFO, "event=preparing checkpoint=%s", p->dir);
	return 0;
}

void miner_prep_free(struct miner *m)
{
	struct mprep *p = m->prep;

	if (!p)
		return;
	engy_tokenizer_free(p->tok);
	free(p->meta_url);
	free(p);
	m->prep = NULL;
}
