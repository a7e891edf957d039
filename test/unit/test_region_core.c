/*
 * test_region_core.c — regions, coordinators and dist nodes together, in
 * one process (harness.h), with store doubles that hold back or fail what
 * a test says (store_double.h): each condition that holds a shard's
 * messages back, a handoff with messages buffered and state carried, a load
 * that fails, a fenced write, a coordinator that moves. In milliseconds,
 * without a BEAM; common_test covers the same with real OTP nodes.
 */
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "unit_helpers.h"

#define WAIT_MS 5000

/* ---- helpers ---- */

static long value_of(struct harness *h, long tag)
{
	const struct harness_reply *r = harness_await_reply(h, tag, WAIT_MS);
	cr_assert(r->is_int, "call %ld answered %s, not an integer", tag, r->text);
	return r->value;
}

static void expect_error(struct harness *h, long tag, const char *reason)
{
	const struct harness_reply *r = harness_await_reply(h, tag, WAIT_MS);
	char want[64];
	snprintf(want, sizeof want, "{error, %s}", reason);
	cr_assert_str_eq(r->text, want, "call %ld answered %s, not %s", tag, r->text, want);
}

/* Nothing answers `tag` while the loop turns for `ms`. */
static void expect_no_reply(struct harness *h, long tag, uint32_t ms)
{
	harness_run_for(h, ms);
	const struct harness_reply *r = harness_reply(h, tag);
	cr_assert_null(r, "call %ld answered %s while it should wait", tag, r ? r->text : "");
}

/* Two ids other than `id` in id's shard. */
static void same_shard(const struct harness *h, long id, long out[2])
{
	uint32_t shard = harness_shard_of(h, id);
	size_t n = 0;
	for (long k = id + 1; n < 2; k++)
		if (harness_shard_of(h, k) == shard)
			out[n++] = k;
}

static bool counts_held_loads(struct harness *h, void *arg)
{
	struct store_double_counts c;
	store_double_counts(h->m[0].store, &c);
	return c.held_loads >= *(const uint32_t *)arg;
}

static bool counts_held_claims(struct harness *h, void *arg)
{
	(void)arg;
	struct store_double_counts c;
	store_double_counts(h->m[0].store, &c);
	return c.held_claims >= 1;
}

/* ---- without a store ---- */

Test(region_core, a_call_reaches_its_entity_and_a_tell_is_answered)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 1, .shards = 10});
	cr_assert_eq(value_of(&h, harness_call(&h, 0, 1, "incr")), 1);
	cr_assert_eq(value_of(&h, harness_call(&h, 0, 1, "incr")), 2);
	harness_tell(&h, 0, 1, "incr");
	cr_assert_eq(value_of(&h, -1), 3); /* {counter, 1, 3} */
	harness_stop(&h);
}

/* Every message a region sends leaves through its outlet (cfg.out): each
 * call is answered once, by the region whose entity handled it, straight
 * to the caller; a call for a shard homed on the other member is forwarded
 * there over the connection that is up. */
Test(region_core, every_message_a_region_sends_leaves_through_its_outlet)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 2, .shards = 10});
	enum { CALLS = 40 };
	for (long id = 1; id <= CALLS; id++)
		cr_assert_eq(value_of(&h, harness_call(&h, 1, id, "incr")), 1);
	struct region_stats home = harness_stats(&h, 0), entry = harness_stats(&h, 1);
	cr_assert_eq(home.delivered + entry.delivered, CALLS);
	cr_assert_gt(home.delivered, 0, "no shard of 10 homed on member 0");
	cr_assert_eq(h.m[0].sends.reply_to, home.delivered);
	cr_assert_eq(h.m[1].sends.reply_to, entry.delivered);
	cr_assert_eq(entry.forwarded, home.delivered);
	/* Each forward went through the outlet's send_connected (one refused,
	 * a connection not up, would be sent again later). */
	cr_assert_geq(h.m[1].sends.send_connected, entry.forwarded);
	/* A tell's {counter, Id, Reply} is a plain send of the region holding
	 * the entity (the other one may ask its coordinator for the home,
	 * through its own outlet). */
	uint64_t sent_before[2] = {h.m[0].sends.send, h.m[1].sends.send};
	uint64_t delivered_before[2] = {home.delivered, entry.delivered};
	harness_tell(&h, 0, 1, "incr");
	cr_assert_eq(value_of(&h, -1), 2);
	size_t holder = harness_stats(&h, 0).delivered > delivered_before[0] ? 0 : 1;
	cr_assert_eq(harness_stats(&h, holder).delivered, delivered_before[holder] + 1);
	cr_assert_geq(h.m[holder].sends.send, sent_before[holder] + 1, "the reply left the holder's outlet");
	harness_stop(&h);
}

