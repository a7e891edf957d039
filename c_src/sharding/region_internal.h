/*
 * region_internal.h — what the files of a region (region.h) share. Not for
 * other modules: they use region.h.
 *
 *   region.c              the hub: the mailbox, routing, start and free,
 *                         the lease gate, the timers, the store's outcomes
 *   region_shutdown.c     graceful_shutdown and region_shutdown
 *   region_stats.c        the inspection calls, the cluster-stats aggregator
 *   region_coordinator.c  registering with the coordinator, shard homes,
 *                         handoff (on the shard slots of region_slot.h)
 *   region_remember.c     remembered entities (remember_replica.h)
 *   region_handoff_state.c entity states streamed to a shard's new home
 *   region_deliver.c      delivery to a hosted shard, forwarding, flushing
 *                         a shard's buffer
 *   region_store.c        entities backed by a durable store: loads before
 *                         delivery, writes of changed states, replies held
 *                         until their writes are committed
 *   region_buffer.c       the per-shard buffers of messages waiting
 *   region_send.c         answers, tell replies, messages to the coordinator
 *   region_slot.c         the states of a shard's slot, pure (region_slot.h)
 *
 * Calls run one way, down this list: a file calls only files below it.
 * Nothing calls back up: the store's outcomes come to the hub's callbacks,
 * which resume the slot; what the handoff state finds (a stream ended, a
 * chunk came) is left owed on the slot for region_step_owed, which the
 * coordinator protocol offers; the retry timer is the hub's and asks each
 * part in turn. scripts/check-circles.sh refuses a circle.
 *
 * Everything runs on the loop's thread; none of these functions blocks.
 */
#ifndef SN_REGION_INTERNAL_H
#define SN_REGION_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

#include "base/histogram.h"
#include "base/poll_until.h"
#include "distribution/node_set.h"
#include "base/evloop.h"
#include "base/scratch.h"
#include "distribution/gen_call.h"
#include "sharding/region.h"
#include "sharding/region_slot.h"
#include "sharding/remember_replica.h"
#include "sharding/shard.h"
#include "sharding/shard_msg.h"
#include "sharding/shard_state.h"
#include "store/state_store.h"

/* Runs of replies with one start time a region times per turn; a reply
 * beyond them is timed at once (a clock read of its own). */
#define REGION_UNTIMED_RUNS 8

/* How soon an unregistered region tries again. */
#define REGION_REGISTER_RETRY_MS 100

/* A message waiting for its shard's home. Owns copies of everything. */
struct pending {
	struct pending *next;
	uint64_t t0_ns;
	bool is_call;
	bool has_from;
	erlang_pid from;
	uint32_t tag_len, id_len, msg_len;
	char data[]; /* tag, canonical id, msg */
};

/* A load of an entity's stored state under way (region_store.c). */
struct pending_load;
/* A reply waiting for its write's commit (region_store.c). */
struct held_reply;
struct held_state_ack;

/* The message being routed or answered; pointers borrowed from the
 * caller. */
struct envelope {
	bool is_call;
	const erlang_pid *from; /* NULL: a tell with no known sender */
	const char *tag;
	size_t tag_len;
	const char *id; /* canonical */
	size_t id_len;
	const char *msg;
	size_t msg_len;
	uint64_t t0_ns; /* when the loop woke up to it (evloop_now_ns), for the reply latency; 0: unknown */
};
/* A get_cluster_sharding_stats call waiting for the members (region_stats.c). */
struct stats_request;

