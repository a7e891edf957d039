/*
 * test_region_slot.c — the states a shard goes through in a region
 * (region_slot.h): every event in every state, the ones a state refuses
 * included, and the clocks of asking again, of a handoff's deadline, of
 * sending a shard's state and of an abandoned move.
 */
#include <errno.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include "sharding/region_slot.h"
#include "unit_helpers.h"

static const struct region_slot_timing timing = {.retry_ms = 1000, .handoff_timeout_ms = 5000};

static const enum region_slot_state all_states[] = {SLOT_UNKNOWN, SLOT_ASKED, SLOT_LOCAL,
						    SLOT_HANDING_OFF, SLOT_REMOTE, SLOT_MOVING,
						    SLOT_SENDING_STATE};

/* A slot in `state`, as the region would have it at time 100: asked or
 * moving since 100, a handoff waiting for 2 acks with 1 in, deadline 5100;
 * a state being sent, deadline 5100. */
static struct region_slot slot_in(enum region_slot_state state)
{
	struct region_slot s = {.state = state};
	if (state == SLOT_ASKED || state == SLOT_MOVING)
		s.since = 100;
	if (state == SLOT_HANDING_OFF) {
		s.acks = 1;
		s.acks_needed = 2;
		s.deadline = 5100;
	}
	if (state == SLOT_SENDING_STATE)
		s.deadline = 5100;
	return s;
}

/* Field by field: padding is not part of a slot. */
static bool same(const struct region_slot *a, const struct region_slot *b)
{
	return a->state == b->state && a->since == b->since && a->deadline == b->deadline && a->acks == b->acks &&
	       a->acks_needed == b->acks_needed && a->buffered == b->buffered &&
	       a->claims_waiting == b->claims_waiting && a->loads == b->loads && a->load_after == b->load_after;
}

static int step(struct region_slot *s, enum region_slot_event_kind kind, uint64_t now, unsigned *todo)
{
	struct region_slot_event ev = {.kind = kind, .now = now};
	return region_slot_step(s, &timing, &ev, todo);
}

/* The event is refused in `state`: -EPERM, the slot untouched, nothing to do. */
static void assert_refused(enum region_slot_state state, enum region_slot_event_kind kind, uint64_t now)
{
	struct region_slot s = slot_in(state), before = s;
	unsigned todo = 99;
	cr_assert_eq(step(&s, kind, now, &todo), -EPERM, "event %d in %s", kind, region_slot_state_name(state));
	cr_assert_eq(todo, 0u);
	cr_assert(same(&s, &before), "a refused event changed the slot in %s",
		     region_slot_state_name(state));
}

Test(region_slot, a_zeroed_slot_is_unknown_and_not_hosted)
{
	struct region_slot s = {0};
	cr_assert_eq(s.state, SLOT_UNKNOWN);
	cr_assert(!region_slot_hosted(&s));
	cr_assert(!region_slot_handoff_ready(&s));
}

Test(region_slot, hosted_means_local_or_handing_off)
{
	for (size_t k = 0; k < SN_ARRAY_LEN(all_states); k++) {
		struct region_slot s = slot_in(all_states[k]);
		bool want = all_states[k] == SLOT_LOCAL || all_states[k] == SLOT_HANDING_OFF;
		cr_assert_eq(region_slot_hosted(&s), want, "%s", region_slot_state_name(all_states[k]));
	}
}

Test(region_slot, need_home_asks_only_when_nobody_did)
{
	struct region_slot s = slot_in(SLOT_UNKNOWN);
	unsigned todo;
	cr_assert_eq(step(&s, SLOT_NEED_HOME, 700, &todo), 0);
	cr_assert_eq(s.state, SLOT_ASKED);
	cr_assert_eq(s.since, 700u);
	cr_assert_eq(todo, (unsigned)SLOT_DO_ASK);
	/* Asked already, hosted, or with a home known or coming: the message
	 * just waits (or the caller delivered it). */
	for (size_t k = 1; k < SN_ARRAY_LEN(all_states); k++)
		assert_refused(all_states[k], SLOT_NEED_HOME, 700);
}