static bool one_dead_letter(struct harness *h, void *arg)
{
	(void)arg;
	return h->m[0].sends.dead_letter == 1;
}

Test(region_core, a_tell_beyond_buffer_size_is_a_dead_letter_at_the_outlet)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 1, .shards = 10, .buffer_size = 2});
	cr_assert_eq(value_of(&h, harness_call(&h, 0, 1, "incr")), 1);
	h.m[0].may_deliver = false;
	uint64_t sent = h.m[0].sends.send;
	for (int k = 0; k < 3; k++)
		harness_tell(&h, 0, 1, "incr");
	/* Two wait; the third finds the buffers full and is dropped. */
	cr_assert(harness_run_until(&h, one_dead_letter, NULL, WAIT_MS), "the third tell is a dead letter");
	cr_assert_eq(harness_stats(&h, 0).buffered, 2);
	cr_assert_eq(harness_stats(&h, 0).dropped, 1, "counted in the region's drop log");
	cr_assert_eq(h.m[0].sends.send, sent, "nothing was answered for it");
	/* A call beyond them is answered {error, overloaded}: no dead letter. */
	expect_error(&h, harness_call(&h, 0, 1, "incr"), "overloaded");
	cr_assert_eq(h.m[0].sends.dead_letter, 1);
	h.m[0].may_deliver = true;
	region_resume(h.m[0].region);
	cr_assert_eq(value_of(&h, harness_call(&h, 0, 1, "get")), 3, "the two that waited, not the third");
	harness_stop(&h);
}

Test(region_core, without_the_lease_messages_wait_and_go_in_order_when_it_returns)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 1, .shards = 10});
	cr_assert_eq(value_of(&h, harness_call(&h, 0, 1, "incr")), 1);
	h.m[0].may_deliver = false;
	long t[3];
	for (int k = 0; k < 3; k++)
		t[k] = harness_call(&h, 0, 1, "incr");
	expect_no_reply(&h, t[0], 100);
	cr_assert_eq(harness_stats(&h, 0).buffered, 3);
	h.m[0].may_deliver = true;
	region_resume(h.m[0].region);
	for (int k = 0; k < 3; k++)
		cr_assert_eq(value_of(&h, t[k]), 2 + k);
	harness_stop(&h);
}

/* ---- the store's waits ---- */

Test(region_core, a_reply_waits_for_its_write_to_commit)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 1, .shards = 10, .store = HARNESS_OWN_STORES});
	struct store_double *d = h.m[0].store;
	cr_assert_eq(value_of(&h, harness_call(&h, 0, 1, "incr")), 1);
	store_double_knobs(d)->hold_commits = true;
	long t = harness_call(&h, 0, 1, "incr");
	expect_no_reply(&h, t, 100);
	store_double_knobs(d)->hold_commits = false;
	store_double_release(d);
	cr_assert_eq(value_of(&h, t), 2);
	ei_x_buff id;
	sn_x_new(&id);
	cr_assert_eq(ei_x_encode_long(&id, 1), 0);
	const char *state;
	size_t len = store_double_get(d, harness_shard_of(&h, 1), id.buff, (size_t)id.index, &state);
	cr_assert_gt(len, 1, "the acknowledged state is stored");
	long stored = 0;
	int i = 1;
	cr_assert_eq(ei_decode_long(state, &i, &stored), 0);
	cr_assert_eq(stored, 2);
	ei_x_free(&id);
	harness_stop(&h);
}