/* The old home's side of a state stream (region_handoff_state.c). */
struct state_out {
	bool destination_known;  /* the handoff named the new home (home_region) */
	struct shard_state_cursor cursor; /* the next chunk starts here */
	uint32_t next_seq;       /* the next chunk's number */
	uint32_t acked;          /* chunks the new home acknowledged */
	bool last_sent;          /* the final chunk is out */
	bool failed;             /* the stream cannot go on (SLOT_OWES_STATE_SENT) */
	/* With a store, the chunks are the shard's stored records (passivated
	 * entities too), read once every write queued before the stream
	 * began (commit_needed) is committed. */
	bool from_store;
	bool scan_in_flight;
	uint32_t gen;            /* this stream's number, in its scans' tokens */
	uint64_t commit_needed;
	uint16_t scan_key_len;   /* the last record sent: the next scan's start */
	char scan_key[STATE_STORE_KEY_MAX];
};

/* Events region_handoff_state.c finds for a slot. It never steps a slot
 * itself (the coordinator protocol, which calls it, does): it marks the
 * event owed, and region_step_owed steps it once the call returns. */
enum {
	SLOT_OWES_STATE_SENT = 1u << 0,  /* the stream ended, done or cut short */
	SLOT_OWES_STATE_CHUNK = 1u << 1, /* a chunk came: the move is alive */
};

struct shard_slot {
	struct region_slot st;   /* where the shard lives (region_slot.h) */
	uint8_t owed;            /* SLOT_OWES_* bits */
	/* SLOT_REMOTE: the home. HANDING_OFF and SENDING_STATE: the new home
	 * the shard goes to, once out.destination_known. */
	erlang_pid home_region;
	struct state_out out;    /* SENDING_STATE */
	/* MOVING, at the new home: the entities restored from the state
	 * chunks that came, taken as the shard when shard_home names this
	 * region, dropped when the slot leaves MOVING otherwise. Owned. */
	struct shard *incoming;
	/* While hosted. A coordinator that names another home for a hosted
	 * shard (SLOT_HOME_THERE) leaves it here, running. */
	struct shard *shard;
	struct pending *head, *tail; /* waiting, in arrival order (st.buffered of them); owned */
	/* Its remembered entities wait for a quorum lease (region_remember.c). */
	bool remembered_pending;
	/* With a store (region_store.c): loads under way, in the order issued
	 * (owned; st.loads of them). What holds the shard's messages back —
	 * loads, the commits a load waits for, claims — is counted in st
	 * (region_slot_hold). */
	struct pending_load *loads;
	/* When the coordinator ordered this hosted shard handed off (the
	 * loop's clock, ns; 0: no hand-off under way), for its duration. */
	uint64_t handoff_started_ns;
};

