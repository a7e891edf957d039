/* region_slot.c — the shard-slot state machine of region_slot.h. */
#include "sharding/region_slot.h"

#include <errno.h>

bool region_slot_hosted(const struct region_slot *s)
{
	return s->state == SLOT_LOCAL || s->state == SLOT_HANDING_OFF;
}

bool region_slot_handoff_ready(const struct region_slot *s)
{
	return s->state == SLOT_HANDING_OFF && s->acks >= s->acks_needed;
}

const char *region_slot_state_name(enum region_slot_state state)
{
	switch (state) {
	case SLOT_UNKNOWN:
		return "unknown";
	case SLOT_ASKED:
		return "asked";
	case SLOT_LOCAL:
		return "local";
	case SLOT_HANDING_OFF:
		return "handing_off";
	case SLOT_REMOTE:
		return "remote";
	case SLOT_MOVING:
		return "moving";
	case SLOT_SENDING_STATE:
		return "sending_state";
	}
	return "?";
}

static unsigned ask(struct region_slot *s, uint64_t now)
{
	s->state = SLOT_ASKED;
	s->since = now;
	return SLOT_DO_ASK;
}

/* A coordinator named the home. Any state takes it: the coordinator's word
 * is the allocation (a region ignores orders from any other coordinator,
 * see from_coordinator in region_coordinator.c). Counting acks starts
 * afresh: a handoff under way is over. */
static unsigned settle(struct region_slot *s, enum region_slot_state home)
{
	s->state = home;
	s->acks = 0;
	s->acks_needed = 0;
	return SLOT_DO_FLUSH;
}

/* The shard stops here: what arrives from now on waits for the new home. */
static unsigned moved_off(struct region_slot *s, uint64_t now)
{
	s->state = SLOT_MOVING;
	s->since = now;
	s->acks = 0;
	s->acks_needed = 0;
	return SLOT_DO_STOP;
}

/* Every ack is in (or the deadline passed): the shard leaves. Entity
 * states go to the new home first, with a deadline of their own; without
 * any, it stops at once. */
static unsigned hand_off(struct region_slot *s, const struct region_slot_timing *t, uint64_t now, bool carry_state)
{
	if (!carry_state)
		return moved_off(s, now);
	s->state = SLOT_SENDING_STATE;
	s->acks = 0;
	s->acks_needed = 0;
	s->deadline = now + t->handoff_timeout_ms;
	return SLOT_DO_SEND_STATE;
}

/* The region's retry timer: a request or a move that took too long. Only
 * states with a clock take it. */
static int tick(struct region_slot *s, const struct region_slot_timing *t, const struct region_slot_event *ev,
		unsigned *todo)
{
	uint64_t now = ev->now;
	switch (s->state) {
	case SLOT_ASKED:
		if (now - s->since >= t->retry_ms)
			*todo = ask(s, now);
		return 0;
	case SLOT_HANDING_OFF:
		/* A region never answered: go on without it. */
		if (now >= s->deadline)
			*todo = hand_off(s, t, now, ev->carry_state);
		return 0;
	case SLOT_SENDING_STATE:
		/* The new home never acknowledged it all: the states that did
		 * not arrive are lost, the shard must not stay frozen. */
		if (now >= s->deadline)
			*todo = moved_off(s, now);
		return 0;
	case SLOT_MOVING:
		/* The move was abandoned: ask where the shard lives. */
		if (now - s->since >= t->handoff_timeout_ms)
			*todo = ask(s, now);
		return 0;
	default:
		return -EPERM;
	}
}

