/*
 * host_entities.h — a type's entities run as processes on a host (a type
 * written in Erlang or Elixir; docs/architecture.md, "Entities written in
 * Erlang and Elixir"): an entity kind whose handling completes later, when
 * its process's completion comes back.
 *
 * Each live entity's record in its shard (hosted_entity.h) holds the
 * state it last completed with, its process and its mailbox
 * (remote_mailbox.h): one message at the process, the others queued in
 * order. A message goes to the host's dispatcher with the state to start
 * from when the entity has no process, else straight to the process; its
 * completion comes back (host_entities_handle), the changed state is kept
 * and the reply leaves through the region; then the next queued message
 * goes. `passivate` and `delete` take their turn and are done here.
 *
 * The host's health is here too (host_health.c): a leaving shard's
 * processes ended through the dispatcher before the coordinator may name
 * a new home, the host's nodedown (every process gone), and the
 * coordinator told to move the shards away while the host is down.
 *
 * The region owns the messages: each is its queued message with a
 * struct remote_mailbox_item inside, whose view (id, message, kind,
 * shard) the region fills; everything the region does for its hosted
 * entities — answering, keeping a state in its store, its buffers, its
 * coordinator — it offers through struct host_region_ops. Nothing here
 * includes the region. Everything runs on the loop's thread.
 */
#ifndef SN_HOST_ENTITIES_H
#define SN_HOST_ENTITIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

#include "base/evloop.h"
#include "base/histogram.h"
#include "base/log.h"
#include "entity/shard.h"
#include "hosting/remote_mailbox.h"

/* The host a region's entities run on (region_config.host). */
struct region_host {
	/* The host's dispatcher for this node, which starts entity processes:
	 * true with *out set, false while the host has not answered (or went
	 * down). */
	bool (*dispatcher)(void *arg, erlang_pid *out);
	/* Whether the host has answered (dispatcher would give one): until it
	 * has, the type's messages wait in their shards' buffers, as they do
	 * without a quorum lease; region_resume delivers them. */
	bool (*ready)(void *arg);
	/* Where the messages for the host go in one a loop turn: the buffer
	 * to append one item to (host_msg_encode_item_*), then batch_end (ok:
	 * it is whole); NULL when the host takes no batches: each message is
	 * sent on its own. batch_send sends what is gathered now, so that a
	 * message sent on its own comes after it. All three NULL: no batches. */
	ei_x_buff *(*batch_begin)(void *arg);
	void (*batch_end)(void *arg, bool ok);
	void (*batch_send)(void *arg);
	void *arg;
	/* The host's node name (NAME@HOST): its nodedown ends every process
	 * of the type's entities. Not owned; outlives the region. */
	const char *node;
};

/* What the in-flight count of a shard (the region's slot) does: a
 * message went to a process, one came back, or all did. */
enum host_flight { HOST_FLIGHT_SENT, HOST_FLIGHT_BACK, HOST_FLIGHT_ALL_BACK };

/* What the region does for its hosted entities. All required. */
struct host_region_ops {
	/* Answers the message of `item` (of `shard`) with `reply` (a term, no
	 * version byte) as a C entity's answer goes: after the commits queued
	 * so far with a store, at once without; counted as handled. A wake
	 * (HOSTED_WAKE) is not answered. The item stays the caller's. */
	void (*answer)(void *arg, uint32_t shard, struct remote_mailbox_item *item, const ei_x_buff *reply);
	/* Frees the message `item` is part of. */
	void (*release)(void *arg, struct remote_mailbox_item *item);
	/* Whether the entities' states are kept in a store: a process's
	 * successor then starts from the stored state. */
	bool (*stored)(void *arg);
	/* Keeps the entity's changed state (a term, no version byte; NULL:
	 * deleted) in the store. Returns 0 (also without a store), or -ENOMEM
	 * or the store's error: the change is not kept. */
	int (*keep)(void *arg, uint32_t shard, const char *id, size_t id_len, const char *state, size_t len);
	/* The shard's count of entities with a message at their process. */
	void (*in_flight)(void *arg, uint32_t shard, enum host_flight what);
	/* `n` messages taken out of mailboxes (a list linked by next, in
	 * order) go back to the front of the shard's buffer — or, once the
	 * region stopped, are refused as its buffer's are. */
	void (*give_back)(void *arg, uint32_t shard, struct remote_mailbox_item *items, uint32_t n);
	/* The shard's entities here (hosted, or leaving and not yet freed),
	 * or NULL; and whether it is hosted here now (a completion for a shard
	 * that is not is late). */
	struct shard *(*shard_at)(void *arg, uint32_t shard);
	bool (*serves)(void *arg, uint32_t shard);
	/* The shard's processes have ended (or are waited for no more): the
	 * coordinator hears shard_stopped. */
	void (*ended)(void *arg, uint32_t shard);
	/* Whether the coordinator is to hear of the host's state now
	 * (registered, not a proxy, neither stopped nor leaving). */
	bool (*may_tell)(void *arg);
	/* region_back (up) or region_leaving to the coordinator. */
	void (*tell)(void *arg, bool up);
	/* Whether the region has stopped (the processes then end with
	 * `shutdown`). */
	bool (*stopped)(void *arg);
	/* Sends a message (encoded, version byte included). 0 or -errno. */
	int (*send)(void *arg, const erlang_pid *to, const char *buf, size_t len);
	void *arg;
};