Test(region_slot, registered_asks_again_for_what_was_asked_and_for_remembered_shards)
{
	unsigned todo;
	struct region_slot_event remembered = {.kind = SLOT_REGISTERED, .now = 800, .remembered = true};
	/* Unknown with remembered entities: asked at once. */
	struct region_slot s = slot_in(SLOT_UNKNOWN);
	cr_assert_eq(region_slot_step(&s, &timing, &remembered, &todo), 0);
	cr_assert_eq(s.state, SLOT_ASKED);
	cr_assert_eq(s.since, 800u);
	cr_assert_eq(todo, (unsigned)SLOT_DO_ASK);
	/* Unknown without: waits for a message. */
	assert_refused(SLOT_UNKNOWN, SLOT_REGISTERED, 800);
	/* Asked: the request goes again to the coordinator that now knows
	 * us, its clock left running. */
	for (int with = 0; with < 2; with++) {
		struct region_slot_event ev = {.kind = SLOT_REGISTERED, .now = 800, .remembered = with};
		s = slot_in(SLOT_ASKED);
		cr_assert_eq(region_slot_step(&s, &timing, &ev, &todo), 0);
		cr_assert_eq(s.state, SLOT_ASKED);
		cr_assert_eq(s.since, 100u, "the retry clock is not restarted");
		cr_assert_eq(todo, (unsigned)SLOT_DO_ASK);
	}
	/* Every other state has its home, or is being moved. */
	const enum region_slot_state others[] = {SLOT_LOCAL, SLOT_HANDING_OFF, SLOT_REMOTE, SLOT_MOVING};
	for (size_t k = 0; k < SN_ARRAY_LEN(others); k++) {
		assert_refused(others[k], SLOT_REGISTERED, 800);
		struct region_slot o = slot_in(others[k]), before = o;
		cr_assert_eq(region_slot_step(&o, &timing, &remembered, &todo), -EPERM);
		cr_assert(same(&o, &before));
	}
}

Test(region_slot, a_home_named_here_is_taken_in_every_state)
{
	for (size_t k = 0; k < SN_ARRAY_LEN(all_states); k++) {
		struct region_slot s = slot_in(all_states[k]);
		s.acks = 3; /* whatever was counted is forgotten */
		unsigned todo;
		cr_assert_eq(step(&s, SLOT_HOME_HERE, 900, &todo), 0, "%s", region_slot_state_name(all_states[k]));
		cr_assert_eq(s.state, SLOT_LOCAL);
		cr_assert_eq(s.acks, 0u);
		cr_assert_eq(s.acks_needed, 0u);
		cr_assert_eq(todo, (unsigned)SLOT_DO_FLUSH);
	}
}

Test(region_slot, a_home_named_elsewhere_is_taken_in_every_state_and_stops_a_hosted_copy)
{
	for (size_t k = 0; k < SN_ARRAY_LEN(all_states); k++) {
		struct region_slot s = slot_in(all_states[k]);
		unsigned todo;
		cr_assert_eq(step(&s, SLOT_HOME_THERE, 900, &todo), 0, "%s", region_slot_state_name(all_states[k]));
		cr_assert_eq(s.state, SLOT_REMOTE);
		cr_assert_eq(s.acks, 0u);
		cr_assert(!region_slot_handoff_ready(&s), "a handoff under way is over");
		/* A copy hosted here stops: another region's claim is newer. */
		bool hosted = all_states[k] == SLOT_LOCAL || all_states[k] == SLOT_HANDING_OFF;
		cr_assert_eq(todo, hosted ? (unsigned)(SLOT_DO_FLUSH | SLOT_DO_STOP) : (unsigned)SLOT_DO_FLUSH, "%s",
			     region_slot_state_name(all_states[k]));
	}
}

Test(region_slot, a_lost_home_makes_only_a_remote_slot_unknown)
{
	struct region_slot s = slot_in(SLOT_REMOTE);
	unsigned todo;
	cr_assert_eq(step(&s, SLOT_HOME_LOST, 900, &todo), 0);
	cr_assert_eq(s.state, SLOT_UNKNOWN);
	cr_assert_eq(todo, 0u, "asked for when the next message comes");
	const enum region_slot_state others[] = {SLOT_UNKNOWN, SLOT_ASKED, SLOT_LOCAL, SLOT_HANDING_OFF, SLOT_MOVING};
	for (size_t k = 0; k < SN_ARRAY_LEN(others); k++)
		assert_refused(others[k], SLOT_HOME_LOST, 900);
}

