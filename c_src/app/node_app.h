/*
 * node_app.h — the running node as one object: it starts the parts in
 * order, runs the loop, and stops them in the reverse order.
 *
 * The parts, in the order they start: the event loop and the signal
 * descriptor (SIGTERM and SIGINT, blocked and read through a signalfd);
 * the distribution node (listener, epmd); the metrics endpoint
 * (metrics_port) with the health probes, which read every part there is
 * and answer from then on (while the node waits for its host's types too);
 * the admin (`net_kernel`, `shardnode`); for each hosted type its
 * coordinator (not on a proxy-only node), its remembered-entity store
 * (with remember_entities) and its region; and membership, whose first
 * change places the coordinators, and with join_dns the look-ups of its
 * seeds (dns_seeds.h).
 * How they work together while the node runs is cluster_glue.h's.
 *
 * What asks the node to stop (docs/contract.md): SIGTERM or SIGINT, stdin
 * closing with --stop-on-stdin-eof, or the admin's `leave`, each starting
 * the graceful leave (a second signal stops at once); and the cluster
 * marking the node down.
 */
#ifndef SN_NODE_APP_H
#define SN_NODE_APP_H

#include <stdbool.h>
#include <stddef.h>

#include "app/cluster_glue.h"
#include "app/config.h"
#include "app/host_link.h"
#include "base/evloop.h"
#include "base/node_limits.h"
#include "base/log.h"
#include "entity/entity.h"
#include "sharding/region.h"

struct admin;
struct dist_node;
struct membership;
struct http_server;
struct dns_seeds;

/* Held by the caller (it is large: one static object); the fields are
 * node_app.c's own. */
struct state_store;

struct node_app {
	const struct sn_config *cfg;
	struct logger log;
	struct evloop *loop;
	int sigfd;                   /* -1: not open */
	struct dist_node *node;
	struct dist_tls_ctx *tls;    /* tls_certfile and the rest set; NULL: plain TCP */
	struct admin *admin;
	struct state_store *store;   /* state_store = lmdb or postgres; NULL: memory */
	struct hosted_type hosted[NODE_TYPES_MAX];
	size_t nhosted;              /* started, or partly started, types */
	struct membership *membership;
	struct dns_seeds *dns_seeds; /* join_dns set; NULL: none */
	struct host_link *host_link; /* `host` set; NULL: none */
	/* The types written in Erlang (type_on_host[k]: on_host_types[k])
	 * and where their regions find the host. */
	struct entity_type on_host_types[NODE_TYPES_MAX];
	struct region_host region_host;
	struct http_server *metrics; /* metrics_port set; NULL: off */
	struct cluster_glue glue;
	/* The types hosted here: cfg->types, then, for a node started with
	 * `host` and no host types, those its host named in its first
	 * welcome (kept in named_by_host); type_on_host[k]: written in
	 * Erlang. The admin and membership keep pointers into type_names. */
	const char *type_names[NODE_TYPES_MAX];
	bool type_on_host[NODE_TYPES_MAX];
	size_t ntypes;
	char named_by_host[NODE_TYPES_MAX][CONFIG_NAME_BUF];
	bool awaiting_host_types;    /* the loop runs for the host's first welcome */
	bool host_wait_cancelled;    /* a signal came meanwhile */
	const char *seeds[CONFIG_MAX_LIST];      /* cfg->join */
	/* data_dir/members as found at start (NULL: none), which membership
	 * asks; remembered_names point into it. */
	struct members_record *remembered;
	const char *remembered_names[CLUSTER_MEMBERS_MAX];
	const char *hosted_names[NODE_TYPES_MAX];
	const char *singleton_names[NODE_TYPES_MAX], *singleton_types[NODE_TYPES_MAX]; /* cfg's */
	bool started;                /* node_app_start succeeded */
};

/* Builds the node of `cfg` (parsed, cookie resolved; not copied: it must
 * outlive the app, whose log lines name the node from it). `known` are the
 * nknown entity types cfg->types names come from (not owned; they must
 * outlive the app). Ignores SIGPIPE and blocks SIGTERM and SIGINT for the
 * process. With `host` and no host types it waits for the host to name
 * them (running the loop). Each failure is logged. Returns 0, -ECANCELED
 * (a signal, or the end of stdin with stop_on_stdin_eof, came while it
 * waited for the host: a stop, not a failure), or a negative errno (the
 * part that failed said why); either way node_app_stop must follow. */
int node_app_start(struct node_app *app, const struct sn_config *cfg, const struct entity_type *const *known,
		   size_t nknown);

/* Serves until the node stops (a leave done, a second signal, a down).
 * Returns 0, or the negative errno of a failed event loop. */
int node_app_run(struct node_app *app);

/* Stops and frees whatever node_app_start built, all of it or part: regions
 * first (while membership still answers them), then coordinators and
 * stores, membership, the admin (its names are unregistered), the node
 * (unregistered from epmd), the loop. Call it once, after node_app_start. */
void node_app_stop(struct node_app *app);

#endif
