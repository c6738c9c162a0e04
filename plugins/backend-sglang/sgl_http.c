/* SPDX-License-Identifier: MIT */
/*
 * libcurl multi on libevent (see sgl_http.h).  libcurl tells us which
 * sockets to watch (CURLMOPT_SOCKETFUNCTION) and when to wake it
 * (CURLMOPT_TIMERFUNCTION); libevent calls curl_multi_socket_action back.
 * Finished transfers are collected after socket_action returns, so a done
 * callback runs outside libcurl and may start or cancel other calls.
 */
#include <curl/curl.h>
#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "sgl_http.h"

struct sgl_http {
	struct event_base *base;
	CURLM *multi;
	struct event *timer;
	struct sgl_call *calls; /* in flight */
};

struct sgl_call {
	struct sgl_http *h;
	struct sgl_call *next, **pprev;
	CURL *easy;
	struct curl_slist *hdrs;
	char *body;
	struct sgl_call_cb cb;
	void *arg;
	long status;
	const char *ctype;
};

struct sgl_sock {
	struct event *ev;
};

static void call_free(struct sgl_call *c)
{
	if (c->pprev) {
		*c->pprev = c->next;
		if (c->next)
			c->next->pprev = c->pprev;
	}
	if (c->easy) {
		curl_multi_remove_handle(c->h->multi, c->easy);
		curl_easy_cleanup(c->easy);
	}
	curl_slist_free_all(c->hdrs);
	free(c->body);
	free(c);
}

