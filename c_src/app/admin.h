/*
 * admin.h — the node's two system processes that BEAM peers call by name:
 *
 *   net_kernel  answers {is_auth, Node} with `yes`, so net_adm:ping/1 works.
 *   shardnode   the admin of docs/contract.md, "Registered names": members, shard_types, {coordinator, T},
 *               {down, Node}, leave, log_level, {set_log_level, L}; anything else gets
 *               {error, {bad_request, Request}}. It also receives the
 *               members' join and gossip messages (membership.h).
 *
 * Other messages that are not '$gen_call's are ignored (logged at debug level).
 */
#ifndef SN_ADMIN_H
#define SN_ADMIN_H

#include <stdbool.h>
#include <stddef.h>

#include "etf/drop_log.h"
#include "base/evloop.h"
#include "distribution/dist_node.h"
#include "base/log.h"

struct admin_config {
	struct dist_node *node;       /* not owned */
	struct evloop *loop;          /* not owned: the drops' summary timer runs on it */
	const struct logger *log;     /* not owned */
	struct logger *levels;        /* not owned: the root logger whose level set_log_level changes */
	const char *const *types;     /* hosted entity types; not owned */
	size_t ntypes;
	bool proxy_only;
	/* The node's max_message_bytes, in its sys:get_state: the Erlang
	 * client refuses a call it could not take without sending it. */
	uint32_t max_message_bytes;
	/* The cluster singletons: names and their types; not owned. */
	const char *const *singleton_names;
	const char *const *singleton_types;
	size_t nsingletons;
	/* Called after `leave` has been answered: start the graceful leave. */
	void (*request_leave)(void *arg);
	void *leave_arg;
};

struct admin;
struct membership;

/* Registers net_kernel and shardnode. Returns the admin, or NULL with *err
 * (-EEXIST if a name is taken, -ENOMEM). */
struct admin *admin_start(const struct admin_config *cfg, int *err);

/* The member list the admin reports and feeds gossip to (NULL: none yet). */
void admin_set_membership(struct admin *a, struct membership *m);

/* The pid of the `shardnode` process. */
const erlang_pid *admin_pid(const struct admin *a);

/* The messages net_kernel and shardnode dropped (not a call, or a call
 * that cannot be answered), by reason, for the metrics page. Borrowed. */
const struct drop_log *admin_drops(const struct admin *a);

/* Unregisters both names (their monitors get `normal`) and frees the admin. */
void admin_free(struct admin *a);

#endif
