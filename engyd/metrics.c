/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "metrics.h"

struct engy_metric {
	struct engy_metric *next; /* next series of the family */
	struct family *fam;
	char *labels;		 /* `a="b",c="d"` or NULL */
	double value;		 /* counter, gauge; histogram sum */
	uint64_t count;		 /* histogram */
	uint64_t *bucket_counts; /* histogram, cumulative on render */
};

struct family {
	struct family *next;
	char *name, *help;
	int type;
	double *buckets;
	size_t n_buckets;
	struct engy_metric *series;
};

struct engy_metrics {
	pthread_mutex_t lock;
	struct family *families, **tail;
	struct evhttp *http;
	struct evhttp_bound_socket *sock;
	void (*refresh)(void *);
	void *refresh_arg;
};

int engy_metrics_new(struct engy_metrics **out)
{
	struct engy_metrics *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->lock, NULL);
	r->tail = &r->families;
	*out = r;
	return 0;
}

void engy_metrics_free(struct engy_metrics *r)
{
	struct family *f, *fn;
	struct engy_metric *m, *mn;

	if (!r)
		return;
	if (r->http)
		evhttp_free(r->http);
	for (f = r->families; f; f = fn) {
		fn = f->next;
		for (m = f->series; m; m = mn) {
			mn = m->next;
			free(m->labels);
			free(m->bucket_counts);
			free(m);
		}
		free(f->name);
		free(f->help);
		free(f->buckets);
		free(f);
	}
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static int valid_name(const char *s)
{
	const char *p;

	if (!s || !*s || (*s >= '0' && *s <= '9'))
		return 0;
	for (p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == ':'))
			return 0;
	return 1;
}

/* `k="v",k2="v2"`: names valid, values quoted with escapes only. */
static int valid_labels(const char *s)
{
	const char *p = s;

	while (*p) {
		const char *k = p;

		while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		       (*p >= '0' && *p <= '9') || *p == '_')
			p++;
		if (p == k || *p++ != '=' || *p++ != '"')
			return 0;
		while (*p && *p != '"') {
			if (*p == '\n')
				return 0;
			if (*p == '\\' && !*++p)
				return 0;
			p++;
		}
		if (*p++ != '"')
			return 0;
		if (*p == ',')
			p++;
		else if (*p)
			return 0;
	}
	return 1;
}

static int same_str(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

int engy_metrics_get(struct engy_metrics *r, int type, const char *name,
		     const char *help, const char *labels,
		     const double *buckets, size_t n_buckets,
		     struct engy_metric **out)
{
	struct family *f;
	struct engy_metric *m;
	int rc = 0;
	size_t i;

	if (!valid_name(name) || (labels && *labels && !valid_labels(labels)) ||
	    type < ENGY_METRIC_COUNTER || type > ENGY_METRIC_HISTOGRAM)
		return -EINVAL;
	if (labels && !*labels)
		labels = NULL;
	if (type == ENGY_METRIC_HISTOGRAM) {
		if (!buckets || !n_buckets)
			return -EINVAL;
		for (i = 1; i < n_buckets; i++)
			if (!(buckets[i] > buckets[i - 1]))
				return -EINVAL;
	}
	pthread_mutex_lock(&r->lock);
	for (f = r->families; f; f = f->next)
		if (strcmp(f->name, name) == 0)
			break;
	if (f && (f->type != type || !same_str(f->help, help))) {
		rc = -EEXIST;
		goto out;
	}
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f || !(f->name = strdup(name)) ||
		    (help && !(f->help = strdup(help)))) {
			if (f)
				free(f->name);
			free(f);
			rc = -ENOMEM;
			goto out;
		}
		f->type = type;
		if (type == ENGY_METRIC_HISTOGRAM) {
			f->buckets = malloc(n_buckets * sizeof(*f->buckets));
			if (!f->buckets) {
				free(f->name);
				free(f->help);
				free(f);
				rc = -ENOMEM;
				goto out;
			}
			memcpy(f->buckets, buckets,
			       n_buckets * sizeof(*buckets));
			f->n_buckets = n_buckets;
		}
		*r->tail = f;
		r->tail = &f->next;
	}
	for (m = f->series; m; m = m->next)
		if (same_str(m->labels, labels))
			break;
	if (!m) {
		m = calloc(1, sizeof(*m));
		if (!m) {
			rc = -ENOMEM;
			goto out;
		}
		m->fam = f;
		if ((labels && !(m->labels = strdup(labels))) ||
		    (f->n_buckets &&
		     !(m->bucket_counts =
			       calloc(f->n_buckets, sizeof(uint64_t))))) {
			free(m->labels);
			free(m);
			rc = -ENOMEM;
			goto out;
		}
		m->next = f->series;
		f->series = m;
	}
	*out = m;
