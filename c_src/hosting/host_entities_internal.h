/*
 * host_entities_internal.h — what the files of a region's hosted
 * entities (host_entities.h) share. Not for other modules.
 *
 *   host_health.c    the host's state: a leaving shard's processes ended,
 *                    the host's nodedown, the coordinator told
 *   host_entities.c  the messages: delivery, completions, crashes,
 *                    passivate and delete, a leaving shard's messages
 *                    taken back
 *
 * Calls run one way, down this list.
 */
#ifndef SN_HOST_ENTITIES_INTERNAL_H
#define SN_HOST_ENTITIES_INTERNAL_H

#include "base/scratch.h"
#include "hosting/host_entities.h"
#include "hosting/hosted_entity.h"

struct host_entities {
	struct host_entities_config cfg;
	/* Hooked on every hosted entity: it stops (host_entities.c). */
	struct hosted_entity_ops entity_ops;
	const char *stop_reason;
	/* host_health.c's: per shard, since when (the loop's clock, ms) its
	 * processes' end is awaited (0: not); whether any is; the node the
	 * last 'end' went to; the coordinator told region_leaving because the
	 * host is down; the host answered since the region started. */
	uint64_t *ending_since;
	bool slots_ending;
	bool away;
	bool answered_once;
	struct histogram process_latency;
	/* Reused encode buffers (scratch.h), as a region's are: the canonical
	 * ids of a message from the host (a batch's, all of them), and a
	 * completion's reply — one of each per completion on the hot path
	 * otherwise. */
	struct scratch canon_buf, reply_buf;
	/* A pid of the host as ei_encode_pid writes it (NEW_PID_EXT, the
	 * node's atom, then 12 bytes of number, serial and creation): the
	 * head is made once, the 12 bytes are written for each message. */
	char pid_bytes[1 + 3 + MAXATOMLEN_UTF8 + 12];
	size_t pid_len;
};

/* The record a hosted type keeps for each live entity. */
static inline struct hosted_entity *host_entities_record(struct entity *e) { return entity_state(e); }

/* The node every process of the entities runs on ("" if none). */
static inline const char *host_entities_node(const struct host_entities *h)
{
	return h->cfg.host->node ? h->cfg.host->node : "";
}

/* ---- host_entities.c, for host_health.c ---- */

/* The entity's process is its no longer (a report still on its way from
 * it is late). */
void host_entities_forget_process_only(struct hosted_entity *he);

/* The entity's process ended abnormally with `reason` (a term without
 * version byte): forgotten, its last completed state kept; the message it
 * had, if any, answered {error, {entity_crashed, Reason}} and released.
 * *had: whether one was in flight. Returns the mailbox's next message, now
 * in flight and not yet sent (NULL: none). */
struct remote_mailbox_item *host_entities_crashed(struct host_entities *h, uint32_t shard, struct hosted_entity *he,
					      const char *reason, size_t reason_len, bool *had);

/* Messages taken out of mailboxes, in order, for the front of a shard's
 * buffer. Zero-initialised: empty. */
struct take_back {
	struct remote_mailbox_item *head, *tail;
	uint32_t n;
};

/* entity_table_each's callback: appends the entity's mailbox (the message
 * at its process first) to the struct take_back `take_back`. */
void host_entities_take_entity_back(struct entity *ent, void *take_back);

/* The shard's processes have ended (or are waited for no more): ops.ended,
 * once. */
void host_entities_end_waited(struct host_entities *h, uint32_t shard);

#endif