struct region {
	struct region_config cfg;
	struct proc *proc;
	erlang_pid pid;
	bool registered;  /* the coordinator acknowledged us */
	char coordinator_node[NODE_NAME_BUF]; /* where the active coordinator runs; "" if none */
	struct node_set downed;     /* region_set_downed */
	struct remember_replica *replica; /* NULL: remember_entities is off */
	bool remembered_pending;          /* some slot's remembered_pending is set */
	char coordinator_name[256]; /* its registered name */
	char name[256];             /* the region's registered name (cfg.name points here) */
	erlang_pid coordinator;     /* its pid, once it acknowledged us */
	bool stopped;
	struct shard_slot *slots;   /* cfg.number_of_shards of them */
	uint32_t buffered;          /* the sum of the slots' st.buffered */
	uint32_t nlocal;            /* slots with a shard */
	uint64_t dropped, forwarded;
	/* Messages handled here by kind (their sum is region_stats.delivered);
	 * for the metrics endpoint, with cfg.metrics, how long their replies
	 * took, from the loop's wakeup that took the message to the flush that
	 * wrote the reply; shards handed off from here and how long each
	 * hand-off took. Plain counters on the loop. */
	uint64_t asks, tells;
	struct histogram reply_latency;
	/* Replies of this turn not yet timed, as runs of one start time: they
	 * leave when the turn's output is flushed, and are timed then with one
	 * clock read (region_time_replies). */
	struct {
		uint64_t t0_ns;
		uint32_t n;
	} untimed[REGION_UNTIMED_RUNS];
	uint32_t nuntimed;
	uint64_t handoffs;
	struct histogram handoff_duration;
	struct evloop_timer retry_timer;
	struct evloop_timer idle_timer;
	struct stats_request *stats_requests;
	uint32_t next_stats_id;
	/* graceful_shutdown under way: shards are being handed off */
	bool leaving;
	struct poll_until leave_poll; /* graceful_shutdown: until no shard is left here */
	/* Reused encode buffers, one per nesting level (scratch.h): route's
	 * canonical id, then deliver_local's reply, then send_tell_reply's
	 * {Type, Id, Reply}. */
	struct scratch canon_buf, reply_buf, tell_buf;
	/* The registered name as an encoded atom, for the head of every tell
	 * reply: encoding it per reply (a Latin-1 to UTF-8 conversion, twice
	 * in ei_x_encode_atom) cost more than the rest of the reply. A
	 * singleton's one entity id too (canonical: SMALL_ATOM_UTF8_EXT). */
	char type_atom[3 + 2 * MAXATOMLEN];
	size_t type_atom_len;
	/* With a store (region_store.c); store NULL: memory only. */
	struct state_store_type *store;
	uint64_t written_upto;        /* the store's commits reported so far */
	struct held_reply *held_head, *held_tail; /* in seq order; owned */
	uint32_t held_count;
	/* Acknowledgements of state chunks whose writes are not yet committed
	 * (region_handoff_state.c), in seq order; owned. */
	struct held_state_ack *acks_head, *acks_tail;
	uint64_t load_counter;
	bool slots_awaiting_commit;   /* some slot's st.load_after may be set */
	bool streams_awaiting_commit; /* some stream's commit_needed may be set */
	bool slots_owed;              /* some slot's owed may be set */
	bool stepping_owed;           /* region_step_owed is under way */
	struct scratch state_buf;     /* a changed entity's encoded state */
};

/* The loop's clock as entities see it (their last-activity stamps). */
static inline uint32_t region_now32(const struct region *r) { return (uint32_t)evloop_now_ms(r->cfg.loop); }

/* Whether `node` is in the region_set_downed list. */
static inline bool region_is_downed(const struct region *r, const char *node)
{
	return node_set_contains(&r->downed, node);
}

/* False while this node must not run entities (region_config.may_deliver). */
static inline bool region_may_deliver(const struct region *r)
{
	return r->cfg.may_deliver == NULL || r->cfg.may_deliver(r->cfg.may_deliver_arg);
}

/* ---- region_send.c ---- */

/* Answers the message's sender with `reply` (no version byte): a call's
 * reply, or a tell's {Type, EntityId, Reply}; a tell without sender gets
 * nothing. A reply the receiving node could not read (term_readable.h)
 * goes as {error, unreadable_reply}. */
void region_answer(struct region *r, const struct envelope *e, const ei_x_buff *reply);

/* Answers {error, Reason} (an atom) as region_answer does. */
void region_answer_error(struct region *r, const struct envelope *e, const char *reason);

/* Answers a gen_server call that is no entity message (the region's own
 * requests): `reply` (no version byte) is read only. */
void region_send_call_reply(struct region *r, const erlang_pid *to, const char *tag, size_t tag_len,
			    const ei_x_buff *reply);

/* Sends a shard_msg to the coordinator we are registered with: `shard` for
 * get_shard_home and shard_stopped, ignored by the others. Unregistered,
 * nothing is sent. */
void region_send_to_coordinator(struct region *r, enum shard_msg_kind kind, uint32_t shard);

/* ---- region_buffer.c ---- */

/* The envelope of a buffered message; its pointers are into p. */
void region_envelope_of(const struct pending *p, struct envelope *e);

/* Appends a copy of the message to the slot's buffer. False if the
 * buffers are full (buffer_size in all) or out of memory. */
bool region_buffer_append(struct region *r, struct shard_slot *slot, const struct envelope *e);

