/*
 * test_remote_mailbox.c — one message in flight per entity whose handle
 * runs elsewhere, the rest queued in order (remote_mailbox.h): every
 * transition, the refused ones included, and a long run checked against
 * a plain model.
 */
#include <stdint.h>

#include <criterion/criterion.h>

#include "hosting/remote_mailbox.h"
#include "unit_helpers.h"

struct msg {
	struct remote_mailbox_item item; /* first: the test casts back */
	int n;
};

static struct msg *msg_of(struct remote_mailbox_item *it) { return (struct msg *)it; }

Test(remote_mailbox, the_first_message_goes_at_once_numbered_one)
{
	struct remote_mailbox mb = {0};
	struct msg a = {.n = 1};
	cr_assert(remote_mailbox_offer(&mb, &a.item));
	cr_assert_eq(a.item.seq, 1u);
	cr_assert(remote_mailbox_busy(&mb));
	cr_assert_eq(mb.queued, 0u);
}

Test(remote_mailbox, later_messages_wait_in_order_and_go_one_per_completion)
{
	struct remote_mailbox mb = {0};
	struct msg m[4];
	for (int i = 0; i < 4; i++) {
		m[i] = (struct msg){.n = i};
		cr_assert_eq(remote_mailbox_offer(&mb, &m[i].item), i == 0);
	}
	cr_assert_eq(mb.queued, 3u);
	struct remote_mailbox_item *next;
	for (int i = 0; i < 4; i++) {
		struct remote_mailbox_item *done = remote_mailbox_complete(&mb, (uint64_t)i + 1, &next);
		cr_assert_eq(done, &m[i].item, "completion %d", i);
		if (i < 3) {
			cr_assert_eq(next, &m[i + 1].item);
			cr_assert_eq(next->seq, (uint64_t)i + 2, "numbered as it goes");
		} else {
			cr_assert_null(next);
		}
	}
	cr_assert_not(remote_mailbox_busy(&mb));
	/* Empty again: the next message goes at once, numbered on. */
	struct msg e = {.n = 9};
	cr_assert(remote_mailbox_offer(&mb, &e.item));
	cr_assert_eq(e.item.seq, 5u);
}

Test(remote_mailbox, a_completion_of_another_number_changes_nothing)
{
	struct remote_mailbox mb = {0};
	struct msg a = {.n = 1}, b = {.n = 2};
	remote_mailbox_offer(&mb, &a.item);
	remote_mailbox_offer(&mb, &b.item);
	struct remote_mailbox_item *next = &a.item;
	uint64_t wrong[] = {0, 2, 3, UINT64_MAX};
	for (size_t i = 0; i < SN_ARRAY_LEN(wrong); i++) {
		cr_assert_null(remote_mailbox_complete(&mb, wrong[i], &next), "seq %llu", (unsigned long long)wrong[i]);
		cr_assert_null(next);
		cr_assert_eq(mb.in_flight, &a.item);
		cr_assert_eq(mb.queued, 1u);
	}
	/* Nothing in flight: every completion is refused. */
	struct remote_mailbox empty = {0};
	cr_assert_null(remote_mailbox_complete(&empty, 1, &next));
	cr_assert_null(next);
}

Test(remote_mailbox, a_crash_gives_back_the_message_in_flight_and_the_next_goes)
{
	struct remote_mailbox mb = {0};
	struct msg a = {.n = 1}, b = {.n = 2};
	remote_mailbox_offer(&mb, &a.item);
	remote_mailbox_offer(&mb, &b.item);
	struct remote_mailbox_item *next;
	cr_assert_eq(remote_mailbox_fail(&mb, &next), &a.item);
	cr_assert_eq(next, &b.item);
	cr_assert_eq(b.item.seq, 2u);
	/* The late completion of the crashed one is refused. */
	cr_assert_null(remote_mailbox_complete(&mb, 1, &next));
	cr_assert_eq(remote_mailbox_fail(&mb, &next), &b.item);
	cr_assert_null(next);
	cr_assert_null(remote_mailbox_fail(&mb, &next), "nothing in flight");
	cr_assert_null(next);
}

Test(remote_mailbox, drain_gives_everything_back_in_flight_first)
{
	struct remote_mailbox mb = {0};
	struct msg m[3];
	for (int i = 0; i < 3; i++) {
		m[i] = (struct msg){.n = i};
		remote_mailbox_offer(&mb, &m[i].item);
	}
	struct remote_mailbox_item *all = remote_mailbox_drain(&mb);
	int n = 0;
	for (struct remote_mailbox_item *it = all; it; it = it->next, n++)
		cr_assert_eq(msg_of(it)->n, n);
	cr_assert_eq(n, 3);
	cr_assert_not(remote_mailbox_busy(&mb));
	cr_assert_eq(mb.queued, 0u);
	cr_assert_null(remote_mailbox_drain(&mb));
	struct msg e = {.n = 7};
	cr_assert(remote_mailbox_offer(&mb, &e.item));
	cr_assert_eq(e.item.seq, 2u, "numbering goes on: a late completion of 1 cannot match");
}

/* A long random run against a model: a FIFO of message numbers, the head
 * in flight. Every completion, right or wrong, and every crash. */
Test(remote_mailbox, a_long_run_agrees_with_a_plain_queue)
{
	enum { N = 4000 };
	static struct msg m[N];
	int model[N];
	size_t mh = 0, mt = 0; /* model[mh..mt): in flight first */
	struct remote_mailbox mb = {0};
	uint32_t rng = 12345;
	int offered = 0;
	uint64_t seq_in_flight = 0;
	for (int step = 0; step < 3 * N; step++) {
		rng = rng * 1103515245u + 12345u;
		unsigned op = (rng >> 16) % 4;
		struct remote_mailbox_item *next = NULL, *done;
		if (op <= 1 && offered < N) {
			m[offered] = (struct msg){.n = offered};
			bool now = remote_mailbox_offer(&mb, &m[offered].item);
			cr_assert_eq(now, mh == mt);
			if (now)
				seq_in_flight = m[offered].item.seq;
			model[mt++] = offered++;
		} else if (op == 2) {
			uint64_t seq = (rng & 0x100) ? seq_in_flight : seq_in_flight + 1;
			done = remote_mailbox_complete(&mb, seq, &next);
			if (mh == mt || seq != seq_in_flight) {
				cr_assert_null(done);
				continue;
			}
			cr_assert_eq(msg_of(done)->n, model[mh++]);
			if (next)
				seq_in_flight = next->seq;
			cr_assert_eq(next != NULL, mh != mt);
		} else {
			done = remote_mailbox_fail(&mb, &next);
			if (mh == mt) {
				cr_assert_null(done);
				continue;
			}
			cr_assert_eq(msg_of(done)->n, model[mh++]);
			if (next)
				seq_in_flight = next->seq;
		}
		cr_assert_eq(mb.queued, mh == mt ? 0u : (uint32_t)(mt - mh - 1));
	}
}
