/* SPDX-License-Identifier: MIT */
/* The event log: logfmt values, levels, one line per event, reopen, the
 * writer thread.
 *
 * Oracle: hand-written expected lines (logfmt quoting rules) by the test's
 * author; no outside peer.
 */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "logfmt.h"

START_TEST(test_logfmt_values)
{
	char b[128];

	ck_assert_uint_eq(engy_logfmt_value(b, sizeof(b), "plain"), 5);
	ck_assert_str_eq(b, "plain");
	engy_logfmt_value(b, sizeof(b), "two words");
	ck_assert_str_eq(b, "\"two words\"");
	engy_logfmt_value(b, sizeof(b), "a=\"b\"\n\\\x01");
	ck_assert_str_eq(b, "\"a=\\\"b\\\"\\n\\\\\\x01\"");
	engy_logfmt_value(b, sizeof(b), "");
	ck_assert_str_eq(b, "\"\"");
	/* Truncation keeps a terminated string and reports the need. */
	ck_assert_uint_eq(engy_logfmt_value(b, 4, "abcdefgh"), 8);
	ck_assert_str_eq(b, "abc");
}
END_TEST

static int fast(char *dst, size_t cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = engy_logfmt_vformat(dst, cap, fmt, ap);
	va_end(ap);
	return n;
}

/* engy_logfmt_vformat() writes what glibc's snprintf writes, returns
 * what it returns, at every buffer size, for the conversions it takes,
 * and -1 (so libc formats) for any other. */
START_TEST(test_vformat)
{
	static const long long vals[] = { 0,
					  1,
					  -1,
					  9,
					  10,
					  255,
					  4096,
					  2147483647LL,
					  -2147483647LL - 1,
					  9223372036854775807LL,
					  -9223372036854775807LL - 1 };
	const char *volatile nul = NULL; /* glibc prints (null) */
	char a[96], b[96];
	size_t i, cap;
	int n, m;

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		long long v = vals[i];

		for (cap = 0; cap <= 80; cap += 7) {
			memset(a, 'A', sizeof(a));
			memset(b, 'A', sizeof(b));
			n = fast(a, cap,
				 "event=x d=%d u=%u ld=%ld lu=%lu lld=%lld "
				 "llu=%llu zu=%zu zd=%zd x=%x llx=%llx %s%c%%",
				 (int)v, (unsigned)v, (long)v, (unsigned long)v,
				 v, (unsigned long long)v, (size_t)v,
				 (ssize_t)v, (unsigned)v, (unsigned long long)v,
				 "str", 'c');
			m = snprintf(
				b, cap,
				"event=x d=%d u=%u ld=%ld lu=%lu lld=%lld "
				"llu=%llu zu=%zu zd=%zd x=%x llx=%llx %s%c%%",
				(int)v, (unsigned)v, (long)v, (unsigned long)v,
				v, (unsigned long long)v, (size_t)v, (ssize_t)v,
				(unsigned)v, (unsigned long long)v, "str", 'c');
			ck_assert_int_eq(n, m);
			ck_assert_msg(memcmp(a, b, sizeof(a)) == 0,
				      "cap %zu: %.*s | %.*s", cap, (int)cap, a,
				      (int)cap, b);
		}
	}
	ck_assert_int_eq(fast(a, sizeof(a), "%s and %s", nul, ""),
			 snprintf(b, sizeof(b), "%s and %s", nul, ""));
	ck_assert_str_eq(a, b);
	ck_assert_int_eq(fast(a, sizeof(a), "plain"), 5);
	ck_assert_str_eq(a, "plain");
	ck_assert_int_eq(fast(a, sizeof(a), ""), 0);
	ck_assert_str_eq(a, "");
	/* left to libc: flags, widths, precisions, floats, pointers */
	ck_assert_int_eq(fast(a, sizeof(a), "%5d", 1), -1);
	ck_assert_int_eq(fast(a, sizeof(a), "%-s", "x"), -1);
	ck_assert_int_eq(fast(a, sizeof(a), "%.1f", 1.0), -1);
	ck_assert_int_eq(fast(a, sizeof(a), "%p", (void *)a), -1);
	ck_assert_int_eq(fast(a, sizeof(a), "%.*s", 1, "x"), -1);
	ck_assert_int_eq(fast(a, sizeof(a), "%hd", 1), -1);
	ck_assert_int_eq(fast(a, sizeof(a), "%ls", L"x"), -1);
	ck_assert_int_eq(fast(a, sizeof(a), "a%"), -1);
	ck_assert_int_eq(fast(a, sizeof(a), "%08x", 1u), -1);
}
END_TEST

START_TEST(test_levels)
{
	ck_assert_int_eq(engy_log_parse_level("debug"), ENGY_LOG_DEBUG);
	ck_assert_int_eq(engy_log_parse_level("warn"), ENGY_LOG_WARNING);
	ck_assert_int_eq(engy_log_parse_level("error"), ENGY_LOG_ERR);
	ck_assert_int_lt(engy_log_parse_level("loud"), 0);
	ck_assert_str_eq(engy_log_level_name(ENGY_LOG_NOTICE), "notice");
}
END_TEST

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	static char buf[8192];
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