Test(region_slot, a_lost_home_with_messages_waiting_for_it_asks_at_once)
{
	/* They waited for a connection to the home that went: they need a
	 * home now, not when the next message comes. */
	struct region_slot s = slot_in(SLOT_REMOTE);
	s.buffered = 2;
	unsigned todo;
	cr_assert_eq(step(&s, SLOT_HOME_LOST, 900, &todo), 0);
	cr_assert_eq(s.state, SLOT_ASKED);
	cr_assert_eq(s.since, 900u);
	cr_assert_eq(todo, (unsigned)SLOT_DO_ASK);
	cr_assert_eq(s.buffered, 2u, "they keep waiting, in order");
}

Test(region_slot, an_unreachable_home_is_asked_for_again_after_retry_ms)
{
	/* A message could not be written to the home's node: it waits, and
	 * the coordinator, which names the same home until that node is
	 * downed, is asked again after retry_ms, not at once. */
	struct region_slot s = slot_in(SLOT_REMOTE);
	s.buffered = 1;
	unsigned todo = 99;
	cr_assert_eq(step(&s, SLOT_HOME_UNREACHABLE, 2000, &todo), 0);
	cr_assert_eq(s.state, SLOT_ASKED);
	cr_assert_eq(todo, 0u);
	cr_assert_eq(step(&s, SLOT_TICK, 2999, &todo), 0);
	cr_assert_eq(todo, 0u);
	cr_assert_eq(step(&s, SLOT_TICK, 3000, &todo), 0);
	cr_assert_eq(todo, (unsigned)SLOT_DO_ASK);
	/* The same home named again: what waits goes (as far as it can). */
	cr_assert_eq(step(&s, SLOT_HOME_THERE, 3001, &todo), 0);
	cr_assert_eq(todo, (unsigned)SLOT_DO_FLUSH);
	cr_assert_eq(s.state, SLOT_REMOTE);
	cr_assert_eq(s.buffered, 1u);
	for (size_t k = 0; k < SN_ARRAY_LEN(all_states); k++)
		if (all_states[k] != SLOT_REMOTE)
			assert_refused(all_states[k], SLOT_HOME_UNREACHABLE, 900);
}

Test(region_slot, messages_waiting_for_a_remote_homes_connection_hold_new_ones_back)
{
	/* Per sender order: a new message goes behind them. */
	struct region_slot s = slot_in(SLOT_REMOTE);
	cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_NONE);
	region_slot_buffered(&s);
	cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_BUFFERED);
	region_slot_unbuffered(&s, 1);
	cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_NONE);
}

Test(region_slot, begin_handoff_holds_messages_everywhere_but_at_the_home)
{
	const enum region_slot_state movable[] = {SLOT_UNKNOWN, SLOT_ASKED, SLOT_REMOTE, SLOT_MOVING};
	for (size_t k = 0; k < SN_ARRAY_LEN(movable); k++) {
		struct region_slot s = slot_in(movable[k]);
		unsigned todo;
		cr_assert_eq(step(&s, SLOT_BEGIN_HANDOFF, 1200, &todo), 0, "%s", region_slot_state_name(movable[k]));
		cr_assert_eq(s.state, SLOT_MOVING);
		cr_assert_eq(s.since, 1200u, "the move's clock starts (again)");
		cr_assert_eq(todo, 0u);
	}
	/* The home keeps serving until its own handoff. */
	assert_refused(SLOT_LOCAL, SLOT_BEGIN_HANDOFF, 1200);
	assert_refused(SLOT_HANDING_OFF, SLOT_BEGIN_HANDOFF, 1200);
	/* The home sending the state is done with the shard already. */
	assert_refused(SLOT_SENDING_STATE, SLOT_BEGIN_HANDOFF, 1200);
}

Test(region_slot, handoff_of_a_hosted_shard_waits_for_its_acks)
{
	struct region_slot s = slot_in(SLOT_LOCAL);
	struct region_slot_event ev = {.kind = SLOT_HANDOFF, .now = 2000, .acks_needed = 2};
	unsigned todo;
	cr_assert_eq(region_slot_step(&s, &timing, &ev, &todo), 0);
	cr_assert_eq(s.state, SLOT_HANDING_OFF);
	cr_assert_eq(s.acks_needed, 2u);
	cr_assert_eq(s.deadline, 7000u);
	cr_assert_eq(todo, 0u);
	cr_assert(region_slot_hosted(&s), "its entities still get their messages");
	/* Repeated while handing off: the new count and deadline hold. */
	ev = (struct region_slot_event){.kind = SLOT_HANDOFF, .now = 3000, .acks_needed = 3};
	cr_assert_eq(region_slot_step(&s, &timing, &ev, &todo), 0);
	cr_assert_eq(s.state, SLOT_HANDING_OFF);
	cr_assert_eq(s.acks_needed, 3u);
	cr_assert_eq(s.deadline, 8000u);
}