static void check_done(struct sgl_http *h)
{
	struct sgl_call *c;
	CURLMsg *m;
	char *priv;
	int left, code;
	long status;

	/* Each message is read afresh: a done callback may cancel calls,
	 * which removes their messages from the queue. */
	while ((m = curl_multi_info_read(h->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
		c = (struct sgl_call *)priv;
		code = (int)m->data.result;
		curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
		curl_multi_remove_handle(h->multi, c->easy);
		curl_easy_cleanup(c->easy);
		c->easy = NULL;
		*c->pprev = c->next;
		if (c->next)
			c->next->pprev = c->pprev;
		c->pprev = NULL;
		if (c->cb.done)
			c->cb.done(c->arg, code, status);
		call_free(c);
	}
}

static void on_socket_event(evutil_socket_t fd, short what, void *arg)
{
	struct sgl_http *h = arg;
	int action = 0, running;

	if (what & EV_READ)
		action |= CURL_CSELECT_IN;
	if (what & EV_WRITE)
		action |= CURL_CSELECT_OUT;
	curl_multi_socket_action(h->multi, fd, action, &running);
	check_done(h);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct sgl_http *h = arg;
	int running;

	curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done(h);
}

static int sock_cb(CURL *e, curl_socket_t s, int what, void *userp, void *sockp)
{
	struct sgl_http *h = userp;
	struct sgl_sock *k = sockp;
	short kind;

	if (what == CURL_POLL_REMOVE) {
		if (k) {
			event_free(k->ev);
			free(k);
		}
		curl_multi_assign(h->multi, s, NULL);
		return 0;
	}
	if (!k) {
		k = calloc(1, sizeof(*k));
		if (!k)
			return -1;
		curl_multi_assign(h->multi, s, k);
	} else {
		event_free(k->ev);
	}
	kind = EV_PERSIST;
	if (what & CURL_POLL_IN)
		kind |= EV_READ;
	if (what & CURL_POLL_OUT)
		kind |= EV_WRITE;
	k->ev = event_new(h->base, s, kind, on_socket_event, h);
	if (!k->ev || event_add(k->ev, NULL))
		return -1;
	return 0;
}

static int timer_cb(CURLM *multi, long ms, void *userp)
{
	struct sgl_http *h = userp;
	struct timeval tv;

	if (ms < 0)
		return evtimer_del(h->timer);
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	return evtimer_add(h->timer, &tv);
}

int sgl_http_new(struct event_base *base, struct sgl_http **out)
{
	struct sgl_http *h = calloc(1, sizeof(*h));

	*out = NULL;
	if (!h)
		return -ENOMEM;
	h->base = base;
	h->multi = curl_multi_init();
	h->timer = evtimer_new(base, on_timeout, h);
	if (!h->multi || !h->timer) {
		sgl_http_free(h);
		return -ENOMEM;
	}
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
	*out = h;
	return 0;
}

void sgl_http_free(struct sgl_http *h)
{
	if (!h)
		return;
	while (h->calls)
		call_free(h->calls);
	if (h->multi)
		curl_multi_cleanup(h->multi);
	if (h->timer)
		event_free(h->timer);
	free(h);
}

static size_t on_write(char *p, size_t size, size_t n, void *arg)
{
	struct sgl_call *c = arg;

	if (!c->status) {
		char *ct = NULL;

		curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &c->status);
		curl_easy_getinfo(c->easy, CURLINFO_CONTENT_TYPE, &ct);
		c->ctype = ct ? ct : "";
	}
	if (c->cb.data && n && c->cb.data(c->arg, p, n))
		return 0;
	return n;
}

static long ms(double s)
{
	return s > 0 ? (long)(s * 1000.0 + 0.5) : 0;
}

int sgl_call_start(struct sgl_http *h, struct sgl_req *r,
		   const struct sgl_call_cb *cb, void *arg,
		   struct sgl_call **out)
{
	struct sgl_call *c = calloc(1, sizeof(*c));
	char auth[512];
	struct curl_slist *l;
	CURL *e;

	*out = NULL;
	if (!c) {
		free(r->body);
		return -ENOMEM;
	}
	c->h = h;
	c->body = r->body;
	r->body = NULL;
	c->cb = *cb;
	c->arg = arg;
	c->ctype = "";
	e = c->easy = curl_easy_init();
	if (!e)
		goto oom;
	if (c->body) {
		l = curl_slist_append(c->hdrs,
				      "Content-Type: application/json");
		if (!l)
			goto oom;
		c->hdrs = l;
	}
	if (r->api_key && r->api_key[0]) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s",
			 r->api_key);
		l = curl_slist_append(c->hdrs, auth);
		explicit_bzero(auth, sizeof(auth));
		if (!l)
			goto oom;
		c->hdrs = l;
	}
	/* "Expect: 100-continue" would add a round trip to every POST. */
	l = curl_slist_append(c->hdrs, "Expect:");
	if (!l)
		goto oom;
	c->hdrs = l;
	curl_easy_setopt(e, CURLOPT_URL, r->url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->hdrs);
	if (c->body) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, c->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)r->len);
	}
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(e, CURLOPT_PRIVATE, c);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, ms(r->timeout_s));
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, ms(r->connect_s));
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 256L * 1024);
	/* The serve is ours: never through an http_proxy from the
	 * environment. */
	curl_easy_setopt(e, CURLOPT_PROXY, "");
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(e, CURLOPT_PROTOCOLS,
			 CURLPROTO_HTTP | CURLPROTO_HTTPS);
#endif
	if (curl_multi_add_handle(h->multi, e) != CURLM_OK)
		goto oom;
	c->next = h->calls;
	if (c->next)
		c->next->pprev = &c->next;
	h->calls = c;
	c->pprev = &h->calls;
	*out = c;
	return 0;
oom:
	if (c->easy) {
		curl_easy_cleanup(c->easy);
		c->easy = NULL;
	}
	call_free(c);
	return -ENOMEM;
}

void sgl_call_cancel(struct sgl_call *c)
{
	if (c)
		call_free(c);
}

long sgl_call_status(struct sgl_call *c)
{
	return c->status;
}

const char *sgl_call_ctype(struct sgl_call *c)
{
	return c->ctype;
}

const char *sgl_http_strerror(int code)
{
	return curl_easy_strerror((CURLcode)code);
}

bool sgl_http_timed_out(int code)
{
	return code == CURLE_OPERATION_TIMEDOUT;
}

bool sgl_http_unreachable(int code)
{
	return code == CURLE_COULDNT_CONNECT ||
	       code == CURLE_COULDNT_RESOLVE_HOST;
}
