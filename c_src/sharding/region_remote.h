/*
 * region_remote.h — the messages of a type whose entities run as
 * processes on another node, the host (region_remote.c; docs/
 * architecture.md, "Entities written in Erlang and Elixir"). For the
 * files of a region only (region_internal.h says which may call which);
 * other modules use region.h.
 */
#ifndef SN_REGION_REMOTE_H
#define SN_REGION_REMOTE_H

#include "hosting/hosted_entity.h"
#include "sharding/region_internal.h"

/* Whether the region's entities run on a host (cfg.host is set). */
static inline bool region_remote_active(const struct region *r) { return r->cfg.host != NULL; }


/* Prepares the region's side of its hosted entities (their stop hook). */
void region_remote_init(struct region *r);

/* Gives `e` to its entity in hosted shard `s`: sent to the entity's
 * process (started through the host's dispatcher if it has none) when no
 * other message of the entity is in flight, else queued behind it. The
 * answer goes when the completion comes (region_remote_handle).
 * `passivate` and `delete` take their turn in the queue and are done here.
 * Without a host to send to, a message is answered
 * {error, host_unavailable}. */
void region_remote_deliver(struct region *r, struct shard *s, const struct envelope *e);

/* Starts the process of the live-to-be entity `id` (canonical) of hosted
 * shard `shard` without a message of anyone's: a remembered entity, or a
 * singleton's, runs from when its shard lands here, timers and all. The
 * process is woken by a message of the region's own, '$shardnode_wake',
 * which the entity's process completes without calling the module; it
 * takes its turn as any message does (after the entity's stored state is
 * loaded — the load starts at once — behind what was sent before it), and
 * an entity whose process
 * runs or is being started ignores it. Returns 0, or -ENOBUFS (the slot's
 * buffer is full: the next message starts the entity) or -ENOMEM. */
int region_remote_wake(struct region *r, uint32_t shard, const char *id, size_t id_len);

/* Takes a message from the host (term validated, no version byte): a
 * completion or a crash report. Returns false if it is neither (the hub
 * goes on with it); true if it was one — answered and acted on, or
 * dropped as late or unknown — with *shard the shard it concerned
 * (UINT32_MAX: none), whose slot may have something to resume. */
bool region_remote_handle(struct region *r, const char *term, size_t len, uint32_t *shard);

/* The shard leaves (its states are about to go to the new home, or it
 * stops): every message still at or queued for its entities' processes
 * goes back to the front of the slot's buffer, in order, to follow the
 * shard; a completion that comes later is dropped (the shard is no longer
 * hosted), so the new home applies those messages to the state it gets.
 * The processes end when the shard is freed. */
void region_remote_take_back(struct region *r, struct shard_slot *slot);





/* Why the processes of the entities stopped next end (sent to each as
 * {'$shardnode_stop', Reason}): "moved" while a shard leaves; NULL: the
 * default, passivation (or shutdown, once the region stopped). */
void region_remote_set_stop_reason(struct region *r, const char *reason);

/* ---- for region_remote_host.c ---- */

/* The record a hosted type keeps for each live entity. */
static inline struct hosted_entity *region_remote_hosted(struct entity *e) { return entity_state(e); }

/* Whether the live entity `e` (of a hosted type) has no message at its
 * process and none waiting for it: it may be passivated at once. */
bool region_remote_idle(const struct entity *e);

/* The node every process of the region's entities runs on ("" if none). */
static inline const char *region_remote_host_node(const struct region *r)
{
	return r->cfg.host->node ? r->cfg.host->node : "";
}

/* The message a mailbox item belongs to. */
#define REGION_REMOTE_PENDING_OF(it) ((struct pending *)((char *)(it) - offsetof(struct pending, in_mailbox)))

/* Messages taken out of mailboxes, in order, for the front of a slot's
 * buffer (region_buffer_push_front). Zero-initialised: empty. */
struct take_back {
	struct pending *head, *tail;
	uint32_t n;
};

/* entity_table_each's callback: appends the entity's mailbox (the message
 * at its process first) to the struct take_back `take_back`. */
void region_remote_take_entity_back(struct entity *ent, void *take_back);

/* Answers e with `reply` as a C entity's answer goes: after the commits
 * queued so far with a store, at once without. A wake is not answered. */
void region_remote_answer(struct region *r, uint32_t shard, const struct envelope *e, const ei_x_buff *reply);

/* The entity's process is its no longer (a report still on its way from
 * it is late). */
void region_remote_forget_process_only(struct hosted_entity *he);

/* The process ended: its successor starts from the state last completed
 * (without a store and without keep_state, none). */
void region_remote_forget_process(struct region *r, struct hosted_entity *he, bool keep_state);

/* The entity's process ended abnormally with `reason` (a term without
 * version byte): it is forgotten, its last completed state kept, and the
 * message it had, if any, is answered {error, {entity_crashed, Reason}}
 * and freed. *had: whether one was in flight. Returns the mailbox's next
 * message, now in flight and not yet sent (NULL: none); the caller sends
 * it or takes it back. */
struct remote_mailbox_item *region_remote_crashed(struct region *r, uint32_t shard, struct hosted_entity *he,
					       const char *reason, size_t reason_len, bool *had);

/* The shard's processes have ended (or are waited for no more): the
 * coordinator hears shard_stopped, once. */
void region_remote_end_waited(struct region *r, uint32_t shard);

#endif