Test(region_core, a_load_holds_back_the_shards_messages_in_order)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 1, .shards = 10, .store = HARNESS_OWN_STORES});
	struct store_double *d = h.m[0].store;
	long others[2];
	same_shard(&h, 1, others);
	store_double_knobs(d)->hold_loads = true;
	long first = harness_call(&h, 0, 1, "incr");
	uint32_t one = 1;
	cr_assert(harness_run_until(&h, counts_held_loads, &one, WAIT_MS), "the entity's state is loaded first");
	/* Behind the load: the same entity, and another of its shard (the
	 * buffer's head holds it back even though it needs its own load). */
	long second = harness_call(&h, 0, 1, "incr");
	long other = harness_call(&h, 0, others[0], "incr");
	expect_no_reply(&h, first, 100);
	cr_assert_null(harness_reply(&h, second));
	cr_assert_null(harness_reply(&h, other));
	store_double_knobs(d)->hold_loads = false;
	store_double_release(d);
	cr_assert_eq(value_of(&h, first), 1);
	cr_assert_eq(value_of(&h, second), 2);
	cr_assert_eq(value_of(&h, other), 1);
	harness_stop(&h);
}

Test(region_core, a_load_waits_for_the_write_before_it)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 1, .shards = 10, .store = HARNESS_OWN_STORES});
	struct store_double *d = h.m[0].store;
	cr_assert_eq(value_of(&h, harness_call(&h, 0, 1, "incr")), 1);
	cr_assert_eq(value_of(&h, harness_call(&h, 0, 1, "incr")), 2);
	store_double_knobs(d)->hold_commits = true;
	/* delete stops the entity and queues the deletion; the next message
	 * must not load the state the deletion has not yet removed. */
	long del = harness_call(&h, 0, 1, "delete");
	long again = harness_call(&h, 0, 1, "incr");
	expect_no_reply(&h, again, 100);
	store_double_knobs(d)->hold_commits = false;
	store_double_release(d);
	const struct harness_reply *r = harness_await_reply(&h, del, WAIT_MS);
	cr_assert_str_eq(r->text, "ok");
	cr_assert_eq(value_of(&h, again), 1, "a fresh entity, not the deleted state");
	harness_stop(&h);
}

Test(region_core, a_load_that_fails_answers_store_unavailable_and_the_next_one_goes_on)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 1, .shards = 10, .store = HARNESS_OWN_STORES});
	struct store_double *d = h.m[0].store;
	store_double_knobs(d)->load_error = -EIO;
	long t[2] = {harness_call(&h, 0, 1, "incr"), harness_call(&h, 0, 1, "incr")};
	expect_error(&h, t[0], "store_unavailable");
	expect_error(&h, t[1], "store_unavailable");
	store_double_knobs(d)->load_error = 0;
	cr_assert_eq(value_of(&h, harness_call(&h, 0, 1, "incr")), 1);
	harness_stop(&h);
}

/* A commit whose outcome the store cannot know (its connection lost while
 * the commit was out) answers {error, unconfirmed}, never
 * store_unavailable, which tells a caller that nothing was applied; and a
 * commit that failed, store_unavailable. Either way the entity stops and
 * its next message starts from what the store holds. */
Test(region_core, a_commit_of_unknown_outcome_answers_unconfirmed_and_a_failed_one_store_unavailable)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 1, .shards = 10, .store = HARNESS_OWN_STORES});
	struct store_double *d = h.m[0].store;
	cr_assert_eq(value_of(&h, harness_call(&h, 0, 1, "incr")), 1);
	store_double_knobs(d)->commit_error = STATE_STORE_UNCONFIRMED;
	expect_error(&h, harness_call(&h, 0, 1, "incr"), "unconfirmed");
	store_double_knobs(d)->commit_error = -EIO;
	expect_error(&h, harness_call(&h, 0, 1, "incr"), "store_unavailable");
	store_double_knobs(d)->commit_error = 0;
	/* Neither change is in the store: the entity reloads 1. */
	cr_assert_eq(value_of(&h, harness_call(&h, 0, 1, "incr")), 2);
	harness_stop(&h);
}

