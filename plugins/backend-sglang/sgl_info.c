/* SPDX-License-Identifier: MIT */
/*
 * What info() answers: the checkpoint's config files when the option
 * names one (read at create, so engyd -t checks them), then what the
 * serve says, fetched on the loop at start (GET /get_model_info, then
 * GET /v1/models) and retried every few seconds until a serve answers.
 * sglang does not report the hidden size; the first hidden row does.
 */
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "sgl.h"
#include "sgl_http.h"
#include "sgl_model.h"

#define INFO_MAX     (64 * 1024)
#define INFO_RETRY_S 3

static int read_json(const char *dir, const char *name, uint8_t **buf,
		     size_t *len)
{
	char path[4096];

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	return engy_read_file(path, 16 << 20, buf, len);
}

static const char *base_name(const char *path)
{
	size_t n = strlen(path);
	const char *b;

	while (n > 1 && path[n - 1] == '/')
		n--;
	for (b = path + n; b > path && b[-1] != '/'; b--)
		;
	return b;
}

int sgl_info_checkpoint(struct sgl *s, const char *dir)
{
	uint8_t *buf = NULL;
	size_t len, n;
	int rc;

	rc = read_json(dir, "config.json", &buf, &len);
	if (rc) {
		engy_err(s->host,
			 "event=config_invalid option=checkpoint "
			 "reason=\"cannot read %s/config.json: %s\"",
			 dir, strerror(-rc));
		return -EINVAL;
	}
	rc = sgl_parse_config((const char *)buf, len, &s->info);
	free(buf);
	if (rc) {
		engy_err(s->host,
			 "event=config_invalid option=checkpoint "
			 "reason=\"%s/config.json is not a JSON object\"",
			 dir);
		return -EINVAL;
	}
	if (!read_json(dir, "generation_config.json", &buf, &len)) {
		sgl_parse_gen_config((const char *)buf, len, &s->info);
		free(buf);
	}
	snprintf(s->info.path, sizeof(s->info.path), "%s", dir);
	n = strlen(base_name(dir));
	while (n && base_name(dir)[n - 1] == '/')
		n--;
	snprintf(s->info.name, sizeof(s->info.name), "%.*s", (int)n,
		 base_name(dir));
	s->info_ckpt = true;
	return 0;
}

static void info_fetch(struct sgl *s);

static void on_info_timer(evutil_socket_t fd, short what, void *arg)
{
	info_fetch(arg);
}

static void info_retry(struct sgl *s)
{
	struct timeval tv = { INFO_RETRY_S, 0 };

	s->rr++; /* the next serve, if there are several */
	evtimer_add(s->info_timer, &tv);
}

static int on_info_data(void *arg, const char *p, size_t n)
{
	struct sgl *s = arg;
	char *q;

	if (s->info_len + n > INFO_MAX)
		return 1;
	q = realloc(s->info_buf, s->info_len + n + 1);
	if (!q)
		return 1;
	memcpy(q + s->info_len, p, n);
	s->info_len += n;
	q[s->info_len] = '\0';
	s->info_buf = q;
	return 0;
}

static void on_info_done(void *arg, int code, long status)
{
	struct sgl *s = arg;
	struct engy_model_info got = s->info;
	char keep_path[sizeof(got.path)];
	int rc = code || status != 200 ? -EIO : 0;

	s->info_call = NULL;
	if (!rc && s->info_step == 0)
		rc = sgl_parse_model_info(s->info_buf, s->info_len, &got);
	else if (!rc)
		rc = sgl_parse_models(s->info_buf, s->info_len, &got);
	free(s->info_buf);
	s->info_buf = NULL;
	s->info_len = 0;
	if (rc && s->info_step == 0) {
		engy_warn(s->host,
			  "event=serve_info_failed serve=%s code=%d "
			  "status=%ld retry_s=%d",
			  s->serves[s->rr % s->n_serves].url, code, status,
			  INFO_RETRY_S);
		info_retry(s);
		return;
	}
	if (!rc) {
		/* The checkpoint option names the directory engy reads. */
		memcpy(keep_path, s->info.path, sizeof(keep_path));
		s->info = got;
		if (s->info_ckpt)
			memcpy(s->info.path, keep_path, sizeof(keep_path));
		if (!s->info.name[0] && s->info.path[0])
			snprintf(s->info.name, sizeof(s->info.name), "%s",
				 base_name(s->info.path));
		s->info_serve = true;
	}
	if (s->info_step++ == 0) {
		info_fetch(s);
		return;
	}
	engy_info(s->host,
		  "event=serve_info model=\"%s\" hidden_size=%u "
		  "max_context=%u",
		  s->info.name, s->info.hidden_size, s->info.max_context);
}

static const struct sgl_call_cb info_cb = { on_info_data, on_info_done };

static void info_fetch(struct sgl *s)
{
	struct sgl_req r = { 0 };
	char url[1024];

	snprintf(url, sizeof(url), "%s%s", s->serves[s->rr % s->n_serves].url,
		 s->info_step == 0 ? "/get_model_info" : "/v1/models");
	r.url = url;
	r.timeout_s = s->connect_s + 10;
	r.connect_s = s->connect_s;
	r.api_key = s->api_key;
	if (sgl_call_start(s->http, &r, &info_cb, s, &s->info_call))
		info_retry(s);
}

int sgl_info_start(struct sgl *s)
{
	s->info_timer = evtimer_new(s->base, on_info_timer, s);
	if (!s->info_timer)
		return -ENOMEM;
	s->info_step = 0;
	info_fetch(s);
	return 0;
}

void sgl_info_stop(struct sgl *s)
{
	if (s->info_call) {
		sgl_call_cancel(s->info_call);
		s->info_call = NULL;
	}
	if (s->info_timer)
		evtimer_del(s->info_timer);
	free(s->info_buf);
	s->info_buf = NULL;
	s->info_len = 0;
}

void sgl_info_learn_width(struct sgl *s, uint32_t width)
{
	if (!s->info.hidden_size) {
		s->info.hidden_size = width;
		return;
	}
	if (s->info.hidden_size != width && !s->warned_width) {
		s->warned_width = true;
		engy_warn(s->host,
			  "event=hidden_size_mismatch model=%u "
			  "rows=%u",
			  s->info.hidden_size, width);
	}
}