/* Takes the messages for entity `id` out of the slot's buffer, each
 * answered {error, `error`} (a tell, to its sender if known); the others
 * keep their order. */
void region_refuse_entity(struct region *r, struct shard_slot *slot, const char *id, size_t id_len,
			  const char *error);

/* Empties the slot's buffer for good: each waiting call is answered
 * {error, shutting_down}, tells are dropped. */
void region_refuse_buffered(struct region *r, struct shard_slot *slot);

/* ---- region_deliver.c ---- */

/* Delivers `e` to its entity in `s`, hosted here: the reply goes to the
 * sender at once, or, with a store, once the change it reports is
 * committed (a `delete` removes the stored state). */
void region_deliver_local(struct region *r, struct shard *s, const struct envelope *e);

/* Sends `e` on to `home`, the region hosting its shard; a call goes as the
 * original '$gen_call', so the home answers the caller itself. */
void region_forward(struct region *r, const erlang_pid *home, const struct envelope *e);

/* Delivers (hosted) or forwards (SLOT_REMOTE) what waits in the slot's
 * buffer, in arrival order. A hosted slot stops early when the lease is
 * gone (region_resume comes back for the rest) or when a load must come
 * first (the store's outcome comes back to the hub). */
void region_flush_slot(struct region *r, struct shard_slot *slot);

/* ---- region_coordinator.c ---- */

/* A message for `shard` had to wait: if nobody asked for its home yet, the
 * coordinator is asked now (or once it acknowledges our registration). */
void region_need_home(struct region *r, uint32_t shard);

/* The coordinator's messages and the handoff protocol between regions:
 * registered, register_again, shard_home, begin_handoff, handoff,
 * handoff_ack, and the state stream (shard_state, shard_state_ack), all
 * with `sm->shard` < nshards. Orders from a coordinator we are
 * not registered with are ignored. Other kinds are ignored. */
void region_on_coordinator_msg(struct region *r, const struct shard_msg *sm, const erlang_pid *from);

/* A slot whose every handoff ack is in: flushes what waits here, and once
 * nothing does, stops the shard and tells the coordinator. */
void region_hand_off_when_flushed(struct region *r, uint32_t shard);

/* The retry timer's part for the coordinator protocol: registration
 * until acknowledged, then unanswered home requests, handoff deadlines and
 * moves that never ended. */
void region_coordinator_tick(struct region *r);

/* dist_node_on_nodedown's callback (arg: the region). */
void region_on_nodedown(void *arg, const char *peer);

/* Steps the slot of `shard` with an event that carries nothing but the
 * clock (region_slot.h) and does what the step says, then what is owed. */
void region_step(struct region *r, uint32_t shard, enum region_slot_event_kind kind);

/* Steps every event region_handoff_state.c left owed (SLOT_OWES_*), until
 * none is: the one way back into the coordinator protocol for what the
 * handoff state finds. Whoever calls a region_state_* function that may
 * owe (on_msg, on_nodedown, on_committed, on_scanned, send_start) calls
 * this after it. Called during itself, it returns at once: the outer
 * loop takes what was added. */
void region_step_owed(struct region *r);

/* ---- region_handoff_state.c ---- */

/* Whether the shard has entity states to send to its new home: the type
 * keeps state, entities are live (or, with a store, may be stored), and
 * the handoff named a new home that is not this region. */
bool region_state_to_carry(const struct region *r, const struct shard_slot *slot);

/* SLOT_DO_SEND_STATE: starts streaming the slot's entity states to
 * home_region. SLOT_STATE_SENT is owed (region_step_owed) when the last
 * chunk is acknowledged, or at once if a chunk cannot be built or sent. */
void region_state_send_start(struct region *r, uint32_t shard);

/* shard_state (a chunk, at the new home: SLOT_STATE_CHUNK is owed) and
 * shard_state_ack (at the old home: the last one owes SLOT_STATE_SENT);
 * `sm->shard` < nshards. Anything out of turn is ignored, logged. */
