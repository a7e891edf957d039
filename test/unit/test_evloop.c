/*
 * test_evloop.c — timers and readiness callbacks of the event loop.
 *
 * Timers here are a few milliseconds long and the loop waits for them in
 * epoll_wait, as it does in the node; nothing sleeps.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "base/evloop.h"
#include "unit_helpers.h"

static struct evloop *new_loop(void)
{
	struct evloop *loop = evloop_new();
	cr_assert_not_null(loop);
	return loop;
}

/* ---- firing order ---- */

struct order {
	int fired[16];
	size_t n;
	int stop_after; /* evloop_stop once this many have fired */
};

struct tagged_timer {
	struct evloop_timer t;
	struct order *o;
	int id;
};

static void record(struct evloop *loop, void *arg)
{
	struct tagged_timer *tt = arg;
	tt->o->fired[tt->o->n++] = tt->id;
	if ((int)tt->o->n == tt->o->stop_after)
		evloop_stop(loop);
}

static void tagged_init(struct tagged_timer *tt, struct order *o, int id)
{
	tt->o = o;
	tt->id = id;
	evloop_timer_init(&tt->t, record, tt);
	cr_assert_not(evloop_timer_armed(&tt->t));
}

Test(evloop, timers_fire_in_deadline_order)
{
	struct evloop *loop = new_loop();
	struct order o = {.stop_after = 3};
	struct tagged_timer t0, t1, t2;
	tagged_init(&t0, &o, 0);
	tagged_init(&t1, &o, 1);
	tagged_init(&t2, &o, 2);
	/* Armed out of order: the heap, not the arming order, decides. */
	cr_assert_eq(evloop_timer_start(loop, &t2.t, 2), 0);
	cr_assert_eq(evloop_timer_start(loop, &t0.t, 0), 0);
	cr_assert_eq(evloop_timer_start(loop, &t1.t, 1), 0);
	cr_assert(evloop_timer_armed(&t0.t));
	cr_assert_eq(evloop_run(loop), 0);
	cr_assert_eq(o.n, 3);
	cr_assert_eq(o.fired[0], 0);
	cr_assert_eq(o.fired[1], 1);
	cr_assert_eq(o.fired[2], 2);
	cr_assert_not(evloop_timer_armed(&t0.t), "a fired timer is disarmed");
	cr_assert_not(evloop_timer_armed(&t2.t));
	evloop_free(loop);
}

Test(evloop, stopped_timer_never_fires)
{
	struct evloop *loop = new_loop();
	struct order o = {.stop_after = 1};
	struct tagged_timer early, stopper;
	tagged_init(&early, &o, 1);
	tagged_init(&stopper, &o, 2);
	cr_assert_eq(evloop_timer_start(loop, &early.t, 0), 0);
	cr_assert_eq(evloop_timer_start(loop, &stopper.t, 2), 0);
	evloop_timer_stop(loop, &early.t);
	cr_assert_not(evloop_timer_armed(&early.t));
	evloop_timer_stop(loop, &early.t); /* stopping twice is harmless */
	cr_assert_eq(evloop_run(loop), 0);
	cr_assert_eq(o.n, 1);
	cr_assert_eq(o.fired[0], 2);
	evloop_free(loop);
}

Test(evloop, rearming_moves_the_deadline)
{
	struct evloop *loop = new_loop();
	struct order o = {.stop_after = 2};
	struct tagged_timer a, b;
	tagged_init(&a, &o, 1);
	tagged_init(&b, &o, 2);
	cr_assert_eq(evloop_timer_start(loop, &a.t, 60000), 0);
	cr_assert_eq(evloop_timer_start(loop, &b.t, 2), 0);
	/* Re-arming the far timer to now brings it ahead of b. */
	cr_assert_eq(evloop_timer_start(loop, &a.t, 0), 0);
	cr_assert_eq(evloop_run(loop), 0);
	cr_assert_eq(o.fired[0], 1);
	cr_assert_eq(o.fired[1], 2);

	/* And the other way: pushing a timer back lets the other go first. */
	o.n = 0;
	cr_assert_eq(evloop_timer_start(loop, &a.t, 0), 0);
	cr_assert_eq(evloop_timer_start(loop, &b.t, 1), 0);
	cr_assert_eq(evloop_timer_start(loop, &a.t, 3), 0);
	cr_assert_eq(evloop_run(loop), 0);
	cr_assert_eq(o.fired[0], 2);
	cr_assert_eq(o.fired[1], 1);
	evloop_free(loop);
}