out:
	pthread_mutex_unlock(&r->lock);
	return rc;
}

/*
 * One process-wide lock guards values: metrics never move once registered,
 * and an update is cheap next to what it measures (a request, a job).
 */
static pthread_mutex_t update_lock = PTHREAD_MUTEX_INITIALIZER;

void engy_metric_add(struct engy_metric *m, double v)
{
	if (!m)
		return;
	pthread_mutex_lock(&update_lock);
	m->value += v;
	pthread_mutex_unlock(&update_lock);
}

void engy_metric_set(struct engy_metric *m, double v)
{
	if (!m)
		return;
	pthread_mutex_lock(&update_lock);
	m->value = v;
	pthread_mutex_unlock(&update_lock);
}

void engy_metric_observe(struct engy_metric *m, double v)
{
	size_t i;

	if (!m || !m->bucket_counts)
		return;
	pthread_mutex_lock(&update_lock);
	m->value += v;
	m->count++;
	for (i = 0; i < m->fam->n_buckets; i++)
		if (v <= m->fam->buckets[i]) {
			m->bucket_counts[i]++;
			break;
		}
	pthread_mutex_unlock(&update_lock);
}

double engy_metric_value(struct engy_metric *m)
{
	double v;

	pthread_mutex_lock(&update_lock);
	v = m->value;
	pthread_mutex_unlock(&update_lock);
	return v;
}

static void fmt_num(char *b, size_t n, double v)
{
	if (isinf(v))
		snprintf(b, n, v > 0 ? "+Inf" : "-Inf");
	else if (isnan(v))
		snprintf(b, n, "NaN");
	else
		snprintf(b, n, "%.17g", v);
}

static void render_series(struct evbuffer *o, struct family *f,
			  struct engy_metric *m)
{
	const char *l = m->labels;
	char num[64], le[64];
	uint64_t cum = 0;
	size_t i;

	if (f->type != ENGY_METRIC_HISTOGRAM) {
		fmt_num(num, sizeof(num), m->value);
		evbuffer_add_printf(o, "%s%s%s%s %s\n", f->name, l ? "{" : "",
				    l ? l : "", l ? "}" : "", num);
		return;
	}
	for (i = 0; i < f->n_buckets; i++) {
		cum += m->bucket_counts[i];
		fmt_num(le, sizeof(le), f->buckets[i]);
		evbuffer_add_printf(o, "%s_bucket{%s%sle=\"%s\"} %llu\n",
				    f->name, l ? l : "", l ? "," : "", le,
				    (unsigned long long)cum);
	}
	evbuffer_add_printf(o, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", f->name,
			    l ? l : "", l ? "," : "",
			    (unsigned long long)m->count);
	fmt_num(num, sizeof(num), m->value);
	evbuffer_add_printf(o, "%s_sum%s%s%s %s\n", f->name, l ? "{" : "",
			    l ? l : "", l ? "}" : "", num);
	evbuffer_add_printf(o, "%s_count%s%s%s %llu\n", f->name, l ? "{" : "",
			    l ? l : "", l ? "}" : "",
			    (unsigned long long)m->count);
}