Test(region_slot, handoff_with_every_ack_already_in_goes_at_once)
{
	unsigned todo;
	struct region_slot s = slot_in(SLOT_LOCAL);
	/* Acks may come before the coordinator's order. */
	cr_assert_eq(step(&s, SLOT_HANDOFF_ACK, 10, &todo), 0);
	cr_assert_eq(step(&s, SLOT_HANDOFF_ACK, 11, &todo), 0);
	cr_assert_eq(todo, 0u, "no handoff yet");
	cr_assert_eq(s.state, SLOT_LOCAL);
	cr_assert_eq(s.acks, 2u);
	struct region_slot_event ev = {.kind = SLOT_HANDOFF, .now = 20, .acks_needed = 2};
	cr_assert_eq(region_slot_step(&s, &timing, &ev, &todo), 0);
	cr_assert_eq(s.state, SLOT_HANDING_OFF);
	cr_assert_eq(todo, (unsigned)SLOT_DO_HAND_OFF);
	cr_assert(region_slot_handoff_ready(&s));
	/* With no region to wait for (none registered but the home). */
	s = slot_in(SLOT_LOCAL);
	ev.acks_needed = 0;
	cr_assert_eq(region_slot_step(&s, &timing, &ev, &todo), 0);
	cr_assert_eq(todo, (unsigned)SLOT_DO_HAND_OFF);
}

Test(region_slot, handoff_of_a_shard_not_hosted_is_answered_stopped)
{
	const enum region_slot_state elsewhere[] = {SLOT_UNKNOWN, SLOT_ASKED, SLOT_REMOTE, SLOT_MOVING};
	for (size_t k = 0; k < SN_ARRAY_LEN(elsewhere); k++) {
		struct region_slot s = slot_in(elsewhere[k]), before = s;
		struct region_slot_event ev = {.kind = SLOT_HANDOFF, .now = 2000, .acks_needed = 2};
		unsigned todo;
		cr_assert_eq(region_slot_step(&s, &timing, &ev, &todo), 0, "%s", region_slot_state_name(elsewhere[k]));
		cr_assert_eq(todo, (unsigned)SLOT_DO_REPORT_STOPPED, "nothing here to stop");
		cr_assert(same(&s, &before));
	}
	/* Sending its state: under way, shard_stopped follows by itself. */
	struct region_slot s = slot_in(SLOT_SENDING_STATE), before = s;
	struct region_slot_event ev = {.kind = SLOT_HANDOFF, .now = 2000, .acks_needed = 2};
	unsigned todo = 9;
	cr_assert_eq(region_slot_step(&s, &timing, &ev, &todo), -EPERM);
	cr_assert_eq(todo, 0u);
	cr_assert(same(&s, &before));
}

Test(region_slot, acks_count_while_hosted_and_the_last_one_hands_off)
{
	struct region_slot s = slot_in(SLOT_HANDING_OFF); /* 1 of 2 */
	unsigned todo;
	cr_assert(!region_slot_handoff_ready(&s));
	cr_assert_eq(step(&s, SLOT_HANDOFF_ACK, 300, &todo), 0);
	cr_assert_eq(s.acks, 2u);
	cr_assert_eq(s.state, SLOT_HANDING_OFF, "still hosted until the buffer is flushed");
	cr_assert_eq(todo, (unsigned)SLOT_DO_HAND_OFF);
	cr_assert(region_slot_handoff_ready(&s));
	/* A late extra ack says it again: the region is still flushing. */
	cr_assert_eq(step(&s, SLOT_HANDOFF_ACK, 301, &todo), 0);
	cr_assert_eq(todo, (unsigned)SLOT_DO_HAND_OFF);
	/* Not hosted: an ack (a late one, after the deadline) is not counted. */
	const enum region_slot_state elsewhere[] = {SLOT_UNKNOWN, SLOT_ASKED, SLOT_REMOTE, SLOT_MOVING,
						    SLOT_SENDING_STATE};
	for (size_t k = 0; k < SN_ARRAY_LEN(elsewhere); k++)
		assert_refused(elsewhere[k], SLOT_HANDOFF_ACK, 300);
}