Test(region_core, a_shared_stores_claim_holds_back_the_shards_messages)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 1, .shards = 10, .store = HARNESS_SHARED_STORE});
	struct store_double *d = h.m[0].store;
	store_double_knobs(d)->hold_claims = true;
	long t = harness_call(&h, 0, 1, "incr");
	cr_assert(harness_run_until(&h, counts_held_claims, NULL, WAIT_MS), "the shard is claimed first");
	expect_no_reply(&h, t, 100);
	store_double_knobs(d)->hold_claims = false;
	store_double_release(d);
	cr_assert_eq(value_of(&h, t), 1);
	harness_stop(&h);
}

Test(region_core, a_fenced_write_is_refused_and_the_shard_comes_back_from_the_store)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 1, .shards = 10, .store = HARNESS_SHARED_STORE});
	struct store_double *d = h.m[0].store;
	cr_assert_eq(value_of(&h, harness_call(&h, 0, 1, "incr")), 1);
	store_double_knobs(d)->hold_commits = true;
	long t = harness_call(&h, 0, 1, "incr");
	expect_no_reply(&h, t, 50);
	/* Another member claims the shard: the write of 2 is not in the
	 * store, and its reply must not say it is. */
	store_double_fence(d, harness_shard_of(&h, 1));
	expect_error(&h, t, "store_unavailable");
	store_double_knobs(d)->hold_commits = false;
	store_double_release(d);
	/* The shard comes back here (claimed again); the entity starts from
	 * what the store holds: 1, not the refused 2. */
	cr_assert_eq(value_of(&h, harness_call(&h, 0, 1, "incr")), 2);
	harness_stop(&h);
}

/* ---- between members ---- */

#define IDS 40

/* Every id counted `n` times, asked through member `via`. */
static void count_all(struct harness *h, size_t via, long n)
{
	long tags[IDS];
	for (long k = 0; k < n; k++) {
		for (long id = 0; id < IDS; id++)
			tags[id] = harness_call(h, via, id, "incr");
		for (long id = 0; id < IDS; id++)
			cr_assert_eq(value_of(h, tags[id]), k + 1, "id %ld", id);
	}
}

static void handoff_carries_state_and_loses_nothing(enum harness_store store)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 2, .shards = 10, .store = store});
	count_all(&h, 0, 3);
	cr_assert_gt(harness_stats(&h, 1).shards, 0, "both members host shards");
	cr_assert_gt(harness_stats(&h, 0).shards, 0);
	/* Member 1 leaves: its shards move to member 0 while every id keeps
	 * being counted, a round at a time. What arrives during a move waits
	 * in a buffer; each reply is one more than the last, so a state left
	 * behind (a reset) or a message lost (a gap) shows. */
	long leave = harness_call_region(&h, 1, "graceful_shutdown");
	long expected = 4, rounds_after = 0;
	while (rounds_after < 3) {
		cr_assert_lt(expected, 1000, "member 1 never finished leaving");
		long tags[IDS];
		for (long id = 0; id < IDS; id++)
			tags[id] = harness_call(&h, 0, id, "incr");
		for (long id = 0; id < IDS; id++)
			cr_assert_eq(value_of(&h, tags[id]), expected, "id %ld, round %ld", id, expected);
		expected++;
		if (region_stopped(h.m[1].region))
			rounds_after++;
	}
	cr_assert_str_eq(harness_await_reply(&h, leave, WAIT_MS)->text, "ok");
	cr_assert_eq(harness_stats(&h, 0).shards, 10);
	cr_assert_eq(harness_stats(&h, 1).shards, 0);
	harness_stop(&h);
}

Test(region_core, a_handoff_carries_state_and_buffered_messages_in_memory)
{
	handoff_carries_state_and_loses_nothing(HARNESS_NO_STORE);
}

