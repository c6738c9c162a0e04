/* SPDX-License-Identifier: MIT */
/*
 * WAL checkpoints off the request path.  SQLite's own autocheckpoint runs
 * in whichever commit pushes the WAL past 1,000 pages, and that commit
 * then copies the WAL into the database and fsyncs it: on a disk, one
 * request in a thousand pays milliseconds (the gateway's p99).  Here
 * every pool connection has autocheckpoint off and a WAL hook that only
 * wakes a thread of the instance's own; that thread runs a PASSIVE
 * checkpoint on a connection of its own (never blocking readers or
 * writers).  A writer that finds the WAL fully checkpointed starts it
 * again from the top, so the file stays near checkpoint_pages; should
 * the WAL reach SQ_CKPT_INLINE times that (writes that never pause), the
 * committing request checkpoints after all.  That in-line checkpoint is
 * what bounds the WAL, so it is not given up on a busy: another
 * connection's checkpoint (another process's, as engyctl admin's) holds
 * the checkpoint lock, and it is tried again until that ends, up to
 * busy_timeout_ms as a write waits for a lock; past that it is reported
 * (event=store_checkpoint_busy) and the next commit tries again.
 * checkpoint_pages = 0 keeps SQLite's in-line autocheckpoint.
 */
#include <errno.h>
#include <string.h>

#include "sq.h"

static void checkpoint(struct sq *s, sqlite3 *db, bool in_line);

static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
	struct sq *s = arg;

	(void)name;
	if (pages >= s->ckpt_pages * SQ_CKPT_INLINE) {
		/* The thread is not keeping up: the WAL starts again from the
		 * top only when a writer begins with every frame copied, and
		 * writes that never pause leave no such moment.  This commit
		 * waits for the thread's checkpoint (two at once: SQLITE_BUSY)
		 * and does one itself, as SQLite would, still holding the
		 * instance's write lock: nothing is appended meanwhile, so it
		 * copies every frame and the next write starts the WAL again.
		 * The WAL stays bounded under any load. */
		pthread_mutex_lock(&s->ckpt_mu);
		while (s->ckpt_busy)
			pthread_cond_wait(&s->ckpt_idle, &s->ckpt_mu);
		s->ckpt_busy = true;
		pthread_mutex_unlock(&s->ckpt_mu);
		checkpoint(s, db, true);
		pthread_mutex_lock(&s->ckpt_mu);
		s->ckpt_busy = false;
		pthread_cond_broadcast(&s->ckpt_idle);
		pthread_mutex_unlock(&s->ckpt_mu);
		return SQLITE_OK;
	}
	if (pages >= s->ckpt_pages) {
		pthread_mutex_lock(&s->ckpt_mu);
		s->ckpt_want = true;
		pthread_cond_signal(&s->ckpt_cv);
		pthread_mutex_unlock(&s->ckpt_mu);
	}
	return SQLITE_OK;
}

int sq_ckpt_attach(struct sq *s, sqlite3 *db)
{
	if (!s->ckpt_pages)
		return SQLITE_OK;
	/* The hook replaces SQLite's autocheckpoint (which is itself a WAL
	 * hook: setting wal_autocheckpoint after this would remove ours). */
	sqlite3_wal_hook(db, wal_hook, s);
	return SQLITE_OK;
}