Test(region_slot, handed_off_stops_the_shard_and_holds_messages_for_the_new_home)
{
	struct region_slot s = slot_in(SLOT_HANDING_OFF);
	s.acks = 2;
	unsigned todo;
	cr_assert_eq(step(&s, SLOT_HANDED_OFF, 4000, &todo), 0);
	cr_assert_eq(s.state, SLOT_MOVING);
	cr_assert_eq(s.since, 4000u);
	cr_assert_eq(s.acks, 0u);
	cr_assert_eq(todo, (unsigned)SLOT_DO_STOP);
	cr_assert(!region_slot_hosted(&s));
	const enum region_slot_state others[] = {SLOT_UNKNOWN, SLOT_ASKED, SLOT_LOCAL, SLOT_REMOTE, SLOT_MOVING,
						 SLOT_SENDING_STATE};
	for (size_t k = 0; k < SN_ARRAY_LEN(others); k++)
		assert_refused(others[k], SLOT_HANDED_OFF, 4000);
}

Test(region_slot, handed_off_with_state_sends_it_before_stopping)
{
	struct region_slot s = slot_in(SLOT_HANDING_OFF);
	s.acks = 2;
	struct region_slot_event ev = {.kind = SLOT_HANDED_OFF, .now = 4000, .carry_state = true};
	unsigned todo;
	cr_assert_eq(region_slot_step(&s, &timing, &ev, &todo), 0);
	cr_assert_eq(s.state, SLOT_SENDING_STATE);
	cr_assert_eq(s.deadline, 9000u, "the states get a handoff_timeout_ms of their own");
	cr_assert_eq(s.acks, 0u);
	cr_assert_eq(todo, (unsigned)SLOT_DO_SEND_STATE, "not stopped yet: its states are read while sending");
	cr_assert(!region_slot_hosted(&s), "messages wait for the new home meanwhile");
	cr_assert(!region_slot_handoff_ready(&s));
	/* The last chunk is acknowledged: now the shard stops. */
	cr_assert_eq(step(&s, SLOT_STATE_SENT, 4500, &todo), 0);
	cr_assert_eq(s.state, SLOT_MOVING);
	cr_assert_eq(s.since, 4500u);
	cr_assert_eq(todo, (unsigned)SLOT_DO_STOP);
}

Test(region_slot, state_sent_is_taken_only_while_sending)
{
	for (size_t k = 0; k < SN_ARRAY_LEN(all_states); k++)
		if (all_states[k] != SLOT_SENDING_STATE)
			assert_refused(all_states[k], SLOT_STATE_SENT, 4000);
}

Test(region_slot, tick_past_the_sending_deadline_stops_the_shard_anyway)
{
	struct region_slot s = slot_in(SLOT_SENDING_STATE); /* deadline 5100 */
	unsigned todo;
	cr_assert_eq(step(&s, SLOT_TICK, 5099, &todo), 0);
	cr_assert_eq(todo, 0u);
	cr_assert_eq(s.state, SLOT_SENDING_STATE);
	cr_assert_eq(step(&s, SLOT_TICK, 5100, &todo), 0);
	cr_assert_eq(todo, (unsigned)SLOT_DO_STOP, "the new home never acknowledged: the shard must not stay frozen");
	cr_assert_eq(s.state, SLOT_MOVING);
	cr_assert_eq(s.since, 5100u);
}

Test(region_slot, tick_past_the_handoff_deadline_sends_the_state_if_there_is_one)
{
	struct region_slot s = slot_in(SLOT_HANDING_OFF); /* deadline 5100 */
	struct region_slot_event ev = {.kind = SLOT_TICK, .now = 5100, .carry_state = true};
	unsigned todo;
	cr_assert_eq(region_slot_step(&s, &timing, &ev, &todo), 0);
	cr_assert_eq(todo, (unsigned)SLOT_DO_SEND_STATE);
	cr_assert_eq(s.state, SLOT_SENDING_STATE);
	cr_assert_eq(s.deadline, 10100u);
}

Test(region_slot, a_state_chunk_keeps_a_move_alive)
{
	struct region_slot s = slot_in(SLOT_MOVING); /* since 100 */
	unsigned todo;
	cr_assert_eq(step(&s, SLOT_STATE_CHUNK, 5000, &todo), 0);
	cr_assert_eq(todo, 0u);
	cr_assert_eq(s.state, SLOT_MOVING);
	cr_assert_eq(s.since, 5000u, "the move's clock starts again");
	cr_assert_eq(step(&s, SLOT_TICK, 5100, &todo), 0);
	cr_assert_eq(todo, 0u, "not abandoned: a chunk came 100 ms ago");
	for (size_t k = 0; k < SN_ARRAY_LEN(all_states); k++)
		if (all_states[k] != SLOT_MOVING)
			assert_refused(all_states[k], SLOT_STATE_CHUNK, 4000);
}

