/* Unit tests for resolver.c: numeric and named hosts, failures, cancel. */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "base/evloop.h"
#include "base/resolver.h"

struct answer {
	int calls, err;
	struct in_addr addr;
	int stop_after;
	struct evloop *loop;
};

static void on_answer(int err, struct in_addr addr, void *arg)
{
	struct answer *a = arg;
	a->calls++;
	a->err = err;
	a->addr = addr;
	if (a->calls >= a->stop_after)
		evloop_stop(a->loop);
}

static void on_deadline(struct evloop *loop, void *arg)
{
	(void)arg;
	evloop_stop(loop);
}

/* Runs the loop until the answers came or 10 s passed (a safety net, not a
 * wait for a state: the answers stop the loop). */
static void run(struct evloop *loop)
{
	struct evloop_timer deadline;
	evloop_timer_init(&deadline, on_deadline, NULL);
	cr_assert_eq(evloop_timer_start(loop, &deadline, 10000), 0);
	cr_assert_eq(evloop_run(loop), 0);
	evloop_timer_stop(loop, &deadline);
}

static uint32_t ip(const char *text)
{
	struct in_addr a;
	cr_assert_eq(inet_pton(AF_INET, text, &a), 1);
	return a.s_addr;
}

Test(resolver, numeric_address_is_answered_through_the_loop)
{
	struct evloop *loop = evloop_new();
	struct resolver *r = resolver_new(loop);
	struct answer a = {.stop_after = 1, .loop = loop};
	int err = 0;
	cr_assert_not_null(resolver_start(r, "127.0.0.1", on_answer, &a, &err));
	cr_assert_eq(a.calls, 0, "never called before the loop runs");
	run(loop);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(a.err, 0);
	cr_assert_eq(a.addr.s_addr, ip("127.0.0.1"));
	resolver_free(r);
	evloop_free(loop);
}

Test(resolver, host_name_is_resolved_on_a_thread)
{
	struct evloop *loop = evloop_new();
	struct resolver *r = resolver_new(loop);
	struct answer a = {.stop_after = 1, .loop = loop};
	int err = 0;
	cr_assert_not_null(resolver_start(r, "localhost", on_answer, &a, &err));
	run(loop);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(a.err, 0);
	cr_assert_eq(a.addr.s_addr, ip("127.0.0.1"));
	resolver_free(r);
	evloop_free(loop);
}

Test(resolver, unknown_host_is_enoent)
{
	struct evloop *loop = evloop_new();
	struct resolver *r = resolver_new(loop);
	struct answer a = {.stop_after = 1, .loop = loop};
	int err = 0;
	/* .invalid never resolves (RFC 6761), and needs no network to say so. */
	cr_assert_not_null(resolver_start(r, "no-such-host.invalid", on_answer, &a, &err));
	run(loop);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(a.err, -ENOENT);
	resolver_free(r);
	evloop_free(loop);
}

Test(resolver, cancelled_lookup_is_not_answered)
{
	struct evloop *loop = evloop_new();
	struct resolver *r = resolver_new(loop);
	struct answer cancelled = {.stop_after = 1, .loop = loop};
	struct answer kept = {.stop_after = 1, .loop = loop};
	int err = 0;
	struct resolve_req *req = resolver_start(r, "127.0.0.1", on_answer, &cancelled, &err);
	cr_assert_not_null(req);
	resolver_cancel(req);
	/* Answers come back in order: once the second is heard, the first has
	 * been delivered (and dropped). */
	cr_assert_not_null(resolver_start(r, "127.0.0.2", on_answer, &kept, &err));
	run(loop);
	cr_assert_eq(cancelled.calls, 0);
	cr_assert_eq(kept.calls, 1);
	cr_assert_eq(kept.addr.s_addr, ip("127.0.0.2"));
	resolver_free(r);
	evloop_free(loop);
}