Test(region_core, a_handoff_carries_state_and_buffered_messages_from_the_store)
{
	handoff_carries_state_and_loses_nothing(HARNESS_OWN_STORES);
}

Test(region_core, a_handoff_with_a_shared_store_reads_the_state_at_the_new_home)
{
	handoff_carries_state_and_loses_nothing(HARNESS_SHARED_STORE);
}

Test(region_core, a_coordinator_that_moves_learns_the_homes_and_moves_nothing)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 2, .shards = 10});
	count_all(&h, 0, 2);
	struct region_stats before[2] = {harness_stats(&h, 0), harness_stats(&h, 1)};
	harness_move_coordinator(&h, 1);
	/* Through the other member too: its region re-asks homes it lost
	 * track of from the new coordinator. */
	long tags[IDS];
	for (long id = 0; id < IDS; id++)
		tags[id] = harness_call(&h, (size_t)(id % 2), id, "incr");
	for (long id = 0; id < IDS; id++)
		cr_assert_eq(value_of(&h, tags[id]), 3, "id %ld kept its state: its shard did not move", id);
	cr_assert_eq(harness_stats(&h, 0).shards, before[0].shards);
	cr_assert_eq(harness_stats(&h, 1).shards, before[1].shards);
	cr_assert_eq(harness_stats(&h, 0).entities + harness_stats(&h, 1).entities, IDS);
	harness_stop(&h);
}

/* ---- remembered entities (remember_entities = true) ---- */

struct remembered_goal {
	size_t members, ids;
};

static bool every_member_remembers(struct harness *h, void *arg)
{
	const struct remembered_goal *g = arg;
	for (size_t i = 0; i < g->members; i++)
		if (harness_remembered(h, i) != g->ids)
			return false;
	return true;
}

/* Each entity that starts is remembered by every member hosting the type,
 * whichever member's shard it lives in (so any of them can start it again
 * when the shard comes to it); one passivated is forgotten by all. */
Test(region_core, remembered_entities_are_kept_by_every_member_and_forgotten_when_passivated)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 2, .shards = 10, .remember = true});
	count_all(&h, 0, 1);
	cr_assert_gt(harness_stats(&h, 1).shards, 0, "both members host shards");
	cr_assert(harness_run_until(&h, every_member_remembers, &(struct remembered_goal){2, IDS}, WAIT_MS),
		  "remembered: %zu and %zu of %d", harness_remembered(&h, 0), harness_remembered(&h, 1), IDS);
	cr_assert_str_eq(harness_await_reply(&h, harness_call(&h, 0, 7, "passivate"), WAIT_MS)->text, "ok");
	cr_assert(harness_run_until(&h, every_member_remembers, &(struct remembered_goal){2, IDS - 1}, WAIT_MS),
		  "after a passivate: %zu and %zu", harness_remembered(&h, 0), harness_remembered(&h, 1));
	harness_stop(&h);
}

/* ---- replicated state (state_replicas) ---- */

/* Whether member i's own store holds a committed state of integer id. */
static bool stored_at(const struct harness *h, size_t i, long id)
{
	char buf[16];
	int n = 0;
	cr_assert_eq(ei_encode_long(buf, &n, id), 0);
	const char *state;
	return store_double_get(h->m[i].store, harness_shard_of(h, id), buf, (size_t)n, &state) > 0;
}

/* With one replica, a reply leaves only once the write is committed at the
 * home and at its replica: every acknowledged count is in both members'
 * own stores, whichever member is the shard's home. */
Test(region_core, with_a_replica_every_acknowledged_write_is_in_two_stores)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 2, .shards = 10, .store = HARNESS_OWN_STORES,
						     .replicas = 1});
	count_all(&h, 0, 2);
	cr_assert_gt(harness_stats(&h, 1).shards, 0, "both members are homes");
	for (long id = 0; id < IDS; id++) {
		cr_assert(stored_at(&h, 0, id), "id %ld in member 0's store", id);
		cr_assert(stored_at(&h, 1, id), "id %ld in member 1's store", id);
	}
	harness_stop(&h);
}