Test(region_slot, tick_asks_again_after_retry_ms)
{
	struct region_slot s = slot_in(SLOT_ASKED); /* since 100 */
	unsigned todo;
	cr_assert_eq(step(&s, SLOT_TICK, 1099, &todo), 0);
	cr_assert_eq(todo, 0u, "not yet");
	cr_assert_eq(s.since, 100u);
	cr_assert_eq(step(&s, SLOT_TICK, 1100, &todo), 0);
	cr_assert_eq(todo, (unsigned)SLOT_DO_ASK);
	cr_assert_eq(s.state, SLOT_ASKED);
	cr_assert_eq(s.since, 1100u, "the clock restarts with the new request");
}

Test(region_slot, tick_past_the_deadline_hands_off_without_the_missing_acks)
{
	struct region_slot s = slot_in(SLOT_HANDING_OFF); /* deadline 5100 */
	unsigned todo;
	cr_assert_eq(step(&s, SLOT_TICK, 5099, &todo), 0);
	cr_assert_eq(todo, 0u);
	cr_assert_eq(s.state, SLOT_HANDING_OFF);
	cr_assert_eq(step(&s, SLOT_TICK, 5100, &todo), 0);
	cr_assert_eq(todo, (unsigned)SLOT_DO_STOP, "a region never answered: go on without it");
	cr_assert_eq(s.state, SLOT_MOVING);
	cr_assert_eq(s.since, 5100u);
}

Test(region_slot, tick_asks_where_an_abandoned_move_went)
{
	struct region_slot s = slot_in(SLOT_MOVING); /* since 100 */
	unsigned todo;
	cr_assert_eq(step(&s, SLOT_TICK, 5099, &todo), 0);
	cr_assert_eq(todo, 0u);
	cr_assert_eq(s.state, SLOT_MOVING);
	cr_assert_eq(step(&s, SLOT_TICK, 5100, &todo), 0);
	cr_assert_eq(todo, (unsigned)SLOT_DO_ASK);
	cr_assert_eq(s.state, SLOT_ASKED);
	cr_assert_eq(s.since, 5100u);
}

Test(region_slot, tick_leaves_states_without_a_clock_alone)
{
	assert_refused(SLOT_UNKNOWN, SLOT_TICK, UINT64_MAX / 2);
	assert_refused(SLOT_LOCAL, SLOT_TICK, UINT64_MAX / 2);
	assert_refused(SLOT_REMOTE, SLOT_TICK, UINT64_MAX / 2);
}

Test(region_slot, an_unknown_event_is_refused_with_einval)
{
	for (size_t k = 0; k < SN_ARRAY_LEN(all_states); k++) {
		struct region_slot s = slot_in(all_states[k]), before = s;
		struct region_slot_event ev = {.kind = (enum region_slot_event_kind)99, .now = 1};
		unsigned todo = 7;
		cr_assert_eq(region_slot_step(&s, &timing, &ev, &todo), -EINVAL);
		cr_assert_eq(todo, 0u);
		cr_assert(same(&s, &before));
	}
}

Test(region_slot, a_shard_moves_here_and_away_again)
{
	/* The life of a shard that comes to this region and is rebalanced off. */
	struct region_slot s = {0};
	unsigned todo;
	cr_assert_eq(step(&s, SLOT_NEED_HOME, 0, &todo), 0);
	cr_assert_eq(todo, (unsigned)SLOT_DO_ASK);
	cr_assert_eq(step(&s, SLOT_HOME_HERE, 5, &todo), 0);
	cr_assert_eq(todo, (unsigned)SLOT_DO_FLUSH);
	struct region_slot_event order = {.kind = SLOT_HANDOFF, .now = 10, .acks_needed = 1};
	cr_assert_eq(region_slot_step(&s, &timing, &order, &todo), 0);
	cr_assert_eq(todo, 0u);
	cr_assert_eq(step(&s, SLOT_HANDOFF_ACK, 12, &todo), 0);
	cr_assert_eq(todo, (unsigned)SLOT_DO_HAND_OFF);
	cr_assert_eq(step(&s, SLOT_HANDED_OFF, 13, &todo), 0);
	cr_assert_eq(todo, (unsigned)SLOT_DO_STOP);
	cr_assert_eq(step(&s, SLOT_HOME_THERE, 20, &todo), 0);
	cr_assert_eq(todo, (unsigned)SLOT_DO_FLUSH);
	cr_assert_eq(s.state, SLOT_REMOTE);
	cr_assert_eq(step(&s, SLOT_HOME_LOST, 30, &todo), 0);
	cr_assert_eq(s.state, SLOT_UNKNOWN);
}