void region_state_on_msg(struct region *r, const struct shard_msg *sm);

/* A node is gone: streams to it end (SLOT_STATE_SENT owed: the shard
 * stops without the rest). */
void region_state_on_nodedown(struct region *r, const char *node);

/* The store committed more: streams that waited for it go on, and the
 * chunks whose writes are now durable are acknowledged. */
void region_state_on_committed(struct region *r);

/* Sends the held acknowledgements whose writes are up to `upto` (the
 * region stops: UINT64_MAX, as the store commits what is queued before it
 * closes). */
void region_state_release_acks(struct region *r, uint64_t upto);

/* The store's answer to a stream's scan (state_store_scanned_fn's
 * arguments, passed on by the hub). May owe SLOT_STATE_SENT. */
void region_state_on_scanned(struct region *r, uint64_t token, int status, const char *chunk, size_t len, bool more,
			     const char *last_key, size_t last_key_len);

/* Hands the slot's incoming shard to the caller (NULL if none). */
struct shard *region_state_take_incoming(struct shard_slot *slot);

/* Frees the slot's incoming shard, if any (its entities stop). */
void region_state_drop_incoming(struct shard_slot *slot);

/* ---- region_remember.c ---- */

/* With cfg.remember, creates the replica (r->pid must be set). Returns 0
 * (also without remember), -EINVAL (remember without members_hosting), or
 * -ENOMEM. */
int region_remember_start(struct region *r);

/* Offers a received term, which came from node `via`, to the replica.
 * Returns true if it was a `remembered` message (handled, or malformed or
 * not from the member it names, and logged). */
bool region_remember_handle(struct region *r, const char *term, size_t len, const char *via);

/* A shard that just came here: its entities are watched and the ones
 * remembered for it started, or, without a quorum lease, started by
 * region_remember_resume. `s` is hosted by r. */
void region_start_remembered(struct region *r, struct shard *s);

/* Whether `shard` has remembered entities this region would host, so it
 * wants a home without waiting for a message. */
bool region_remember_wants_home(const struct region *r, uint32_t shard);

/* With a lease again: starts the remembered entities that waited for it. */
void region_remember_resume(struct region *r);

/* ---- region_store.c ---- */

/* With cfg.store and a type that keeps state, opens the type's database
 * with the callbacks `cb` (the region's hub in region.c, which hands each
 * outcome to the functions below and then goes on with the slot). Returns
 * 0 (also without a store), or the store's error. */
int region_store_start(struct region *r, const struct state_store_callbacks *cb);

/* The store's outcomes, for the hub. A load answered: the entity starts
 * with its stored state (or afresh); *shard is its shard, and true means
 * the slot's loads are all done, so what waited may go on. */
bool region_store_on_loaded(struct region *r, uint64_t token, int found, const char *state, size_t len,
			    uint32_t *shard);

/* A claim of `shard` committed: true once none is left, so what waited
 * may go on. */
bool region_store_on_claimed(struct region *r, uint32_t shard);

/* Another member claimed `shard`: its held replies get
 * {error, store_unavailable}; true if the hub must step the slot
 * SLOT_FENCED. */
bool region_store_on_fenced(struct region *r, uint32_t shard);

/* Commits up to `upto` (status: 0, or the commit's error): the held
 * replies they cover go, failed ones as {error, store_unavailable}. */
void region_store_on_written(struct region *r, uint64_t upto, int status);

/* The next slot from *from on whose load waited for commits that are now
 * done: true with *from set to it; the slots still waiting keep
 * slots_awaiting_commit set. */
bool region_store_next_load_ready(struct region *r, uint32_t *from);

/* Answers every held reply {error, shutting_down}, drops the loads under
 * way, closes the type's database. Idempotent. The state chunks'
 * acknowledgements held for commits are region_state_release_acks'. */