static void checkpoint(struct sq *s, sqlite3 *db, bool in_line)
{
	int rc, log_frames = -1, done_frames = -1, waited_ms = 0;

	for (;;) {
		rc = sqlite3_wal_checkpoint_v2(db, "main",
					       SQLITE_CHECKPOINT_PASSIVE,
					       &log_frames, &done_frames);
		/* BUSY: another checkpoint is running.  The thread leaves it
		 * (the next wake tries again); in line, the bound waits on it. */
		if (rc != SQLITE_BUSY || !in_line ||
		    waited_ms >= s->busy_timeout_ms)
			break;
		sqlite3_sleep(
			1); /* at least 1 ms: at most busy_timeout_ms tries */
		waited_ms++;
	}
	if (rc == SQLITE_OK) {
		engy_dbg(
			s->h,
			"event=store_checkpoint wal_frames=%d checkpointed=%d inline=%d waited_ms=%d",
			log_frames, done_frames, in_line, waited_ms);
		s->h->metric_add(in_line ? s->m_ckpt_inline : s->m_ckpt, 1);
	} else if (rc == SQLITE_BUSY && in_line) {
		engy_warn(
			s->h,
			"event=store_checkpoint_busy path=%s inline=1 waited_ms=%d "
			"effect=\"the WAL stays over the in-line bound until a checkpoint completes; the next commit tries again\"",
			s->path, waited_ms);
	} else if (rc != SQLITE_BUSY) {
		engy_warn(
			s->h,
			"event=store_checkpoint_failed path=%s code=%d error=\"%s\"",
			s->path, rc, sqlite3_errmsg(db));
	}
}

static void *ckpt_main(void *arg)
{
	struct sq *s = arg;
	sqlite3 *db = NULL;
	int rc;

	rc = sqlite3_open_v2(s->path, &db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	/* A checkpoint on a connection that has not read the file yet does
	 * nothing (its pager does not know the file is in WAL mode). */
	if (rc == SQLITE_OK) {
		sqlite3_busy_timeout(db, s->busy_timeout_ms);
		rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL,
				  NULL);
	}
	if (rc != SQLITE_OK)
		engy_warn(
			s->h,
			"event=store_checkpoint_failed path=%s code=%d error=\"%s\" fallback=none",
			s->path, rc, db ? sqlite3_errmsg(db) : "no memory");
	pthread_mutex_lock(&s->ckpt_mu);
	/* Opening read the file: a reader on the WAL as it was then, which
	 * no checkpoint can copy past.  sq_ckpt_start() waits for this, so
	 * that read is over before the first request commits (a thread the
	 * machine left waiting with it open held every in-line checkpoint at
	 * 0 frames while the WAL grew). */
	s->ckpt_ready = true;
	pthread_cond_broadcast(&s->ckpt_idle);
	for (;;) {
		while ((!s->ckpt_want || s->ckpt_busy) && !s->ckpt_stop)
			pthread_cond_wait(s->ckpt_busy ? &s->ckpt_idle
						       : &s->ckpt_cv,
					  &s->ckpt_mu);
		if (s->ckpt_stop)
			break;
		s->ckpt_want = false;
		s->ckpt_busy = true;
		pthread_mutex_unlock(&s->ckpt_mu);
		if (rc == SQLITE_OK)
			checkpoint(s, db, false);
		pthread_mutex_lock(&s->ckpt_mu);
		s->ckpt_busy = false;
		pthread_cond_broadcast(&s->ckpt_idle);
	}
	pthread_mutex_unlock(&s->ckpt_mu);
	sqlite3_close_v2(db);
	return NULL;
}

int sq_ckpt_start(struct sq *s)
{
	int rc;

	if (!s->ckpt_pages)
		return 0;
	s->ckpt_stop = false;
	s->ckpt_ready = false;
	rc = pthread_create(&s->ckpt_thread, NULL, ckpt_main, s);
	if (rc) {
		engy_err(s->h, "event=store_checkpoint_thread error=\"%s\"",
			 strerror(rc));
		return -rc;
	}
	s->ckpt_running = true;
	pthread_mutex_lock(&s->ckpt_mu);
	while (!s->ckpt_ready)
		pthread_cond_wait(&s->ckpt_idle, &s->ckpt_mu);
	pthread_mutex_unlock(&s->ckpt_mu);
	return 0;
}

void sq_ckpt_stop(struct sq *s)
{
	if (!s->ckpt_running)
		return;
	pthread_mutex_lock(&s->ckpt_mu);
	s->ckpt_stop = true;
	pthread_cond_signal(&s->ckpt_cv);
	pthread_cond_broadcast(&s->ckpt_idle);
	pthread_mutex_unlock(&s->ckpt_mu);
	pthread_join(s->ckpt_thread, NULL);
	s->ckpt_running = false;
}
