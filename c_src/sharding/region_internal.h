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
 *   region_remember.c     remembered entities (remember_share.h)
 *   region_handoff_state.c entity states streamed to a shard's new home
 *   region_deliver.c      delivery to a hosted shard through the kind of
 *                         its entities (struct region_entities, chosen
 *                         once), forwarding, flushing a shard's buffer
 *   region_hosting.c      a type run on a host (written in Erlang): what
 *                         the region does for its entities, which live in
 *                         hosting/host_entities.h and call back through
 *                         its host_region_ops; a message handed to them
 *   region_store.c        entities backed by a durable store: loads before
 *                         delivery, writes of changed states, replies held
 *                         until their writes are committed
 *   region_buffer.c       the per-shard buffers of messages waiting
 *   region_send.c         answers, tell replies, messages to the coordinator
 *   region_slot.c         the states of a shard's slot, pure (region_slot.h)
 *   region_instances.c    entity incarnations reported for a test setting
 *
 * Calls run one way, down this list: a file calls only files below it
 * (the kinds of entities too: region_deliver.c's tables point at its own
 * functions and at region_hosting.c's and region_store.c's).
 * Nothing calls back up: the store's outcomes come to the hub's callbacks,
 * which resume the slot, and so do the hosted entities' (host_region_ops,
 * region_hosting.c); what the handoff state finds (a stream ended, a
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
#include <string.h>

#include <ei.h>

#include "base/byte_set.h"
#include "etf/drop_log.h"
#include "etf/kept_sender.h"
#include "base/histogram.h"
#include "base/poll_until.h"
#include "protocol/node_set.h"
#include "base/evloop.h"
#include "base/scratch.h"
#include "protocol/gen_call.h"
#include "sharding/region.h"
#include "sharding/region_slot.h"
#include "sharding/remember_share.h"
#include "hosting/hosted_entity.h"
#include "hosting/remote_mailbox.h"
#include "replication/replicated_store.h"
#include "entity/shard.h"
#include "etf/shard_msg.h"
#include "entity/shard_state.h"
#include "store/state_store.h"
#include "etf/shardnode_msg.h"
#include "etf/term.h"

/* Runs of replies with one start time a region times per turn; a reply
 * beyond them is timed at once (a clock read of its own). */
#define REGION_UNTIMED_RUNS 8

/* A message forwarded after waiting at least this long here goes inside
 * {'$shardnode', aged, WaitedUs, Message} (region_deliver.c). */
#define REGION_AGED_MIN_NS 1000000ull

/* How soon an unregistered region tries again. */
#define REGION_REGISTER_RETRY_MS 100

/* A message waiting for its shard's home, or (a hosted type's,
 * host_entities.h) in its entity's mailbox. Owns copies of everything. */
struct pending {
	struct pending *next;
	/* A hosted type's (host_entities.h): its place in its entity's
	 * mailbox, with the view of this message it reads. */
	struct remote_mailbox_item in_mailbox;
	uint64_t t0_ns;
	uint64_t arrived_ns;                   /* the envelope's */
	bool is_call;
	uint8_t kind; /* the envelope's */
	struct kept_sender from; /* its node name the last of `data` */
	uint32_t tag_len, id_len, msg_len;
	char data[]; /* tag, canonical id, msg, the sender's node name */
};

/* A load of an entity's stored state under way (region_store.c). */
struct pending_load;
/* A reply waiting for its write's commit (region_store.c). */
struct held_reply;
struct held_state_ack;

/* What an entity message is to the region itself, read once from its
 * head when it is routed (region_msg_kind) and carried with it, buffered
 * or not: most are the entity's own; `passivate`, `delete`,
 * '$shardnode_state' (a look at the state) and the region's own
 * '$shardnode_wake' are the region's to act on. */
enum envelope_kind {
	ENVELOPE_ENTITY,
	ENVELOPE_PASSIVATE,
	ENVELOPE_DELETE,
	ENVELOPE_PEEK,
	ENVELOPE_WAKE,
};

/* The message being routed or answered; pointers borrowed from the
 * caller. */
struct envelope {
	bool is_call;
	uint8_t kind; /* enum envelope_kind */
	const erlang_pid *from; /* NULL: a tell with no known sender */
	const char *tag;
	size_t tag_len;
	const char *id; /* canonical */
	size_t id_len;
	const char *msg;
	size_t msg_len;
	uint64_t t0_ns; /* when the loop woke up to it (evloop_now_ns), for the reply latency; 0: unknown */
	/* When it reached the first member that took it from its sender, on
	 * this node's clock: t0_ns less what it waited on the members that
	 * forwarded it here (their '$shardnode' aged wrapper, region.c), for
	 * the whole-time histogram. 0 with t0_ns. */
	uint64_t arrived_ns;
};
/* How the entities of the shards hosted here take a message, chosen once
 * when the region starts (region_deliver_choose): C entities in this
 * process, with or without a store, or entities run on a host (hosting/),
 * with or without one. route and a buffer's flush ask these two, never
 * which kind the entities are. */
struct region_entities {
	/* Whether `e` must first wait in its shard's buffer: a load under way
	 * or to start, commits it depends on (region_store_must_wait); NULL:
	 * never (no store: the usual tell pays for no call). */
	bool (*must_wait)(struct region *r, uint32_t shard, const struct envelope *e);
	/* Takes `e` for its entity in `s` (hosted here, the lease held,
	 * nothing to wait for): answered now, or once the write it reports is
	 * committed (a store), or once the entity's process handled it (a
	 * host). */
	void (*deliver)(struct region *r, struct shard *s, const struct envelope *e);
};

/* A get_cluster_sharding_stats call waiting for the members (region_stats.c). */
struct stats_request;

/* The old home's side of a state stream (region_handoff_state.c). */
struct state_out {
	bool destination_known;  /* the handoff named the new home (home_region) */
	/* The region the last stream went to (`to_known`), and how many of the
	 * acknowledgements it owes belong to earlier streams of the slot: a
	 * stream cut short when the slot left SENDING_STATE (a coordinator
	 * named a home meanwhile), then started again to the same region,
	 * numbers its chunks from 0 again, and the earlier chunks' late
	 * acknowledgements must not be taken for the new ones'. */
	bool to_known;
	erlang_pid to;
	uint32_t stale_acks;
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
	/* Not hosted, at the new home: the entities restored from the state
	 * chunks that came from `incoming_from` (region_handoff_state.c),
	 * taken as the shard when shard_home names this region, dropped once
	 * the shard goes elsewhere (region_state_incoming_outlived). Owned. */
	struct shard *incoming;
	erlang_pid incoming_from;
	/* While hosted. A coordinator that names another home for a hosted
	 * shard (SLOT_HOME_THERE) stops it. */
	struct shard *shard;
	/* While hosted: the epoch the coordinator gave this region's claim
	 * (coordinator.h), stated in the hosting report; 0: it gave none. */
	uint64_t claim_epoch;
	struct pending *head, *tail; /* waiting, in arrival order (st.buffered of them); owned */
	/* Its remembered entities wait for a quorum lease (region_remember.c). */
	bool remembered_pending;
	/* With a store (region_store.c): loads under way, in the order issued
	 * (owned; st.loads of them). What holds the shard's messages back —
	 * loads, the commits a load waits for, claims — is counted in st
	 * (region_slot_hold). */
	struct pending_load *loads;
	/* The store's seq of the shard's last write, and of its last write not
	 * made by a live entity here (a moved state, a replica's copy, the
	 * shard cleared): a load waits for the commit of the latter, and of
	 * the former for an entity retired lately (region_store.c). */
	uint64_t last_write_seq, bulk_write_seq;
	/* When the coordinator ordered this hosted shard handed off (the
	 * loop's clock, ns; 0: no hand-off under way), for its duration. */
	uint64_t handoff_started_ns;
	/* The coordinator said the shard waits for a member of its last
	 * replica set (shard_waits), and no home has been named since: what
	 * has waited in its buffer store_timeout_ms is answered {error,
	 * store_unavailable}. */
	bool waits;
};

struct region {
	struct region_config cfg;
	struct proc *proc;
	erlang_pid pid;
	/* Set at start (region.c), read by all. The registered name (cfg.name
	 * points here), and as an encoded atom, for the head of every tell
	 * reply: encoding it per reply (a Latin-1 to UTF-8 conversion, twice
	 * in ei_x_encode_atom) cost more than the rest of the reply. A
	 * singleton's one entity id too (canonical: SMALL_ATOM_UTF8_EXT). */
	struct {
		char name[256];
		char type_atom[3 + 2 * MAXATOMLEN];
		size_t type_atom_len;
	} ident;
	/* region_coordinator.c's: the active coordinator and this region's
	 * registration with it (the name set at start). */
	struct {
		bool registered;            /* the coordinator acknowledged us */
		char node[NODE_NAME_BUF];   /* where it runs; "" if none */
		uint32_t protocol;          /* its member's (member_protocol.h): 2 or later takes epochs */
		char name[256];             /* its registered name */
		erlang_pid pid;             /* once it acknowledged us */
	} coord;
	struct node_set downed;     /* region_set_downed */
	/* region_remember.c's: remembered entities (share NULL: off), and
	 * whether some slot's remembered_pending is set. */
	struct {
		struct remember_share *share;
		bool pending;
	} remember;
	bool stopped;
	struct shard_slot *slots;   /* cfg.number_of_shards of them */
	/* max_active_entities, when `on` (region.c's). */
	struct {
		struct shard_limit lru;
		bool on;
	} limit;
	/* region_store.c's, with a store: the ids of entities retired since
	 * the last turn-over (the shards add to `now`), and before that, until
	 * the writes queued by then (old_upto) are committed. */
	struct {
		struct shard_retired now, old;
		uint64_t old_upto;
	} retired;
	uint32_t buffered;          /* the sum of the slots' st.buffered */
	uint32_t nlocal;            /* slots with a shard */
	/* region.c's: the messages dropped, by reason (their sum is
	 * region_stats.dropped), for the log and the metrics (drop); who they
	 * are logged as. */
	struct {
		struct drop_log log;
		char who[MAXATOMLEN + 8];
	} drops;
	/* Messages handled here by kind (their sum is region_stats.delivered;
	 * counted by region_count_handled) and forwarded to their shard's
	 * home (region_deliver.c). Plain counters on the loop. */
	struct {
		uint64_t asks, tells, forwarded;
	} delivered;
	/* region_send.c's: replies answered {error, unreadable_reply}; with
	 * cfg.metrics, how long replies took, from the loop's wakeup that took
	 * the message (latency) or its arrival at the first member
	 * (envelope.arrived_ns: whole_latency) to the flush that wrote the
	 * reply; and this turn's replies not yet timed, as runs of one start
	 * time: they leave when the turn's output is flushed, and are timed
	 * then with one clock read (region_time_replies). */
	struct {
		uint64_t unreadable;
		struct histogram latency, whole_latency;
		struct {
			uint64_t t0_ns, arrived_ns;
			uint32_t n;
		} untimed[REGION_UNTIMED_RUNS];
		uint32_t nuntimed;
	} replies;
	/* While region.c handles the message inside an aged wrapper: how long
	 * it had waited on the members that forwarded it (else 0). */
	uint64_t incoming_age_ns;
	/* region_coordinator.c's: shards handed off from here and how long
	 * each hand-off took. */
	struct {
		uint64_t count;
		struct histogram duration;
	} handoffs;
	/* region.c's; started and stopped by the parts that need them. */
	struct {
		struct evloop_timer retry, idle;
	} timers;
	/* region_stats.c's: get_cluster_sharding_stats calls waiting for the
	 * other members' answers, and the next request's id. */
	struct {
		struct stats_request *requests;
		uint32_t next_id;
	} stats;
	/* region_shutdown.c's: graceful_shutdown under way (its shards are
	 * being handed off), polled until no shard is left here. */
	struct {
		bool under_way;
		struct poll_until poll;
	} leave;
	/* Reused encode buffers, one per nesting level (scratch.h): route's
	 * canonical id, then the entities' deliver's reply, then send_tell_reply's
	 * {Type, Id, Reply}; and a changed entity's encoded state. */
	struct {
		struct scratch canon, reply, tell, state;
	} bufs;
	/* With a store (region_store.c); store NULL: memory only. With
	 * state_replicas and a store of this node's own, `store` is the face
	 * of `replication` (replicated_store.h), which the hub also hands the
	 * replication protocol's messages; else replication is NULL. */
	struct state_store_type *store;
	struct replicated_store *replication;
	bool slots_awaiting_commit;   /* some slot's st.load_after may be set */
	/* region_store.c's: how far the store reports writes durable, replies
	 * waiting for their writes' commits, in seq order (owned), and the
	 * loads issued so far (their tokens). */
	struct {
		uint64_t written_upto;
		struct held_reply *head, *tail;
		uint32_t count;
		uint64_t loads_issued;
	} held;
	/* region_handoff_state.c's: acknowledgements of state chunks whose
	 * writes are not yet committed, in seq order (owned), and whether some
	 * stream waits for a commit (its commit_needed). */
	struct {
		struct held_state_ack *acks_head, *acks_tail;
		bool streams_awaiting_commit;
	} handoff;
	/* region_coordinator.c's region_step_owed, which clears them: some
	 * slot's owed may be set (set only through region_owe), and a step is
	 * under way. */
	struct {
		bool slots, stepping;
	} owed;
	/* A type run on a host (cfg.host): its entities as processes there
	 * (hosting/host_entities.h), offered what the region does for them by
	 * region_deliver.c; NULL otherwise. Owned. */
	struct host_entities *hosting;
	/* The kind of its entities (region_deliver_choose); never NULL once
	 * region_new returned. Static. */
	const struct region_entities *entities;
};

/* struct region_entities' must_wait, NULL being never. */
static inline bool region_entities_must_wait(struct region *r, uint32_t shard, const struct envelope *e)
{
	return r->entities->must_wait != NULL && r->entities->must_wait(r, shard, e);
}

/* The kind of message `msg` (validated, no version byte) is, sent by
 * `from` (NULL: unknown) as a call or not. One look at its head: a
 * message that is no atom (a tuple, the usual case) is the entity's at
 * once. */
static inline enum envelope_kind region_msg_kind(const char *msg, const erlang_pid *from, bool is_call)
{
	unsigned char tag = (unsigned char)msg[0];
	if (tag != ERL_SMALL_ATOM_UTF8_EXT && tag != ERL_ATOM_UTF8_EXT && tag != ERL_SMALL_ATOM_EXT && tag != ERL_ATOM_EXT)
		return ENVELOPE_ENTITY;
	if (term_is_atom(msg, 0, "delete"))
		return ENVELOPE_DELETE;
	if (term_is_atom(msg, 0, "passivate"))
		return ENVELOPE_PASSIVATE;
	if (term_is_atom(msg, 0, SN_ATOM_STATE))
		return ENVELOPE_PEEK;
	/* The region's own (a tell without sender); from anyone else, the
	 * entity's. */
	if (from == NULL && !is_call && term_is_atom(msg, 0, SN_ATOM_WAKE))
		return ENVELOPE_WAKE;
	return ENVELOPE_ENTITY;
}

/* Whether shard `shard` is hosted here now, for the parts that ask it
 * through a callback (the replicated store's fences, the hosted
 * entities' completions): `region` is a struct region. */
static inline bool region_serves(void *region, uint32_t shard)
{
	const struct region *r = region;
	return shard < r->cfg.number_of_shards && region_slot_hosted(&r->slots[shard].st);
}

/* Slot `shard` owes its step `bit` (SLOT_OWES_*): taken by
 * region_step_owed once the caller's work is done. The one way a part
 * other than the coordinator protocol marks a step owed. */
static inline void region_owe(struct region *r, uint32_t shard, uint8_t bit)
{
	r->slots[shard].owed |= bit;
	r->owed.slots = true;
}

/* A message handled here: counted by kind. */
static inline void region_count_handled(struct region *r, bool is_call)
{
	if (is_call)
		r->delivered.asks++;
	else
		r->delivered.tells++;
}

/* The loop's clock as entities see it (their last-activity stamps). */
static inline uint32_t region_now32(const struct region *r) { return (uint32_t)evloop_now_ms(r->cfg.loop); }

/* Whether `node` is in the region_set_downed list. */
static inline bool region_is_downed(const struct region *r, const char *node)
{
	return node_set_contains(&r->downed, node);
}

/* False while this node must not run entities (region_config.may_deliver),
 * or, for a type run on a host, while the host has not answered. */
static inline bool region_may_deliver(const struct region *r)
{
	/* A type run on a host also waits for the host's answer. */
	if (r->cfg.host != NULL && !r->cfg.host->ready(r->cfg.host->arg))
		return false;
	return r->cfg.may_deliver == NULL || r->cfg.may_deliver(r->cfg.may_deliver_arg);
}

/* A new empty shard of this region, under its active-entity limit if it
 * has one; NULL when out of memory. */
static inline struct shard *region_new_shard(struct region *r, uint32_t id)
{
	struct shard *s = shard_new(id, r->cfg.type);
	if (s != NULL && r->limit.on)
		shard_set_limit(s, &r->limit.lru);
	if (s != NULL && r->store != NULL)
		s->retired = &r->retired.now;
	return s;
}

#endif