START_TEST(test_file_and_reopen)
{
	char dir[] = "/tmp/engy-log-XXXXXX", path[128], rotated[128];
	char *text;
	uint64_t before = engy_log_count(ENGY_LOG_INFO);

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/engyd.log", dir);
	snprintf(rotated, sizeof(rotated), "%s/engyd.log.1", dir);
	ck_assert_int_eq(engy_log_open(path, ENGY_LOG_INFO), 0);
	engy_log(ENGY_LOG_INFO, "p1", "event=one n=%d", 1);
	engy_log(ENGY_LOG_DEBUG, "p1", "event=hidden");
	/* A warning is on disk when the call returns, after the info line
	 * before it (which the writer thread may not have written yet). */
	engy_log(ENGY_LOG_WARNING, "my inst", "event=two\nforged=line%s",
		 "\r\nx=\n\ry");
	text = slurp(path);
	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(
		strstr(text, " level=info inst=p1 event=one n=1\n"));
	ck_assert_ptr_null(strstr(text, "hidden"));
	/* A newline inside a message cannot forge a second event line. */
	ck_assert_ptr_nonnull(strstr(
		text, "inst=\"my inst\" event=two forged=line  x=  y\n"));
	ck_assert(strstr(text, "event=one") < strstr(text, "event=two"));
	ck_assert_uint_eq(engy_log_count(ENGY_LOG_INFO), before + 1);
	engy_log(ENGY_LOG_INFO, NULL, "event=before_rotate");
	ck_assert_int_eq(rename(path, rotated), 0);
	ck_assert_int_eq(engy_log_reopen(), 0);
	engy_log(ENGY_LOG_INFO, NULL, "event=after_rotate");
	engy_log_flush();
	/* What was logged before the reopen is in the rotated file. */
	ck_assert_ptr_nonnull(strstr(slurp(rotated), "event=before_rotate"));
	text = slurp(path);
	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(strstr(text, "inst=engyd event=after_rotate"));
	ck_assert_ptr_null(strstr(text, "event=one"));
	engy_log_close();
	unlink(path);
	unlink(rotated);
	rmdir(dir);
}
END_TEST

/*
 * Threads logging at once through the writer thread, far more than its
 * ring holds (callers wait for room): after close every line is in the
 * file, whole, each thread's in its order; a warning from any thread is
 * written after every line logged before it.
 */
#define THREADS 4
#define LINES	20000

static void *spam(void *arg)
{
	long t = (long)arg;

	for (int i = 0; i < LINES; i++) {
		if (i == LINES / 2)
			engy_log(ENGY_LOG_WARNING, "t", "event=half t=%ld i=%d",
				 t, i);
		else
			engy_log(ENGY_LOG_INFO, "t",
				 "event=spam t=%ld i=%d pad=%0100d", t, i, 0);
	}
	return NULL;
}

START_TEST(test_writer_thread)
{
	char dir[] = "/tmp/engy-log-XXXXXX", path[128], line[512];
	int next[THREADS] = { 0 }, n = 0;
	pthread_t th[THREADS];
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/engyd.log", dir);
	ck_assert_int_eq(engy_log_open(path, ENGY_LOG_INFO), 0);
	for (long t = 0; t < THREADS; t++)
		ck_assert_int_eq(pthread_create(&th[t], NULL, spam, (void *)t),
				 0);
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	engy_log_close();
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		long t;
		int i;
		const char *e = strstr(line, " event=");

		ck_assert_msg(e && line[strlen(line) - 1] == '\n',
			      "torn line: %s", line);
		ck_assert_int_eq(
			sscanf(strstr(e, " t=") + 3, "%ld i=%d", &t, &i), 2);
		ck_assert(t >= 0 && t < THREADS);
		ck_assert_msg(i == next[t], "thread %ld: line %d after %d", t,
			      i, next[t]);
		next[t]++;
		n++;
	}
	fclose(f);
	ck_assert_int_eq(n, THREADS * LINES);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* Threads of this process (entries of /proc/self/task). */
static int n_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/*
 * log_sync: no writer thread, so an info line is in the file when the
 * call returns (what a test reading the log after the program's answer
 * needs).  Without it, opening a file starts the writer.
 */
START_TEST(test_sync)
{
	char dir[] = "/tmp/engy-log-XXXXXX", path[128];
	int before = n_threads();
	char *text;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/engyd.log", dir);
	engy_log_set_sync(true);
	ck_assert_int_eq(engy_log_open(path, ENGY_LOG_INFO), 0);
	ck_assert_int_eq(n_threads(), before);
	for (int i = 0; i < 100; i++) {
		char want[64];
		int lines = 0;

		engy_log(ENGY_LOG_INFO, NULL, "event=sync i=%d", i);
		text = slurp(path);
		ck_assert_ptr_nonnull(text);
		snprintf(want, sizeof(want), " event=sync i=%d\n", i);
		ck_assert_msg(strstr(text, want), "line %d not yet written", i);
		for (const char *c = text; *c; c++)
			lines += *c == '\n';
		ck_assert_int_eq(lines, i + 1);
	}
	engy_log_close();
	engy_log_set_sync(false);
	ck_assert_int_eq(engy_log_open(path, ENGY_LOG_INFO), 0);
	ck_assert_int_eq(n_threads(), before + 1);
	engy_log_close();
	ck_assert_int_eq(n_threads(), before);
	unlink(path);
	rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_logfmt_values);
	tcase_add_test(tc, test_vformat);
	tcase_add_test(tc, test_levels);
	tcase_add_test(tc, test_file_and_reopen);
	tcase_add_test(tc, test_writer_thread);
	tcase_add_test(tc, test_sync);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
