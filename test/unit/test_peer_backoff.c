/*
 * test_peer_backoff.c — peers this node could not reach: the first
 * failure is the one worth a log line, attempts back off from 100 ms,
 * doubling to 2 s, dropped messages are counted, and an answer forgets it.
 */
#include <stdint.h>
#include <stdio.h>

#include <criterion/criterion.h>

#include "protocol/peer_backoff.h"
#include "unit_helpers.h"

Test(peer_backoff, delays_double_up_to_the_cap)
{
	static const uint32_t want[] = {100, 100, 200, 400, 800, 1600, 2000, 2000};
	for (uint32_t f = 0; f < SN_ARRAY_LEN(want); f++)
		cr_assert_eq(peer_backoff_delay_ms(f), want[f], "after %u failures", f);
	cr_assert_eq(peer_backoff_delay_ms(UINT32_MAX), PEER_BACKOFF_MAX_MS);
}

Test(peer_backoff, a_failing_peer_waits_its_turn)
{
	struct peer_backoff b = {0};
	cr_assert(peer_backoff_may_try(&b, "a@h", 0), "a peer never tried may be");
	cr_assert_eq(peer_backoff_failed(&b, "a@h", 1000), 1, "the first failure");
	cr_assert(!peer_backoff_may_try(&b, "a@h", 1099));
	cr_assert(peer_backoff_may_try(&b, "a@h", 1100));
	cr_assert(peer_backoff_may_try(&b, "b@h", 1000), "other peers are not held back");
	cr_assert_eq(peer_backoff_failed(&b, "a@h", 1100), 2);
	cr_assert(!peer_backoff_may_try(&b, "a@h", 1299));
	cr_assert(peer_backoff_may_try(&b, "a@h", 1300));
	for (int k = 0; k < 20; k++)
		peer_backoff_failed(&b, "a@h", 5000);
	cr_assert(!peer_backoff_may_try(&b, "a@h", 6999), "capped at 2 s, not more");
	cr_assert(peer_backoff_may_try(&b, "a@h", 7000));
	peer_backoff_free(&b);
}

Test(peer_backoff, an_answer_forgets_the_failures_and_says_what_was_lost)
{
	struct peer_backoff b = {0};
	peer_backoff_dropped(&b, "a@h", 5);
	struct peer_failing was;
	peer_backoff_reached(&b, "a@h", &was);
	cr_assert_eq(was.failures, 0, "drops count only for a failing peer");
	cr_assert_eq(was.dropped, 0);
	peer_backoff_failed(&b, "a@h", 10);
	peer_backoff_failed(&b, "b@h", 10);
	peer_backoff_failed(&b, "a@h", 200);
	peer_backoff_dropped(&b, "a@h", 3);
	peer_backoff_dropped(&b, "a@h", 4);
	peer_backoff_reached(&b, "a@h", &was);
	cr_assert_eq(was.failures, 2);
	cr_assert_eq(was.dropped, 7);
	cr_assert(peer_backoff_may_try(&b, "a@h", 201), "forgotten: no wait");
	cr_assert(!peer_backoff_may_try(&b, "b@h", 50), "the others stay");
	cr_assert_eq(peer_backoff_failed(&b, "a@h", 300), 1, "failing again is a first failure again");
	peer_backoff_reached(&b, "b@h", NULL);
	cr_assert_eq(b.n, 1);
	peer_backoff_free(&b);
	cr_assert_eq(b.n, 0);
}

Test(peer_backoff, many_peers)
{
	struct peer_backoff b = {0};
	char name[32];
	for (int k = 0; k < 100; k++) {
		snprintf(name, sizeof name, "n%d@h", k);
		cr_assert_eq(peer_backoff_failed(&b, name, (uint64_t)k), 1);
	}
	for (int k = 0; k < 100; k += 2) {
		snprintf(name, sizeof name, "n%d@h", k);
		peer_backoff_reached(&b, name, NULL);
	}
	cr_assert_eq(b.n, 50);
	for (int k = 1; k < 100; k += 2) {
		snprintf(name, sizeof name, "n%d@h", k);
		cr_assert(!peer_backoff_may_try(&b, name, (uint64_t)k));
	}
	peer_backoff_free(&b);
}

Test(peer_backoff, a_warning_is_due_once_after_failing_long_enough)
{
	struct peer_backoff b = {0};
	cr_assert(!peer_backoff_warn_due(&b, "a@h", 0, 5000), "not failing");
	cr_assert_eq(peer_backoff_failed(&b, "a@h", 1000), 1u);
	cr_assert(!peer_backoff_warn_due(&b, "a@h", 1000, 5000));
	cr_assert_eq(peer_backoff_failed(&b, "a@h", 3000), 2u);
	cr_assert(!peer_backoff_warn_due(&b, "a@h", 5999, 5000), "4999 ms after the first failure");
	cr_assert(peer_backoff_warn_due(&b, "a@h", 6000, 5000));
	cr_assert(!peer_backoff_warn_due(&b, "a@h", 9000, 5000), "once");
	/* reached, then failing again: a new run of failures */
	peer_backoff_reached(&b, "a@h", NULL);
	cr_assert_eq(peer_backoff_failed(&b, "a@h", 20000), 1u);
	cr_assert(!peer_backoff_warn_due(&b, "a@h", 24999, 5000));
	cr_assert(peer_backoff_warn_due(&b, "a@h", 25000, 5000));
	peer_backoff_free(&b);
}