struct rearm {
	struct evloop_timer t;
	int left;
	uint64_t last_deadline;
};

static void rearm_self(struct evloop *loop, void *arg)
{
	struct rearm *r = arg;
	cr_assert_not(evloop_timer_armed(&r->t), "disarmed while its callback runs");
	cr_assert_geq(r->t.deadline_ms, r->last_deadline);
	r->last_deadline = r->t.deadline_ms;
	if (--r->left == 0)
		evloop_stop(loop);
	else
		cr_assert_eq(evloop_timer_start(loop, &r->t, 1), 0);
}

Test(evloop, timer_rearms_from_its_callback)
{
	struct evloop *loop = new_loop();
	struct rearm r = {.left = 5};
	evloop_timer_init(&r.t, rearm_self, &r);
	cr_assert_eq(evloop_timer_start(loop, &r.t, 0), 0);
	cr_assert_eq(evloop_run(loop), 0);
	cr_assert_eq(r.left, 0);
	cr_assert_not(evloop_timer_armed(&r.t));
	evloop_free(loop);
}

/* ---- heap integrity ---- */

#define NTIMERS 1000

struct heap_case {
	struct evloop_timer t[NTIMERS];
	bool cancelled[NTIMERS];
	bool fired[NTIMERS];
	uint64_t fire_deadline[NTIMERS];
	size_t nfired, nexpected;
};

/* The callback's arg is the timer's index; the case itself is here. */
static struct heap_case *the_case;

static void heap_fire(struct evloop *loop, void *arg)
{
	size_t i = (size_t)(uintptr_t)arg;
	struct heap_case *hc = the_case;
	cr_assert_not(hc->cancelled[i], "cancelled timer %zu fired", i);
	cr_assert_not(hc->fired[i], "timer %zu fired twice", i);
	hc->fired[i] = true;
	hc->fire_deadline[hc->nfired++] = hc->t[i].deadline_ms;
	if (hc->nfired == hc->nexpected)
		evloop_stop(loop);
}

/* Fisher-Yates with a fixed-seed generator, so a failure reproduces. */
static void shuffle(size_t *a, size_t n, unsigned *seed)
{
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)rand_r(seed) % (i + 1);
		size_t tmp = a[i];
		a[i] = a[j];
		a[j] = tmp;
	}
}