void region_store_stop(struct region *r);

/* Whether the region has a store. Inline: the memory-only message path
 * asks it twice per message. */
static inline bool region_store_active(const struct region *r) { return r->store != NULL; }

/* Whether every member reads the same store (state_store.shared): then a
 * move streams no states, only waits for the old home's commits. */
static inline bool region_store_shared(const struct region *r) { return r->store != NULL && r->cfg.store->shared; }

/* Whether a message for entity `id` of hosted shard `shard` must wait in
 * the shard's buffer: an earlier load is under way, or the entity is not
 * live and its stored state is to be loaded first (this starts the load,
 * at once or once earlier writes are committed; the shard's buffer is
 * flushed when it is done). `msg` is the message term (delete and
 * passivate need no load). False without a store. */
bool region_store_must_wait(struct region *r, uint32_t shard, const char *id, size_t id_len, const char *msg);

/* Starts a remembered entity of hosted shard `shard` without a message:
 * at once, or with a store once its stored state is loaded (the shard's
 * messages wait meanwhile). Returns 0 (also when it is live already) or
 * -ENOMEM. */
int region_start_entity(struct region *r, uint32_t shard, const char *id, size_t id_len);

/* Frees the slot's loads under way (the shard left). */
void region_store_drop_loads(struct shard_slot *slot);

/* The shard is hosted here from now on: with a shared store, claim it
 * (fencing, state_store.h) — its messages wait until the claim is
 * committed. Nothing to do otherwise. */
void region_store_claim(struct region *r, uint32_t shard);

/* Queues the entity's new state (`state`: a term with its version byte) or,
 * state NULL, its deletion. Returns 0, -ENOMEM, or -ESTALE (a shared
 * store: the shard is not claimed, or was claimed by another member). */
int region_store_write(struct region *r, uint32_t shard, const char *id, size_t id_len, const ei_x_buff *state);

/* Queues the deletion of every stored record of `shard` (a stream of its
 * states begins: what this node held of it before is out of date).
 * Returns 0 or -ENOMEM. */
int region_store_delete_shard(struct region *r, uint32_t shard);

/* The writes queued so far, by any type of this node's store. */
uint64_t region_store_last_queued(const struct region *r);

/* Answers `e` with `reply` once every write queued so far is committed (at
 * once if they are). */
void region_store_answer(struct region *r, uint32_t shard, const struct envelope *e, const ei_x_buff *reply);

/* The retry timer: held replies past store_timeout_ms are answered
 * {error, store_unavailable}. */
void region_store_tick(struct region *r);

/* ---- region_stats.c ---- */

/* {ok, #{ShardId => [EntityId]}} into x. Returns 0, or < 0 when an
 * encoder failed (x then holds no whole term: term_x_whole_or_enomem). */
int region_encode_state(struct region *r, ei_x_buff *x);

/* {ok, #{entities, ..., forwarded}} (region_get_stats) into x. Returns
 * as region_encode_state. */
int region_encode_stats(struct region *r, ei_x_buff *x);

/* get_cluster_sharding_stats: answered once every other member's region
 * has, or after 2 s. Out of memory, the call gets no answer. */
void region_stats_start(struct region *r, const struct gen_call *call);

/* get_stats from another member's region (`id` is its request): answered
 * with this region's counts. */
void region_stats_on_get(struct region *r, uint32_t id, const erlang_pid *asker);

/* stats from another member's region, for one of our requests. */
void region_stats_on_answer(struct region *r, const struct shard_msg *sm);

/* Forgets every request unanswered. */
void region_stats_free(struct region *r);

/* ---- region_shutdown.c ---- */

/* graceful_shutdown: the shards are handed off to the other members'
 * regions, then the region stops and cfg.on_stopped is called. */
void region_begin_leaving(struct region *r);

/* The leave timer (arg: the region). */
void region_leave_poll_init(struct region *r);

#endif