Test(region_slot, state_names)
{
	cr_assert_str_eq(region_slot_state_name(SLOT_UNKNOWN), "unknown");
	cr_assert_str_eq(region_slot_state_name(SLOT_ASKED), "asked");
	cr_assert_str_eq(region_slot_state_name(SLOT_LOCAL), "local");
	cr_assert_str_eq(region_slot_state_name(SLOT_HANDING_OFF), "handing_off");
	cr_assert_str_eq(region_slot_state_name(SLOT_REMOTE), "remote");
	cr_assert_str_eq(region_slot_state_name(SLOT_MOVING), "moving");
	cr_assert_str_eq(region_slot_state_name(SLOT_SENDING_STATE), "sending_state");
	cr_assert_str_eq(region_slot_state_name((enum region_slot_state)42), "?");
}

Test(region_slot, fenced_stops_a_hosted_shard_and_asks_where_it_lives)
{
	const enum region_slot_state hosted[] = {SLOT_LOCAL, SLOT_HANDING_OFF};
	for (size_t k = 0; k < SN_ARRAY_LEN(hosted); k++) {
		struct region_slot s = slot_in(hosted[k]);
		unsigned todo;
		cr_assert_eq(step(&s, SLOT_FENCED, 700, &todo), 0);
		cr_assert_eq(todo, (unsigned)(SLOT_DO_ASK | SLOT_DO_STOP), "%s", region_slot_state_name(hosted[k]));
		cr_assert_eq(s.state, SLOT_ASKED);
		cr_assert_eq(s.since, 700u, "asking again after retry_ms from now");
		cr_assert_eq(s.acks, 0u, "a handoff under way is over here");
		cr_assert_eq(s.acks_needed, 0u);
		cr_assert(!region_slot_hosted(&s));
	}
}

Test(region_slot, fenced_is_taken_only_while_hosted)
{
	for (size_t k = 0; k < SN_ARRAY_LEN(all_states); k++)
		if (all_states[k] != SLOT_LOCAL && all_states[k] != SLOT_HANDING_OFF)
			assert_refused(all_states[k], SLOT_FENCED, 4000);
}

/* ---- what holds a shard's messages back ---- */

Test(region_slot, nothing_holds_a_fresh_slot)
{
	for (size_t i = 0; i < SN_ARRAY_LEN(all_states); i++) {
		struct region_slot s = slot_in(all_states[i]);
		cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_NONE, "%s", region_slot_state_name(all_states[i]));
	}
}

Test(region_slot, a_buffered_message_holds_the_next_in_every_state)
{
	for (size_t i = 0; i < SN_ARRAY_LEN(all_states); i++) {
		struct region_slot s = slot_in(all_states[i]);
		region_slot_buffered(&s);
		region_slot_buffered(&s);
		cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_BUFFERED);
		region_slot_unbuffered(&s, 1);
		cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_BUFFERED);
		region_slot_unbuffered(&s, 1);
		cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_NONE);
		region_slot_unbuffered(&s, 5); /* never below zero */
		cr_assert_eq(s.buffered, 0u);
	}
}

/* The store's holds count only while the shard is hosted here: a shard
 * not hosted is held by its state, and its loads are dropped. */
Test(region_slot, the_stores_holds_apply_only_while_hosted)
{
	for (size_t i = 0; i < SN_ARRAY_LEN(all_states); i++) {
		struct region_slot s = slot_in(all_states[i]);
		region_slot_claim_sent(&s);
		enum region_slot_hold want = region_slot_hosted(&s) ? SLOT_HOLD_CLAIMING : SLOT_HOLD_NONE;
		cr_assert_eq(region_slot_hold(&s, 0), want, "%s", region_slot_state_name(all_states[i]));
		cr_assert_eq(region_slot_store_hold(&s, 0), want);
	}
}