Test(evloop, heap_integrity_with_random_cancellations)
{
	struct evloop *loop = new_loop();
	struct heap_case *hc = calloc(1, sizeof *hc);
	cr_assert_not_null(hc);
	the_case = hc;
	unsigned seed = 20240601;

	for (size_t i = 0; i < NTIMERS; i++) {
		evloop_timer_init(&hc->t[i], heap_fire, (void *)(uintptr_t)i);
		cr_assert_eq(evloop_timer_start(loop, &hc->t[i], (uint64_t)(rand_r(&seed) % 8)), 0);
	}
	/* Cancel half, in random order; re-arm a tenth of the rest to new
	 * deadlines so entries also move within the heap. */
	size_t order[NTIMERS];
	for (size_t i = 0; i < NTIMERS; i++)
		order[i] = i;
	shuffle(order, NTIMERS, &seed);
	for (size_t k = 0; k < NTIMERS / 2; k++) {
		size_t i = order[k];
		evloop_timer_stop(loop, &hc->t[i]);
		hc->cancelled[i] = true;
		cr_assert_not(evloop_timer_armed(&hc->t[i]));
	}
	for (size_t k = NTIMERS / 2; k < NTIMERS / 2 + NTIMERS / 10; k++)
		cr_assert_eq(evloop_timer_start(loop, &hc->t[order[k]], (uint64_t)(rand_r(&seed) % 8)), 0);

	/* Every armed timer knows a distinct heap slot. */
	bool *seen = calloc(NTIMERS, sizeof *seen);
	cr_assert_not_null(seen);
	for (size_t i = 0; i < NTIMERS; i++) {
		if (hc->cancelled[i])
			continue;
		cr_assert(evloop_timer_armed(&hc->t[i]));
		size_t h = hc->t[i].heap_index;
		cr_assert_lt(h, NTIMERS / 2);
		cr_assert_not(seen[h], "two timers in heap slot %zu", h);
		seen[h] = true;
	}
	free(seen);

	hc->nexpected = NTIMERS - NTIMERS / 2;
	cr_assert_eq(evloop_run(loop), 0);
	cr_assert_eq(hc->nfired, hc->nexpected);
	for (size_t k = 1; k < hc->nfired; k++)
		cr_assert_leq(hc->fire_deadline[k - 1], hc->fire_deadline[k], "fire %zu out of deadline order", k);
	for (size_t i = 0; i < NTIMERS; i++)
		cr_assert_eq(hc->fired[i], !hc->cancelled[i], "timer %zu", i);
	free(hc);
	evloop_free(loop);
}

/* ---- I/O ---- */

struct io_seen {
	int fd;
	uint32_t events;
	int calls;
	char got[16];
};

static void on_readable(struct evloop *loop, int fd, uint32_t events, void *arg)
{
	struct io_seen *s = arg;
	s->fd = fd;
	s->events = events;
	s->calls++;
	ssize_t n = read(fd, s->got, sizeof s->got - 1);
	cr_assert_gt(n, 0);
	s->got[n] = '\0';
	evloop_stop(loop);
}

Test(evloop, readable_pipe)
{
	struct evloop *loop = new_loop();
	int p[2];
	cr_assert_eq(pipe(p), 0);
	struct io_seen s = {0};
	cr_assert_eq(evloop_watch(loop, p[0], EPOLLIN, on_readable, &s), 0);
	cr_assert_eq(evloop_watch(loop, p[0], EPOLLIN, on_readable, &s), -EEXIST, "watched twice");
	cr_assert_eq(write(p[1], "ping", 4), 4);
	cr_assert_eq(evloop_run(loop), 0);
	cr_assert_eq(s.calls, 1);
	cr_assert_eq(s.fd, p[0]);
	cr_assert(s.events & EPOLLIN);
	cr_assert_str_eq(s.got, "ping");

	/* Unwatched, a readable fd calls nobody; a timer ends the run. */
	evloop_unwatch(loop, p[0]);
	evloop_unwatch(loop, p[0]); /* twice is harmless */
	cr_assert_eq(write(p[1], "pong", 4), 4);
	struct order o = {.stop_after = 1};
	struct tagged_timer t;
	tagged_init(&t, &o, 1);
	cr_assert_eq(evloop_timer_start(loop, &t.t, 2), 0);
	cr_assert_eq(evloop_run(loop), 0);
	cr_assert_eq(s.calls, 1);
	cr_assert_eq(o.n, 1);
	close(p[0]);
	close(p[1]);
	evloop_free(loop);
}

static void on_writable(struct evloop *loop, int fd, uint32_t events, void *arg)
{
	struct io_seen *s = arg;
	s->fd = fd;
	s->events = events;
	s->calls++;
	evloop_stop(loop);
}