static void render_into(struct engy_metrics *r, struct evbuffer *o)
{
	static const char *const types[] = { "", "counter", "gauge",
					     "histogram" };
	struct family *f;
	struct engy_metric *m;
	const char *h;

	pthread_mutex_lock(&r->lock);
	pthread_mutex_lock(&update_lock);
	for (f = r->families; f; f = f->next) {
		if (f->help) {
			evbuffer_add_printf(o, "# HELP %s ", f->name);
			for (h = f->help; *h; h++) {
				if (*h == '\\')
					evbuffer_add(o, "\\\\", 2);
				else if (*h == '\n')
					evbuffer_add(o, "\\n", 2);
				else
					evbuffer_add(o, h, 1);
			}
			evbuffer_add(o, "\n", 1);
		}
		evbuffer_add_printf(o, "# TYPE %s %s\n", f->name,
				    types[f->type]);
		for (m = f->series; m; m = m->next)
			render_series(o, f, m);
	}
	pthread_mutex_unlock(&update_lock);
	pthread_mutex_unlock(&r->lock);
}

char *engy_metrics_render(struct engy_metrics *r)
{
	struct evbuffer *o = evbuffer_new();
	size_t n;
	char *s = NULL;

	if (!o)
		return NULL;
	render_into(r, o);
	n = evbuffer_get_length(o);
	s = malloc(n + 1);
	if (s) {
		evbuffer_remove(o, s, n);
		s[n] = '\0';
	}
	evbuffer_free(o);
	return s;
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct engy_metrics *r = arg;
	const char *uri = evhttp_request_get_uri(req);
	struct evbuffer *o;

	if (evhttp_request_get_command(req) != EVHTTP_REQ_GET || !uri ||
	    (strcmp(uri, "/metrics") != 0 &&
	     strncmp(uri, "/metrics?", 9) != 0)) {
		evhttp_send_error(req, HTTP_NOTFOUND, "only GET /metrics here");
		return;
	}
	if (r->refresh)
		r->refresh(r->refresh_arg);
	o = evhttp_request_get_output_buffer(req);
	render_into(r, o);
	evhttp_add_header(evhttp_request_get_output_headers(req),
			  "Content-Type",
			  "text/plain; version=0.0.4; charset=utf-8");
	evhttp_send_reply(req, HTTP_OK, "OK", NULL);
}

/* Split "host:port" / "[v6]:port". */
static int split_addr(const char *addr, char *host, size_t hn, int *port)
{
	const char *colon;
	char *end;
	long p;
	size_t len;

	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		len = (size_t)(close - addr - 1);
		if (len >= hn)
			return -EINVAL;
		memcpy(host, addr + 1, len);
		host[len] = '\0';
		colon = close + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return -EINVAL;
		len = (size_t)(colon - addr);
		if (len == 0 || len >= hn)
			return -EINVAL;
		memcpy(host, addr, len);
		host[len] = '\0';
	}
	errno = 0;
	p = strtol(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || p < 0 || p > 65535)
		return -EINVAL;
	*port = (int)p;
	return 0;
}

int engy_metrics_listen(struct engy_metrics *r, struct event_base *base,
			const char *addr, void (*refresh)(void *),
			void *refresh_arg)
{
	char host[256];
	int port, rc;

	rc = split_addr(addr, host, sizeof(host), &port);
	if (rc)
		return rc;
	r->http = evhttp_new(base);
	if (!r->http)
		return -ENOMEM;
	evhttp_set_allowed_methods(r->http, EVHTTP_REQ_GET);
	evhttp_set_gencb(r->http, on_request, r);
	evhttp_set_timeout(r->http, 10);
	r->sock = evhttp_bind_socket_with_handle(r->http, host, (uint16_t)port);
	if (!r->sock) {
		evhttp_free(r->http);
		r->http = NULL;
		return -EADDRNOTAVAIL;
	}
	r->refresh = refresh;
	r->refresh_arg = refresh_arg;
	return 0;
}

int engy_metrics_port(struct engy_metrics *r)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	evutil_socket_t fd;

	if (!r->sock)
		return -1;
	fd = evhttp_bound_socket_get_fd(r->sock);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -1;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return -1;
}