int region_slot_step(struct region_slot *s, const struct region_slot_timing *t, const struct region_slot_event *ev,
		     unsigned *todo)
{
	*todo = 0;
	switch (ev->kind) {
	case SLOT_NEED_HOME:
		if (s->state != SLOT_UNKNOWN)
			return -EPERM; /* asked already, or the home is known or coming */
		*todo = ask(s, ev->now);
		return 0;
	case SLOT_REGISTERED:
		/* A shard with remembered entities gets a home without waiting
		 * for a message, so they run again; a request sent before the
		 * registration (or to an earlier coordinator) is sent again,
		 * its clock left running. */
		if (s->state == SLOT_UNKNOWN && ev->remembered) {
			*todo = ask(s, ev->now);
			return 0;
		}
		if (s->state == SLOT_ASKED) {
			*todo = SLOT_DO_ASK;
			return 0;
		}
		return -EPERM;
	case SLOT_HOME_HERE:
		*todo = settle(s, SLOT_LOCAL);
		return 0;
	case SLOT_HOME_THERE: {
		/* Named elsewhere while hosted here: another region's claim
		 * is newer (coordinator.h), and two must never serve the
		 * shard. This copy stops; what waits goes to the home. */
		bool hosted = region_slot_hosted(s);
		*todo = settle(s, SLOT_REMOTE) | (hosted ? SLOT_DO_STOP : 0);
		return 0;
	}
	case SLOT_HOME_LOST:
		if (s->state != SLOT_REMOTE)
			return -EPERM;
		/* Messages that waited for a connection to it need a home now;
		 * with none waiting, the next message asks. */
		if (s->buffered > 0)
			*todo = ask(s, ev->now);
		else
			s->state = SLOT_UNKNOWN;
		return 0;
	case SLOT_HOME_UNREACHABLE:
		if (s->state != SLOT_REMOTE)
			return -EPERM;
		s->state = SLOT_ASKED;
		s->since = ev->now; /* the tick asks after retry_ms */
		return 0;
	case SLOT_BEGIN_HANDOFF:
		/* The home itself is told by handoff; a region that hosts the
		 * shard keeps serving it, and one sending its state is done
		 * with it already. Others stop sending it anything. */
		if (region_slot_hosted(s) || s->state == SLOT_SENDING_STATE)
			return -EPERM;
		s->state = SLOT_MOVING;
		s->since = ev->now;
		return 0;
	case SLOT_HANDOFF:
		if (s->state == SLOT_SENDING_STATE)
			return -EPERM; /* under way: shard_stopped follows */
		if (!region_slot_hosted(s)) {
			*todo = SLOT_DO_REPORT_STOPPED; /* nothing here to stop */
			return 0;
		}
		s->state = SLOT_HANDING_OFF;
		s->acks_needed = ev->acks_needed;
		s->deadline = ev->now + t->handoff_timeout_ms;
		if (s->acks >= s->acks_needed)
			*todo = SLOT_DO_HAND_OFF;
		return 0;
	case SLOT_HANDOFF_ACK:
		/* Acks may come before the coordinator's handoff order: a
		 * hosted slot counts them. */
		if (!region_slot_hosted(s))
			return -EPERM;
		s->acks++;
		if (region_slot_handoff_ready(s))
			*todo = SLOT_DO_HAND_OFF;
		return 0;
	case SLOT_HANDED_OFF:
		if (s->state != SLOT_HANDING_OFF)
			return -EPERM;
		*todo = hand_off(s, t, ev->now, ev->carry_state);
		return 0;
	case SLOT_TICK:
		return tick(s, t, ev, todo);
	case SLOT_STATE_CHUNK:
		if (s->state != SLOT_MOVING)
			return -EPERM;
		s->since = ev->now;
		return 0;
	case SLOT_STATE_SENT:
		if (s->state != SLOT_SENDING_STATE)
			return -EPERM;
		*todo = moved_off(s, ev->now);
		return 0;
	case SLOT_FENCED:
		/* shard_stopped ends a handoff the coordinator may have under
		 * way (it ignores one otherwise); the answer to the request
		 * says where the shard lives — maybe here again, which claims
		 * it anew. */
		if (!region_slot_hosted(s))
			return -EPERM;
		s->acks = 0;
		s->acks_needed = 0;
		*todo = ask(s, ev->now) | SLOT_DO_STOP;
		return 0;
	}
	return -EINVAL;
}

/* ---- what holds a shard's messages back ---- */

enum region_slot_hold region_slot_store_hold(const struct region_slot *s, uint64_t written_upto)
{
	if (!region_slot_hosted(s))
		return SLOT_HOLD_NONE;
	if (s->claims_waiting > 0)
		return SLOT_HOLD_CLAIMING;
	if (s->loads > 0)
		return SLOT_HOLD_LOADING;
	if (s->load_after > written_upto)
		return SLOT_HOLD_COMMITS;
	return SLOT_HOLD_NONE;
}

enum region_slot_hold region_slot_hold(const struct region_slot *s, uint64_t written_upto)
{
	if (s->buffered > 0)
		return SLOT_HOLD_BUFFERED;
	if (region_slot_hand_off_waits(s))
		return SLOT_HOLD_IN_FLIGHT;
	return region_slot_store_hold(s, written_upto);
}

void region_slot_sent_away(struct region_slot *s) { s->in_flight++; }

bool region_slot_came_back(struct region_slot *s)
{
	if (s->in_flight == 0)
		return false;
	return --s->in_flight == 0;
}

bool region_slot_hand_off_waits(const struct region_slot *s)
{
	return s->in_flight > 0 && region_slot_handoff_ready(s);
}

void region_slot_buffered(struct region_slot *s) { s->buffered++; }

void region_slot_unbuffered(struct region_slot *s, uint32_t n) { s->buffered = n > s->buffered ? 0 : s->buffered - n; }

void region_slot_claim_sent(struct region_slot *s) { s->claims_waiting++; }

bool region_slot_claimed(struct region_slot *s)
{
	if (s->claims_waiting == 0)
		return false;
	return --s->claims_waiting == 0;
}

void region_slot_load_started(struct region_slot *s) { s->loads++; }

bool region_slot_loaded(struct region_slot *s)
{
	if (s->loads == 0)
		return false;
	return --s->loads == 0;
}

void region_slot_wait_for_commits(struct region_slot *s, uint64_t seq) { s->load_after = seq; }

bool region_slot_commits_done(struct region_slot *s, uint64_t written_upto)
{
	if (s->load_after == 0 || s->load_after > written_upto)
		return false;
	s->load_after = 0;
	return true;
}

void region_slot_loads_dropped(struct region_slot *s)
{
	s->loads = 0;
	s->load_after = 0;
}
