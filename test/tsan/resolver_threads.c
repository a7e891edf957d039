/*
 * resolver_threads.c — the resolver's look-up threads under
 * ThreadSanitizer (`make tsan`).
 *
 * Criterion's runner cannot run under TSan (its shared arena), so this is a
 * plain program: it exits 0 when every check holds, and TSan (with
 * halt_on_error) fails it on any data race between a look-up thread and the
 * loop. It drives what threads and the loop share: answers handed back
 * through the pipe, look-ups cancelled while their thread runs, and the
 * resolver freed with threads still in flight.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "base/evloop.h"
#include "base/resolver.h"

#define CHECK(cond)                                                                      \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			exit(1);                                                         \
		}                                                                        \
	} while (0)

struct round {
	struct evloop *loop;
	int answered, expected;
	int localhost_ok;
};

static void on_answer(int err, struct in_addr addr, void *arg)
{
	struct round *r = arg;
	if (err == 0 && addr.s_addr == htonl(INADDR_LOOPBACK))
		r->localhost_ok++;
	if (++r->answered == r->expected)
		evloop_stop(r->loop);
}

/* Every address of a name: its text written by the thread, read here. */
static void on_all(int err, const char (*addrs)[RESOLVER_ADDR_BUF], size_t n, void *arg)
{
	struct round *r = arg;
	bool loopback = false;
	for (size_t k = 0; err == 0 && k < n; k++)
		loopback |= strcmp(addrs[k], "127.0.0.1") == 0;
	if (loopback)
		r->localhost_ok++;
	if (++r->answered == r->expected)
		evloop_stop(r->loop);
}

static void on_deadline(struct evloop *loop, void *arg)
{
	(void)arg;
	fprintf(stderr, "resolver_threads: look-ups not answered within 10 s\n");
	evloop_stop(loop);
	exit(1);
}

int main(void)
{
	for (int round = 0; round < 20; round++) {
		struct evloop *loop = evloop_new();
		CHECK(loop != NULL);
		struct resolver *res = resolver_new(loop);
		CHECK(res != NULL);
		struct round r = {.loop = loop};
		struct resolve_req *cancel_me[4] = {0};
		/* Threads for "localhost", threads cancelled at once, numeric
		 * addresses answered without a thread: all through one pipe. */
		for (int k = 0; k < 12; k++) {
			int err = 0;
			const char *host = k % 3 == 2 ? "127.0.0.1" : "localhost";
			struct resolve_req *q = k % 4 == 1 ? resolver_start_all(res, "localhost", on_all, &r, &err)
							   : resolver_start(res, host, on_answer, &r, &err);
			CHECK(q != NULL || err == -EAGAIN);
			if (q == NULL)
				continue;
			if (k < 4)
				cancel_me[k] = q;
			else
				r.expected++;
		}
		for (int k = 0; k < 4; k++)
			if (cancel_me[k] != NULL)
				resolver_cancel(cancel_me[k]);
		struct evloop_timer deadline;
		evloop_timer_init(&deadline, on_deadline, NULL);
		CHECK(evloop_timer_start(loop, &deadline, 10000) == 0);
		if (r.expected > 0)
			CHECK(evloop_run(loop) == 0);
		CHECK(r.answered == r.expected);
		CHECK(r.localhost_ok == r.expected);
		/* Threads still in flight when the resolver goes: they finish on
		 * their own and are discarded. */
		for (int k = 0; k < 4; k++) {
			int err;
			(void)resolver_start(res, "localhost", on_answer, &r, &err);
			(void)resolver_start_all(res, "localhost", on_all, &r, &err);
		}
		evloop_timer_stop(loop, &deadline);
		resolver_free(res);
		evloop_free(loop);
	}
	puts("resolver_threads: 20 rounds, no race reported");
	return 0;
}
