/*
 * test_poll_until.c — a condition looked at until it holds or a deadline
 * passes: done once, with the right verdict, at the right time; stop
 * cancels; a restart from done works. Real loop, real timers of a few ms.
 */
#include <stdbool.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include "base/evloop.h"
#include "base/poll_until.h"
#include "unit_helpers.h"

struct waiter {
	struct evloop *loop;
	struct poll_until poll;
	int checks;         /* calls of check */
	int true_after;     /* check is true from this call on; 0: never */
	int dones;
	bool in_time;
	uint64_t done_at;
	bool restart;       /* start again, once, from done */
};

static bool check(void *arg)
{
	struct waiter *w = arg;
	w->checks++;
	return w->true_after > 0 && w->checks >= w->true_after;
}

static void done(void *arg, bool in_time)
{
	struct waiter *w = arg;
	w->dones++;
	w->in_time = in_time;
	w->done_at = evloop_clock_ms();
	cr_assert_not(poll_until_active(&w->poll), "the wait is over when done runs");
	if (w->restart) {
		w->restart = false;
		w->checks = 0;
		cr_assert_eq(poll_until_start(&w->poll, 0, 2, 1000), 0);
		return;
	}
	evloop_stop(w->loop);
}

static void setup(struct waiter *w)
{
	*w = (struct waiter){.loop = evloop_new()};
	cr_assert_not_null(w->loop);
	poll_until_init(&w->poll, w->loop, check, done, w);
	cr_assert_not(poll_until_active(&w->poll));
}

Test(poll_until, ends_in_time_when_the_condition_holds)
{
	struct waiter w;
	setup(&w);
	w.true_after = 3;
	cr_assert_eq(poll_until_start(&w.poll, 0, 2, 10000), 0);
	cr_assert(poll_until_active(&w.poll));
	cr_assert_eq(evloop_run(w.loop), 0);
	cr_assert_eq(w.dones, 1);
	cr_assert(w.in_time);
	cr_assert_eq(w.checks, 3, "no look after the condition held");
	evloop_free(w.loop);
}

Test(poll_until, ends_late_at_the_deadline)
{
	struct waiter w;
	setup(&w);
	uint64_t start = evloop_clock_ms();
	cr_assert_eq(poll_until_start(&w.poll, 0, 5, 40), 0);
	cr_assert_eq(evloop_run(w.loop), 0);
	cr_assert_eq(w.dones, 1);
	cr_assert_not(w.in_time);
	cr_assert_geq(w.done_at - start, 40, "not before the deadline");
	cr_assert_geq(w.checks, 2, "looked more than once meanwhile");
	evloop_free(w.loop);
}

static void stop_loop(struct evloop *loop, void *arg)
{
	(void)arg;
	evloop_stop(loop);
}

Test(poll_until, stop_cancels_and_done_never_runs)
{
	struct waiter w;
	setup(&w);
	cr_assert_eq(poll_until_start(&w.poll, 5, 5, 20), 0);
	poll_until_stop(&w.poll);
	cr_assert_not(poll_until_active(&w.poll));
	poll_until_stop(&w.poll); /* twice is harmless */
	struct evloop_timer later;
	evloop_timer_init(&later, stop_loop, NULL);
	cr_assert_eq(evloop_timer_start(w.loop, &later, 60), 0);
	cr_assert_eq(evloop_run(w.loop), 0);
	cr_assert_eq(w.dones, 0);
	cr_assert_eq(w.checks, 0);
	evloop_free(w.loop);
}

Test(poll_until, restarts_from_done)
{
	struct waiter w;
	setup(&w);
	w.true_after = 1;
	w.restart = true;
	cr_assert_eq(poll_until_start(&w.poll, 0, 2, 1000), 0);
	cr_assert_eq(evloop_run(w.loop), 0);
	cr_assert_eq(w.dones, 2, "once per wait");
	cr_assert(w.in_time);
	evloop_free(w.loop);
}

Test(poll_until, stop_before_start_is_harmless)
{
	struct poll_until p = {0};
	poll_until_stop(&p);
	cr_assert_not(poll_until_active(&p));
}