struct host_entities_config {
	const struct region_host *host; /* not owned; outlives it */
	struct evloop *loop;
	const struct logger *log;
	const char *name;               /* the region's, for logs (borrowed) */
	const char *type;               /* the type's name, in start messages (borrowed) */
	erlang_pid region;              /* completions are sent to it */
	uint32_t number_of_shards;
	uint32_t handoff_timeout_ms;    /* a confirmation of ended processes waited for at most */
	bool metrics;                   /* time each message at its process */
	struct host_region_ops ops;
};

struct host_entities;

/* A region's hosted entities. Returns NULL with *err -ENOMEM. */
struct host_entities *host_entities_new(const struct host_entities_config *cfg, int *err);

/* NULL is ignored. The entities themselves are the shards'. */
void host_entities_free(struct host_entities *h);

/* The message `item` (its view filled, its shard s->id) for its entity
 * in hosted shard `s`: sent to the entity's process (started through the
 * dispatcher if it has none) when no other message of the entity is in
 * flight, else queued behind it; answered when the completion comes.
 * `passivate` and `delete` take their turn and are done here; a wake of
 * an entity whose process runs or is being started is dropped. Without a
 * host to send to, the message is answered {error, host_unavailable}.
 * The item is the region's until it is answered and released. */
void host_entities_deliver(struct host_entities *h, struct shard *s, struct remote_mailbox_item *item);

/* A message from the host (term validated, no version byte): a
 * completion, a crash report, processes ended, or a batch of them
 * ({'$shardnode_batch', [Msg]}, handled in order). Returns false if it is
 * none of them; true if it was one — acted on, or dropped as late. After
 * each completion or crash report of an entity here, settled(arg, shard)
 * is called with its shard, whose slot may have something to resume. */
bool host_entities_handle(struct host_entities *h, const char *term, size_t len,
			  void (*settled)(void *arg, uint32_t shard), void *arg);

/* Shard `shard` leaves (its states go to the new home, or it stops):
 * every message at or queued for its entities' processes goes back to
 * the front of its buffer, in order; a completion that comes later is
 * dropped, so the new home applies those messages to the state it gets. */
void host_entities_take_back(struct host_entities *h, uint32_t shard);

/* Why the processes of the entities stopped next end ({'$shardnode_stop',
 * Reason}): "moved" while a shard leaves; NULL: passivation (shutdown
 * once the region stopped). `reason` static. */
void host_entities_set_stop_reason(struct host_entities *h, const char *reason);

/* Whether live entity `e` has no message at its process and none waiting:
 * it may be passivated at once. */
bool host_entities_idle(const struct entity *e);

/* With cfg.metrics: from a message's sending to its process to its
 * completion's arrival, on the loop's clock. */
const struct histogram *host_entities_process_latency(const struct host_entities *h);

/* ---- the host's health (host_health.c) ---- */

/* Whether the host has not answered or is down: nothing can be delivered
 * to the entities here now. */
bool host_entities_host_down(const struct host_entities *h);

/* The shard left and its entities are about to be freed: their processes
 * are ended through the dispatcher, which confirms once they all have.
 * True if that confirmation is awaited (ops.ended follows it, the host's
 * nodedown, or handoff_timeout_ms); false: no process to wait for. */
bool host_entities_end_processes(struct host_entities *h, uint32_t shard);

/* A node went down. If it is the host, every process ended with it: a
 * message one was handling is answered {error, {entity_crashed,
 * noconnection}}, those queued behind go back to their shard's buffer,
 * the states last completed stay, and no shard waits for its processes
 * to end any more. Returns true if `peer` was the host. */
bool host_entities_on_nodedown(struct host_entities *h, const char *peer);

/* Tells the coordinator what the host's state means, when that changed
 * (or, `registered_anew`, in any case): region_leaving while the host is
 * down, region_back once it answers. */
void host_entities_check_host(struct host_entities *h, bool registered_anew);

/* The retry timer: a confirmation not come within handoff_timeout_ms is
 * waited for no more. */
void host_entities_tick(struct host_entities *h);

#endif