/* A home that dies takes its own store with it: its shards come up on
 * their complete replica, and every count acknowledged before goes on
 * from where it was — none reset, none lost. */
Test(region_core, a_dead_homes_shards_come_up_on_their_replica_with_every_acknowledged_write)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 2, .shards = 10, .store = HARNESS_OWN_STORES,
						     .replicas = 1});
	count_all(&h, 0, 2);
	cr_assert_gt(harness_stats(&h, 1).shards, 0, "member 1 homes shards");
	harness_kill(&h, 1);
	long tags[IDS];
	for (long id = 0; id < IDS; id++)
		tags[id] = harness_call(&h, 0, id, "incr");
	for (long id = 0; id < IDS; id++)
		cr_assert_eq(value_of(&h, tags[id]), 3, "id %ld", id);
	cr_assert_eq(harness_stats(&h, 0).shards, 10, "member 0 homes every shard");
	harness_stop(&h);
}

/* ---- a type written in Erlang: its entities on a host ---- */

/* Each entity runs as a process on the host, which counts: the counts
 * go on from message to message, through the host protocol. */
Test(region_core, a_hosted_types_entities_count_through_their_processes_on_the_host)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 2, .shards = 10, .host = true});
	count_all(&h, 0, 3);
	cr_assert_eq(host_double_starts(h.host), IDS, "one process per entity, started once");
	harness_stop(&h);
}

/* The host goes down with a message at an entity's process: the message
 * is answered {error, {entity_crashed, noconnection}} (it may or may not
 * have been handled, as with any crash), and the next waits in its
 * shard's buffer for the host rather than fail. */
static bool all_gathered(struct harness *h, void *arg)
{
	(void)arg;
	return host_double_gathered(h->host) >= IDS;
}

/* The host's completions of a moment come back in one batch, read ahead
 * of the one being handled (host_entities.c): every caller gets its own
 * answer, and each entity's next message goes to its process. */
Test(region_core, a_batch_of_completions_answers_every_call_and_the_next_messages_go_on)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 1, .shards = 10, .host = true});
	count_all(&h, 0, 1);
	host_double_gather(h.host, true);
	long first[IDS], second[IDS];
	for (long id = 0; id < IDS; id++)
		first[id] = harness_call(&h, 0, id, "incr");
	for (long id = 0; id < IDS; id++)
		second[id] = harness_call(&h, 0, id, "incr");
	cr_assert(harness_run_until(&h, all_gathered, NULL, WAIT_MS), "the first messages reached their processes");
	cr_assert_eq(host_double_gathered(h.host), IDS, "the second ones wait behind them");
	cr_assert_null(harness_reply(&h, first[0]), "nothing is answered before the batch");
	host_double_send_gathered(h.host);
	cr_assert(harness_run_until(&h, all_gathered, NULL, WAIT_MS), "the second messages reached their processes");
	for (long id = 0; id < IDS; id++)
		cr_assert_eq(value_of(&h, first[id]), 2, "id %ld", id);
	host_double_send_gathered(h.host);
	for (long id = 0; id < IDS; id++)
		cr_assert_eq(value_of(&h, second[id]), 3, "id %ld", id);
	harness_stop(&h);
}

Test(region_core, a_host_that_goes_down_answers_its_message_in_flight_and_the_next_waits)
{
	struct harness h;
	harness_start(&h, &(struct harness_options){.members = 1, .shards = 10, .host = true});
	count_all(&h, 0, 1);
	host_double_hold(h.host, true);
	long at_process = harness_call(&h, 0, 7, "incr");
	expect_no_reply(&h, at_process, 100);
	host_double_kill(h.host);
	const struct harness_reply *r = harness_await_reply(&h, at_process, WAIT_MS);
	cr_assert_str_eq(r->text, "{error, {entity_crashed, noconnection}}", "the message in flight: %s", r->text);
	long next = harness_call(&h, 0, 7, "incr");
	expect_no_reply(&h, next, 300);
	harness_stop(&h);
}
