/*
 * host_link.h — this C node's link to the BEAM node that hosts its
 * entities written in Erlang (the `host` setting; docs/architecture.md,
 * "Entities written in Erlang and Elixir"): it introduces the node with a
 * hello until the host answers, and from then on renews, on every tick, how
 * long the host may run this node's entities — its quorum lease less a
 * margin for the message's way. When the host goes down it says hello
 * again until the host is back. The regions of the types it hosts send
 * their entities' first messages to the dispatcher it names
 * (host_link_dispatcher).
 *
 * Runs on the loop's thread; nothing here blocks.
 */
#ifndef SN_HOST_LINK_H
#define SN_HOST_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

#include "base/evloop.h"
#include "base/log.h"
#include "distribution/dist_node.h"
#include "hosting/host_entities.h"

struct host_link;

struct host_link_config {
	struct dist_node *node;   /* not owned */
	struct evloop *loop;      /* not owned */
	const struct logger *log; /* not owned */
	const char *host;         /* NAME@HOST; copied */
	uint32_t tick_ms;         /* hello retries and lease renewals */
	/* The quorum lease's end on evloop_clock_ms's clock, UINT64_MAX for
	 * none (membership_lease_until); NULL: none. */
	uint64_t (*lease_until)(void *arg);
	void *lease_arg;
	/* Taken off what is left of the lease: the most a renewal may take to
	 * reach the host. */
	uint32_t margin_ms;
	/* Called when the host answers (at first, and after it was down):
	 * what waited for it may go. NULL: nobody waits. */
	void (*on_welcome)(void *arg);
	void *on_welcome_arg;
	/* Called when the host names its types (in every welcome, and when
	 * they change): host_link_types has them. NULL: nobody listens. */
	void (*on_types)(void *arg);
	void *on_types_arg;
};

/* Spawns the link's process and says hello at once. Returns the link, or
 * NULL with *err -EINVAL (a host that is no NAME@HOST) or -ENOMEM. */
struct host_link *host_link_start(const struct host_link_config *cfg, int *err);

/* Stops the timer, leaves the process and frees the link. NULL: nothing. */
void host_link_free(struct host_link *h);

/* Whether the host has answered (and not gone down since). */
bool host_link_welcomed(const struct host_link *h);

/* The most types a welcome's list is read for, and the longest name. */
#define HOST_LINK_TYPES_MAX 64
#define HOST_LINK_TYPE_BUF 256

/* The types the host named in its last welcome (those it was given with
 * shardnode:host_entities/1), at most HOST_LINK_TYPES_MAX: their names
 * into names[0..max), valid until the next welcome. Returns how many (0
 * before the first welcome). */
size_t host_link_types(const struct host_link *h, const char **names, size_t max);

/* The host's dispatcher for this node: true with *out set once the host
 * has answered (and not gone down since), false before. */
bool host_link_dispatcher(const struct host_link *h, erlang_pid *out);

/* What the regions of the types the host runs ask of it
 * (host_entities.h): its dispatcher, whether it answered, the turn's
 * batch — of the link at *link, NULL while there is none (no host, or
 * not started yet). `node`: the host's name, borrowed. */
struct region_host host_link_region_host(struct host_link *const *link, const char *node);

/* One item for the host's dispatcher, sent with the others of this loop
 * turn in one message by host_link_batch_send, which the owner calls as
 * the turn's output is written (dist_node_set_flushing; host_batch.h),
 * or earlier past a size: the buffer to
 * append it to with a host_msg_encode_item_*, then host_link_batch_end
 * (ok: it is whole). NULL when the host takes no batches (it has not
 * offered them: a host of an older release, or not answered yet), or
 * memory ran out: the caller sends its message on its own. */
ei_x_buff *host_link_batch_begin(struct host_link *h);
void host_link_batch_end(struct host_link *h, bool ok);

/* Sends what the batch holds now: at the end of the turn, and before a
 * message sent on its own that must come after it. */
void host_link_batch_send(struct host_link *h);

#endif