Test(resolver, bad_names_and_too_many_name_look_ups_are_refused_but_no_numeric_one)
{
	struct evloop *loop = evloop_new();
	struct resolver *r = resolver_new(loop);
	struct answer a = {.stop_after = 272, .loop = loop};
	int err = 0;
	cr_assert_null(resolver_start(r, "", on_answer, &a, &err));
	cr_assert_eq(err, -EINVAL);
	char long_name[300];
	memset(long_name, 'a', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = '\0';
	cr_assert_null(resolver_start(r, long_name, on_answer, &a, &err));
	cr_assert_eq(err, -EINVAL);
	/* Names take threads, 16 at once; numeric addresses take none and are
	 * not refused for the threads (a member connecting to a couple of
	 * hundred peers at once), only past 256 unread answers, which keeps
	 * the pipe from ever filling. */
	for (int k = 0; k < 16; k++)
		cr_assert_not_null(resolver_start(r, "localhost", on_answer, &a, &err));
	cr_assert_null(resolver_start(r, "localhost", on_answer, &a, &err));
	cr_assert_eq(err, -EAGAIN);
	for (int k = 0; k < 256; k++)
		cr_assert_not_null(resolver_start(r, "127.0.0.1", on_answer, &a, &err));
	cr_assert_null(resolver_start(r, "127.0.0.1", on_answer, &a, &err));
	cr_assert_eq(err, -EAGAIN);
	run(loop);
	cr_assert_eq(a.calls, 272);
	resolver_free(r);
	evloop_free(loop);
}

Test(resolver, freed_with_answers_unread)
{
	struct evloop *loop = evloop_new();
	struct resolver *r = resolver_new(loop);
	struct answer a = {.stop_after = 1, .loop = loop};
	int err = 0;
	cr_assert_not_null(resolver_start(r, "127.0.0.1", on_answer, &a, &err));
	resolver_free(r); /* LeakSanitizer checks the unread answer was freed */
	cr_assert_eq(a.calls, 0);
	evloop_free(loop);
}

/* ---- every address of a name ---- */

struct all_answer {
	int calls, err;
	size_t n;
	char addrs[RESOLVER_ADDRS_MAX][RESOLVER_ADDR_BUF];
	struct evloop *loop;
};

static void on_all(int err, const char (*addrs)[RESOLVER_ADDR_BUF], size_t n, void *arg)
{
	struct all_answer *a = arg;
	a->calls++;
	a->err = err;
	a->n = n;
	for (size_t k = 0; k < n; k++)
		memcpy(a->addrs[k], addrs[k], RESOLVER_ADDR_BUF);
	evloop_stop(a->loop);
}

static struct all_answer resolve_all(const char *name)
{
	struct evloop *loop = evloop_new();
	struct resolver *r = resolver_new(loop);
	struct all_answer a = {.loop = loop};
	int err = 0;
	cr_assert_not_null(resolver_start_all(r, name, on_all, &a, &err), "%s: %d", name, err);
	run(loop);
	resolver_free(r);
	evloop_free(loop);
	cr_assert_eq(a.calls, 1);
	return a;
}

static bool has(const struct all_answer *a, const char *addr)
{
	for (size_t k = 0; k < a->n; k++)
		if (strcmp(a->addrs[k], addr) == 0)
			return true;
	return false;
}

Test(resolver_all, numeric_v4_and_v6_addresses_come_back_as_text)
{
	struct all_answer a = resolve_all("127.0.0.1");
	cr_assert_eq(a.err, 0);
	cr_assert_eq(a.n, 1, "each address once, whatever the socket types");
	cr_assert_str_eq(a.addrs[0], "127.0.0.1");
	a = resolve_all("::1");
	cr_assert_eq(a.err, 0);
	cr_assert_eq(a.n, 1);
	cr_assert_str_eq(a.addrs[0], "::1");
}

Test(resolver_all, a_name_gives_every_address_once)
{
	struct all_answer a = resolve_all("localhost");
	cr_assert_eq(a.err, 0);
	cr_assert(has(&a, "127.0.0.1"));
	for (size_t k = 0; k < a.n; k++)
		for (size_t j = 0; j < k; j++)
			cr_assert_str_neq(a.addrs[k], a.addrs[j]);
}

Test(resolver_all, an_unknown_name_is_enoent)
{
	struct all_answer a = resolve_all("no-such-host.invalid");
	cr_assert_eq(a.err, -ENOENT);
	cr_assert_eq(a.n, 0);
}

Test(resolver_all, an_empty_or_overlong_name_is_refused_at_once)
{
	struct evloop *loop = evloop_new();
	struct resolver *r = resolver_new(loop);
	struct all_answer a = {.loop = loop};
	int err = 0;
	cr_assert_null(resolver_start_all(r, "", on_all, &a, &err));
	cr_assert_eq(err, -EINVAL);
	char longname[300];
	memset(longname, 'a', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	cr_assert_null(resolver_start_all(r, longname, on_all, &a, &err));
	cr_assert_eq(err, -EINVAL);
	resolver_free(r);
	evloop_free(loop);
	cr_assert_eq(a.calls, 0);
}