Test(evloop, rewatch_changes_the_mask)
{
	struct evloop *loop = new_loop();
	int p[2];
	cr_assert_eq(pipe(p), 0);
	struct io_seen s = {0};
	cr_assert_eq(evloop_watch(loop, p[1], 0, on_writable, &s), 0);
	cr_assert_eq(evloop_rewatch(loop, p[1], EPOLLOUT), 0);
	cr_assert_eq(evloop_rewatch(loop, p[1], EPOLLOUT), 0, "the same mask again");
	cr_assert_eq(evloop_run(loop), 0);
	cr_assert_eq(s.calls, 1);
	cr_assert(s.events & EPOLLOUT);
	cr_assert_eq(evloop_rewatch(loop, p[0], EPOLLIN), -EBADF, "not watched");
	cr_assert_eq(evloop_rewatch(loop, -1, EPOLLIN), -EBADF);
	cr_assert_eq(evloop_rewatch(loop, 100000, EPOLLIN), -EBADF);
	evloop_unwatch(loop, p[1]);
	close(p[0]);
	close(p[1]);
	evloop_free(loop);
}

Test(evloop, watch_bad_descriptors)
{
	struct evloop *loop = new_loop();
	struct io_seen s = {0};
	cr_assert_eq(evloop_watch(loop, -1, EPOLLIN, on_readable, &s), -EBADF);
	int fd = dup(0);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(evloop_watch(loop, fd, EPOLLIN, on_readable, &s), -EBADF, "a closed fd");
	evloop_unwatch(loop, 5000); /* never watched: harmless */
	evloop_free(loop);
}

/* ---- the idle hook ---- */

struct idle_count {
	int runs, timer_runs;
	struct evloop_timer t;
};

static bool on_idle(struct evloop *loop, void *arg)
{
	struct idle_count *c = arg;
	cr_assert_eq(c->runs, c->timer_runs, "one hook run per iteration");
	if (++c->runs == 3)
		evloop_stop(loop);
	else /* a timer due at once keeps the loop from blocking */
		cr_assert_eq(evloop_timer_start(loop, &c->t, 0), 0);
	return false;
}

/* A hook that reports queued work is called again without the loop
 * sleeping, even with nothing watched and no timer armed. */
static bool on_idle_with_work(struct evloop *loop, void *arg)
{
	int *runs = arg;
	if (++*runs == 5)
		evloop_stop(loop);
	return true;
}

Test(evloop, idle_hook_with_work_left_runs_again_at_once)
{
	struct evloop *loop = new_loop();
	int runs = 0;
	cr_assert_eq(evloop_add_idle(loop, on_idle_with_work, &runs), 0);
	cr_assert_eq(evloop_run(loop), 0);
	cr_assert_eq(runs, 5);
	evloop_remove_idle(loop, on_idle_with_work, &runs);
	evloop_free(loop);
}

static void count_timer(struct evloop *loop, void *arg)
{
	struct idle_count *c = arg;
	c->timer_runs++;
	(void)loop;
}

Test(evloop, idle_hook_runs_before_each_wait)
{
	struct evloop *loop = new_loop();
	struct idle_count c = {0};
	evloop_timer_init(&c.t, count_timer, &c);
	cr_assert_eq(evloop_add_idle(loop, on_idle, &c), 0);
	cr_assert_eq(evloop_run(loop), 0);
	cr_assert_eq(c.runs, 3, "the hook stopped the loop on its third run");
	cr_assert_eq(c.timer_runs, 2);
	evloop_remove_idle(loop, on_idle, &c);
	evloop_free(loop);
}

Test(evloop, clock_moves_forward)
{
	struct evloop *loop = new_loop();
	uint64_t before = evloop_now_ms(loop);
	struct order o = {.stop_after = 1};
	struct tagged_timer t;
	tagged_init(&t, &o, 1);
	cr_assert_eq(evloop_timer_start(loop, &t.t, 3), 0);
	uint64_t deadline = t.t.deadline_ms;
	cr_assert_eq(deadline, before + 3);
	cr_assert_eq(evloop_run(loop), 0);
	cr_assert_geq(evloop_now_ms(loop), deadline, "fired no earlier than its deadline");
	evloop_free(loop);
}