Test(region_slot, a_claim_holds_until_the_last_one_commits)
{
	struct region_slot s = slot_in(SLOT_LOCAL);
	region_slot_claim_sent(&s);
	region_slot_claim_sent(&s);
	cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_CLAIMING);
	cr_assert_not(region_slot_claimed(&s), "one claim is still out");
	cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_CLAIMING);
	cr_assert(region_slot_claimed(&s), "the last one: what waited goes on");
	cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_NONE);
	cr_assert_not(region_slot_claimed(&s), "a claim never sent counts for nothing");
	cr_assert_eq(s.claims_waiting, 0u);
}

Test(region_slot, a_claim_holds_before_a_load_and_a_load_before_commits)
{
	struct region_slot s = slot_in(SLOT_HANDING_OFF);
	region_slot_wait_for_commits(&s, 7);
	region_slot_load_started(&s);
	region_slot_claim_sent(&s);
	cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_CLAIMING);
	cr_assert(region_slot_claimed(&s));
	cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_LOADING);
	cr_assert(region_slot_loaded(&s));
	cr_assert_eq(region_slot_hold(&s, 6), SLOT_HOLD_COMMITS);
	cr_assert_eq(region_slot_hold(&s, 7), SLOT_HOLD_NONE, "commits up to 7 are what it waited for");
	region_slot_buffered(&s);
	cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_BUFFERED, "the buffer first: order holds");
	cr_assert_eq(region_slot_store_hold(&s, 0), SLOT_HOLD_COMMITS, "a flushed message is the buffer's head");
}

Test(region_slot, a_hand_off_with_every_ack_waits_for_messages_at_the_processes)
{
	struct region_slot s = slot_in(SLOT_LOCAL);
	region_slot_sent_away(&s);
	region_slot_sent_away(&s);
	cr_assert_not(region_slot_hand_off_waits(&s), "not handing off: messages go on to the entities");
	cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_NONE);
	s.state = SLOT_HANDING_OFF;
	s.acks_needed = 2;
	s.acks = 1;
	cr_assert_not(region_slot_hand_off_waits(&s), "acks still missing: messages still go to the entities");
	s.acks = 2;
	cr_assert(region_slot_hand_off_waits(&s));
	cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_IN_FLIGHT);
	region_slot_buffered(&s);
	cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_BUFFERED, "the buffer first: order holds");
	region_slot_unbuffered(&s, 1);
	cr_assert_not(region_slot_came_back(&s), "one is still out");
	cr_assert(region_slot_came_back(&s), "the last came back");
	cr_assert_not(region_slot_hand_off_waits(&s));
	cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_NONE);
	cr_assert_not(region_slot_came_back(&s), "none out: nothing counts");
	cr_assert_eq(s.in_flight, 0);
}

Test(region_slot, loads_hold_until_none_is_left)
{
	struct region_slot s = slot_in(SLOT_LOCAL);
	region_slot_load_started(&s);
	region_slot_load_started(&s);
	cr_assert_not(region_slot_loaded(&s));
	cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_LOADING);
	cr_assert(region_slot_loaded(&s));
	cr_assert_eq(region_slot_hold(&s, 0), SLOT_HOLD_NONE);
	cr_assert_not(region_slot_loaded(&s), "an answer to a load dropped since counts for nothing");
	cr_assert_eq(s.loads, 0u);
}

Test(region_slot, a_wait_for_commits_ends_when_they_are_reported)
{
	struct region_slot s = slot_in(SLOT_LOCAL);
	cr_assert_not(region_slot_commits_done(&s, 100), "nothing waited");
	region_slot_wait_for_commits(&s, 10);
	cr_assert_not(region_slot_commits_done(&s, 9));
	cr_assert_eq(s.load_after, 10u);
	cr_assert(region_slot_commits_done(&s, 10));
	cr_assert_eq(s.load_after, 0u, "the wait is over, and said so once");
	cr_assert_not(region_slot_commits_done(&s, 11));
}

Test(region_slot, a_shard_that_leaves_forgets_its_loads_not_its_claims)
{
	struct region_slot s = slot_in(SLOT_LOCAL);
	region_slot_load_started(&s);
	region_slot_wait_for_commits(&s, 3);
	region_slot_claim_sent(&s);
	region_slot_loads_dropped(&s);
	cr_assert_eq(s.loads, 0u);
	cr_assert_eq(s.load_after, 0u);
	cr_assert_eq(s.claims_waiting, 1u, "its commit still comes");
}
