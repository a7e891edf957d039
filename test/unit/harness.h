/*
 * harness.h — the stateful cores in one process, for unit tests: one event
 * loop, and per member a dist node (a real one, listening on 127.0.0.1 and
 * registered with epmd, so members connect with the real handshake), a
 * coordinator and a region of the built-in `counter` type, each member with
 * a store double (store_double.h) of its own or one shared by all. What
 * cluster_glue.c does for a running node — which coordinator is active,
 * which members own the type, where regions register — the test does by
 * hand, so it decides when a coordinator moves.
 *
 * A client process on member 0 sends calls and tells and keeps what comes
 * back; harness_run_until turns the loop until a condition holds or a
 * deadline passes (no sleeps).
 *
 * Everything here asserts (Criterion) instead of returning errors.
 */
#ifndef SN_HARNESS_H
#define SN_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

#include "base/evloop.h"
#include "base/log.h"
#include "distribution/dist_node.h"
#include "coordinator/coordinator.h"
#include "sharding/region.h"
#include "store/remember.h"
#include "entity/entity.h"
#include "host_double.h"
#include "store_double.h"

#define HARNESS_MAX_MEMBERS 3
#define HARNESS_MAX_REPLIES 4096

enum harness_store { HARNESS_NO_STORE, HARNESS_OWN_STORES, HARNESS_SHARED_STORE };

struct harness_options {
	size_t members;           /* 1..HARNESS_MAX_MEMBERS */
	uint32_t shards;          /* number_of_shards */
	enum harness_store store;
	uint32_t rebalance_interval_ms; /* 0: a long time (no rebalance unless asked) */
	uint32_t handoff_timeout_ms;    /* 0: 5000 */
	/* remember_entities: each member keeps the remembered ids of every
	 * shard in memory (store/remember.h without a directory), shared
	 * between members as on a running node (sharding/remember_share.h). */
	bool remember;
	/* state_replicas (with HARNESS_OWN_STORES): copies of each shard's
	 * records on other members, as the coordinator names them; 0: none. */
	uint32_t replicas;
	/* The type is written "in Erlang": its entities run as processes on
	 * a host, here an in-process stand-in (host_double.h) speaking the
	 * host protocol, as counters. */
	bool host;
	/* buffer_size; 0: 100000. */
	uint32_t buffer_size;
};

/* What a member's region sent, counted by its outlet (protocol/outlet.h)
 * on the way to the member's node's own. */
struct harness_sends {
	struct outlet node_out; /* dist_node_outlet of the member's node */
	uint64_t send, send_connected, reg_send, reply_to;
	uint64_t dead_letter; /* messages it dropped */
};

struct harness_member {
	char name[64];
	struct dist_node *node;
	struct harness_sends sends; /* every message of its region leaves through them */
	struct coordinator *coordinator;
	struct region *region;
	struct store_double *store; /* own, or the shared one; NULL without a store */
	struct remember *remember;  /* with opt.remember; NULL otherwise */
	bool may_deliver;           /* the quorum lease, as cluster_glue would say */
	bool dead;                  /* harness_kill'ed: nothing of it is left but its name */
};

/* A reply the client received: {Tag, Reply} of a call (tag >= 0) or a
 * tell's {counter, Id, Reply} (tag -1); `reply` is Reply's encoding (no
 * version byte). */
struct harness_reply {
	long tag;
	long value;    /* Reply as an integer, when it is one */
	bool is_int;
	char text[96]; /* Reply printed (ei_s_print_term), for messages */
};

struct harness {
	struct evloop *loop;
	struct logger log;
	struct harness_options opt;
	struct harness_member m[HARNESS_MAX_MEMBERS];
	struct store_double *shared;
	struct host_double *host;        /* with opt.host */
	struct entity_type hosted_type;  /* with opt.host: the regions' type */
	struct proc *client; /* on member 0 */
	struct harness_reply replies[HARNESS_MAX_REPLIES];
	size_t nreplies;
	long next_tag;
};

/* Starts the members, makes member 0's coordinator the active one with
 * every member an owner, and waits until each region is registered. */
void harness_start(struct harness *h, const struct harness_options *opt);

/* Frees every member (regions first, then coordinators, stores, nodes)
 * and the loop; LeakSanitizer (make unit) shows nothing is left. */
void harness_stop(struct harness *h);

/* Turns the loop until check(arg) is true (checked every millisecond and
 * before each wait) or `ms` pass. Returns whether it became true. */
bool harness_run_until(struct harness *h, bool (*check)(struct harness *h, void *arg), void *arg, uint32_t ms);

/* Turns the loop for about `ms` (to let what should not happen show). */
void harness_run_for(struct harness *h, uint32_t ms);

/* Sends {'$gen_call', {Client, Tag}, {Id, Msg}} to member `to`'s region,
 * with Id the integer `id` and Msg the atom `msg` (incr, get, delete...).
 * Returns the tag. */
long harness_call(struct harness *h, size_t to, long id, const char *msg);

/* Sends a call of the region's own, `request` an atom (graceful_shutdown,
 * get_region_stats), to member `to`'s region. Returns the tag. */
long harness_call_region(struct harness *h, size_t to, const char *request);

/* Sends {Id, Msg} from the client to member `to`'s region (a tell: the
 * reply comes as {counter, Id, Reply}). */
void harness_tell(struct harness *h, size_t to, long id, const char *msg);

/* The reply to `tag`, or NULL if none came yet. */
const struct harness_reply *harness_reply(const struct harness *h, long tag);

/* Waits up to `ms` for the reply to `tag`; asserts it came. */
const struct harness_reply *harness_await_reply(struct harness *h, long tag, uint32_t ms);

/* Makes `active` the active coordinator (the others not), with every
 * member an owner, and points every region at it (as a membership change
 * does in cluster_glue.c). */
void harness_move_coordinator(struct harness *h, size_t active);

/* Member i (not 0, which holds the client and the active coordinator)
 * dies as a crashed node does: its region, coordinator, node and own
 * store are gone (its store's records with them: a node's own disk is
 * not another's), and the others hear nodedown. Then what cluster_glue
 * does once it is downed: the coordinators' members are the others. */
void harness_kill(struct harness *h, size_t i);

/* The shard of integer entity id `id` (phash2 of the canonical id). */
uint32_t harness_shard_of(const struct harness *h, long id);

/* How many ids member `i` remembers, over every shard (opt.remember). */
size_t harness_remembered(const struct harness *h, size_t i);

/* Member `i`'s region's counters. */
struct region_stats harness_stats(const struct harness *h, size_t i);

#endif
