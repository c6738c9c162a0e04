/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include <event2/event.h>

#include "pool.h"

struct job {
	struct job *next;
	void (*fn)(void *);
	void (*done)(void *, int);
	void *arg;
	int rc;
};

struct engy_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t *threads;
	unsigned n_threads;
	struct job *queue_head, *queue_tail; /* waiting to run */
	struct job *done_head, *done_tail;   /* waiting for the loop */
	unsigned queued, running, pending;
	bool closing;
	uint64_t submitted, completed, cancelled;
	int wake[2]; /* worker -> loop */
	struct event *wake_ev;
};

static void push(struct job **head, struct job **tail, struct job *j)
{
	j->next = NULL;
	if (*tail)
		(*tail)->next = j;
	else
		*head = j;
	*tail = j;
}

/* Called with the lock held. */
static void finish_locked(struct engy_pool *p, struct job *j)
{
	bool was_empty = p->done_head == NULL;
	char b = 1;

	push(&p->done_head, &p->done_tail, j);
	p->pending++;
	if (was_empty && write(p->wake[1], &b, 1) < 0) {
		/* The pipe is full: the loop is already woken. */
	}
}

static void *worker(void *arg)
{
	struct engy_pool *p = arg;
	struct job *j;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->queue_head && !p->closing)
			pthread_cond_wait(&p->cond, &p->lock);
		if (!p->queue_head)
			break;
		j = p->queue_head;
		p->queue_head = j->next;
		if (!p->queue_head)
			p->queue_tail = NULL;
		p->queued--;
		p->running++;
		pthread_mutex_unlock(&p->lock);
		j->fn(j->arg);
		j->rc = 0;
		pthread_mutex_lock(&p->lock);
		p->running--;
		finish_locked(p, j);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Loop thread: run the completions that workers handed back. */
static void deliver(struct engy_pool *p)
{
	struct job *list, *j;

	pthread_mutex_lock(&p->lock);
	list = p->done_head;
	p->done_head = p->done_tail = NULL;
	pthread_mutex_unlock(&p->lock);
	while ((j = list)) {
		list = j->next;
		j->done(j->arg, j->rc);
		pthread_mutex_lock(&p->lock);
		p->pending--;
		if (j->rc == 0)
			p->completed++;
		else
			p->cancelled++;
		pthread_mutex_unlock(&p->lock);
		free(j);
	}
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
	char buf[64];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
	deliver(arg);
}

int engy_pool_new(struct event_base *base, unsigned threads,
		  struct engy_pool **out)
{
	struct engy_pool *p = calloc(1, sizeof(*p));
	unsigned i;

	if (!p)
		return -ENOMEM;
	if (threads == 0)
		threads = 1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->wake[0] = p->wake[1] = -1;
	if (pipe2(p->wake, O_NONBLOCK | O_CLOEXEC) < 0)
		goto fail;
	p->wake_ev =
		event_new(base, p->wake[0], EV_READ | EV_PERSIST, on_wake, p);
	if (!p->wake_ev || event_add(p->wake_ev, NULL) < 0)
		goto fail;
	p->threads = calloc(threads, sizeof(*p->threads));
	if (!p->threads)
		goto fail;
	for (i = 0; i < threads; i++) {
		if (pthread_create(&p->threads[i], NULL, worker, p) != 0)
			goto fail;
		p->n_threads++;
	}
	*out = p;
	return 0;
fail:
	engy_pool_free(p);
	return -ENOMEM;
}

int engy_pool_submit(struct engy_pool *p, void (*fn)(void *),
		     void (*done)(void *, int), void *arg)
{
	struct job *j;

	if (!fn || !done)
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->fn = fn;
	j->done = done;
	j->arg = arg;
	pthread_mutex_lock(&p->lock);
	if (p->closing) {
		pthread_mutex_unlock(&p->lock);
		free(j);
		return -ESHUTDOWN;
	}
	push(&p->queue_head, &p->queue_tail, j);
	p->queued++;
	p->submitted++;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

unsigned engy_pool_inflight(struct engy_pool *p)
{
	unsigned n;

	pthread_mutex_lock(&p->lock);
	n = p->queued + p->running + p->pending;
	pthread_mutex_unlock(&p->lock);
	return n;
}

void engy_pool_stats(struct engy_pool *p, struct engy_pool_stats *st)
{
	pthread_mutex_lock(&p->lock);
	st->submitted = p->submitted;
	st->completed = p->completed;
	st->cancelled = p->cancelled;
	st->queued = p->queued;
	st->running = p->running;
	st->threads = p->n_threads;
	pthread_mutex_unlock(&p->lock);
}

void engy_pool_close(struct engy_pool *p)
{
	struct job *j;
	unsigned i;

	pthread_mutex_lock(&p->lock);
	if (p->closing && !p->n_threads) {
		pthread_mutex_unlock(&p->lock);
		deliver(p);
		return;
	}
	p->closing = true;
	while ((j = p->queue_head)) {
		p->queue_head = j->next;
		p->queued--;
		j->rc = -ECANCELED;
		finish_locked(p, j);
	}
	p->queue_tail = NULL;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < p->n_threads; i++)
		pthread_join(p->threads[i], NULL);
	p->n_threads = 0;
	deliver(p);
}

void engy_pool_free(struct engy_pool *p)
{
	if (!p)
		return;
	if (p->threads)
		engy_pool_close(p);
	if (p->wake_ev)
		event_free(p->wake_ev);
	if (p->wake[0] >= 0)
		close(p->wake[0]);
	if (p->wake[1] >= 0)
		close(p->wake[1]);
	free(p->threads);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