/* Each dist node on a loop has its own hook: all run before each wait, in
 * the order added; a removed one no longer runs; there is room for
 * EVLOOP_MAX_IDLE and no more. */
struct idle_log {
	int seen[64];
	int n;
};

struct idle_hook {
	struct idle_log *log;
	int id;
};

static bool record_idle(struct evloop *loop, void *arg)
{
	struct idle_hook *h = arg;
	h->log->seen[h->log->n++] = h->id;
	if (h->log->n >= 6)
		evloop_stop(loop);
	return true;
}

Test(evloop, several_idle_hooks_run_in_the_order_added)
{
	struct evloop *loop = new_loop();
	struct idle_log log = {0};
	struct idle_hook hooks[EVLOOP_MAX_IDLE + 1];
	for (int i = 0; i <= EVLOOP_MAX_IDLE; i++)
		hooks[i] = (struct idle_hook){.log = &log, .id = i};
	for (int i = 0; i < EVLOOP_MAX_IDLE; i++)
		cr_assert_eq(evloop_add_idle(loop, record_idle, &hooks[i]), 0);
	cr_assert_eq(evloop_add_idle(loop, record_idle, &hooks[EVLOOP_MAX_IDLE]), -ENOSPC);
	for (int i = 3; i < EVLOOP_MAX_IDLE; i++)
		evloop_remove_idle(loop, record_idle, &hooks[i]);
	evloop_remove_idle(loop, record_idle, &hooks[1]);
	evloop_remove_idle(loop, record_idle, &hooks[1]); /* not there: nothing */
	cr_assert_eq(evloop_run(loop), 0);
	int want[] = {0, 2, 0, 2, 0, 2};
	cr_assert_eq(log.n, 6);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(log.seen[i], want[i], "run %d: hook %d", i, log.seen[i]);
	evloop_remove_idle(loop, record_idle, &hooks[0]);
	evloop_remove_idle(loop, record_idle, &hooks[2]);
	evloop_free(loop);
}

Test(evloop_delay_to_multiple, to_the_next_whole_interval_at_least_half_one_away)
{
	cr_assert_eq(evloop_delay_to_multiple_ms(0, 1000), 1000, "on a multiple: the next one");
	cr_assert_eq(evloop_delay_to_multiple_ms(200 * 1000, 1000), 800);
	cr_assert_eq(evloop_delay_to_multiple_ms(500 * 1000, 1000), 500, "half an interval away is enough");
	cr_assert_eq(evloop_delay_to_multiple_ms(500 * 1000 + 1000, 1000), 1499, "closer than half: the one after");
	cr_assert_eq(evloop_delay_to_multiple_ms(999 * 1000 + 999, 1000), 1001, "microseconds round down");
	cr_assert_eq(evloop_delay_to_multiple_ms(1234567890123ULL, 250), 250 - 1234567890ULL % 250 + 250);
	cr_assert_eq(evloop_delay_to_multiple_ms(5, 0), 0);
	cr_assert_eq(evloop_delay_to_multiple_ms(0, 1), 1);
	/* Two nodes whose clocks agree, started apart, fire together from
	 * their second timer on. */
	uint64_t a = 3 * 1000 * 1000 + 120 * 1000, b = 3 * 1000 * 1000 + 740 * 1000;
	uint64_t a_next = a / 1000 + evloop_delay_to_multiple_ms(a, 1000);
	uint64_t b_next = b / 1000 + evloop_delay_to_multiple_ms(b, 1000);
	cr_assert_eq(a_next % 1000, 0);
	cr_assert_eq(b_next % 1000, 0);
}
