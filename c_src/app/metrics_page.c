/* metrics_page.c — see metrics_page.h. */
#include "app/metrics_page.h"

#include <errno.h>
#include <string.h>

#include "app/admin.h"
#include "app/node_app.h"
#include "app/version.h"
#include "cluster/member_protocol.h"
#include "base/http_server.h"
#include "base/process_stats.h"
#include "base/prom_text.h"
#include "cluster/membership.h"
#include "distribution/dist_node.h"
#include "coordinator/coordinator.h"
#include "sharding/region.h"
#include "store/state_store.h"

/* Labels of one hosted type: type="name", and a second pair when key is
 * not NULL. */
struct type_labels {
	char text[160];
	size_t len;
};

static void labels_of(struct type_labels *l, const char *type, const char *key, const char *value)
{
	l->len = 0;
	l->text[0] = '\0';
	(void)prom_label(l->text, sizeof l->text, &l->len, "type", type);
	if (key != NULL)
		(void)prom_label(l->text, sizeof l->text, &l->len, key, value);
}

/* A family of one sample without labels. */
static void single(struct prom_text *p, const char *name, const char *kind, const char *help, uint64_t value)
{
	prom_family(p, name, kind, help);
	prom_u64(p, name, NULL, value);
}

/* One family with a sample per type: values[k] of type names[k]. */
static void per_type(struct prom_text *p, const char *name, const char *kind, const char *help,
		     const char *const *names, const uint64_t *values, size_t n)
{
	struct type_labels l;
	prom_family(p, name, kind, help);
	for (size_t k = 0; k < n; k++) {
		labels_of(&l, names[k], NULL, NULL);
		prom_u64(p, name, l.text, values[k]);
	}
}

/* One histogram family with a histogram per type. */
static void per_type_histogram(struct prom_text *p, const char *name, const char *help, const char *const *names,
			       const struct histogram *const *h, size_t n)
{
	struct type_labels l;
	prom_family(p, name, "histogram", help);
	for (size_t k = 0; k < n; k++) {
		labels_of(&l, names[k], NULL, NULL);
		prom_histogram(p, name, l.text, h[k]);
	}
}

/* A counter family with a sample per reason of `drops`. */
static void by_reason(struct prom_text *p, const char *name, const char *help, const struct drop_log *drops)
{
	prom_family(p, name, "counter", help);
	for (size_t j = 0; j < drops->nreasons; j++) {
		char labels[64];
		size_t len = 0;
		labels[0] = '\0';
		(void)prom_label(labels, sizeof labels, &len, "reason", drops->reasons[j].reason);
		prom_u64(p, name, labels, drops->reasons[j].total);
	}
}

/* Every hosted type's region metrics, family by family (the format wants
 * a family's samples together). */
static void render_regions(struct prom_text *p, const struct node_app *app)
{
	struct region_metrics rm[NODE_TYPES_MAX];
	const char *names[NODE_TYPES_MAX];
	size_t n = 0;
	for (size_t k = 0; k < app->nhosted; k++) {
		if (app->hosted[k].region == NULL)
			continue;
		region_get_metrics(app->hosted[k].region, &rm[n]);
		names[n++] = app->hosted[k].name;
	}
	struct type_labels l;
	prom_family(p, "shardnode_messages_total", "counter",
		    "Messages handled by entities on this node, by type and kind (ask: a call, tell: a send).");
	for (size_t k = 0; k < n; k++) {
		labels_of(&l, names[k], "kind", "ask");
		prom_u64(p, "shardnode_messages_total", l.text, rm[k].asks);
		labels_of(&l, names[k], "kind", "tell");
		prom_u64(p, "shardnode_messages_total", l.text, rm[k].tells);
	}
	/* Zeroed: gcc cannot tell that only the first n are read. */
	uint64_t forwarded[NODE_TYPES_MAX] = {0}, entities[NODE_TYPES_MAX] = {0}, shards[NODE_TYPES_MAX] = {0},
		 buffered[NODE_TYPES_MAX] = {0}, dropped[NODE_TYPES_MAX] = {0}, handoffs[NODE_TYPES_MAX] = {0},
		 limited[NODE_TYPES_MAX] = {0}, loads[NODE_TYPES_MAX] = {0};
	const struct histogram *latency[NODE_TYPES_MAX] = {0}, *handoff_duration[NODE_TYPES_MAX] = {0},
			       *whole[NODE_TYPES_MAX] = {0};
	for (size_t k = 0; k < n; k++) {
		forwarded[k] = rm[k].stats.forwarded;
		entities[k] = rm[k].stats.entities;
		shards[k] = rm[k].stats.shards;
		buffered[k] = rm[k].stats.buffered;
		dropped[k] = rm[k].stats.dropped;
		handoffs[k] = rm[k].handoffs;
		limited[k] = rm[k].limit_passivations;
		loads[k] = rm[k].loads;
		latency[k] = &rm[k].reply_latency;
		whole[k] = &rm[k].whole_latency;
		handoff_duration[k] = &rm[k].handoff_duration;
	}
	per_type(p, "shardnode_messages_forwarded_total", "counter",
		 "Messages this node's region sent on to the region hosting their shard.", names, forwarded, n);
	per_type_histogram(p, "shardnode_reply_latency_seconds",
			   "From the wakeup that read a message to the flush that wrote its reply, for messages "
			   "handled here.",
			   names, latency, n);
	per_type_histogram(p, "shardnode_message_duration_seconds",
			   "From a message's arrival at the first member that took it from its sender to the flush "
			   "that wrote its reply here: waits in buffers (here and on members that forwarded it), store "
			   "loads and commits, replicas' acknowledgements included.",
			   names, whole, n);
	per_type(p, "shardnode_entities", "gauge", "Live entities on this node.", names, entities, n);
	per_type(p, "shardnode_shards", "gauge", "Shards hosted on this node.", names, shards, n);
	per_type(p, "shardnode_buffered_messages", "gauge",
		 "Messages waiting in this node's region for their shard's home (unknown, moving, loading).", names,
		 buffered, n);
	per_type(p, "shardnode_dropped_messages_total", "counter",
		 "Messages dropped: a full buffer (buffer_size), or not {EntityId, Msg}.", names, dropped, n);
	prom_family(p, "shardnode_unroutable_messages_total", "counter",
		    "Messages a region could not route, by type and reason (the first of each reason is logged).");
	for (size_t k = 0; k < n; k++) {
		for (size_t j = 0; j < rm[k].drops.nreasons; j++) {
			labels_of(&l, names[k], "reason", rm[k].drops.reasons[j].reason);
			prom_u64(p, "shardnode_unroutable_messages_total", l.text, rm[k].drops.reasons[j].total);
		}
	}
	per_type(p, "shardnode_limit_passivations_total", "counter",
		 "Entities passivated as the least recently used beyond max_active_entities.", names, limited, n);
	per_type(p, "shardnode_store_loads_total", "counter",
		 "Entity states read from the store: a message for an entity not live here.", names, loads, n);
	per_type(p, "shardnode_handoffs_total", "counter", "Shards handed off from this node to another.", names,
		 handoffs, n);
	per_type_histogram(p, "shardnode_handoff_duration_seconds",
			   "From the coordinator's hand-off order to the shard stopped here.", names, handoff_duration, n);
	/* Only the types written in Erlang or Elixir have processes to time. */
	const char *hosted_names[NODE_TYPES_MAX];
	const struct histogram *process[NODE_TYPES_MAX];
	size_t nh = 0;
	for (size_t k = 0; k < n; k++) {
		if (!rm[k].hosted)
			continue;
		hosted_names[nh] = names[k];
		process[nh++] = &rm[k].process_latency;
	}
	if (nh > 0)
		per_type_histogram(p, "shardnode_entity_process_seconds",
				   "For types written in Erlang or Elixir: from a message's sending to its entity's "
				   "process on the host to the completion's arrival here.",
				   hosted_names, process, nh);
}

static void render_coordinators(struct prom_text *p, const struct node_app *app)
{
	const char *names[NODE_TYPES_MAX];
	uint64_t active[NODE_TYPES_MAX], rebalances[NODE_TYPES_MAX], abandoned[NODE_TYPES_MAX];
	uint64_t missing[NODE_TYPES_MAX], waiting[NODE_TYPES_MAX];
	size_t n = 0;
	for (size_t k = 0; k < app->nhosted; k++) {
		if (app->hosted[k].coordinator == NULL)
			continue;
		struct coordinator_metrics cm;
		coordinator_get_metrics(app->hosted[k].coordinator, &cm);
		active[n] = cm.active;
		rebalances[n] = cm.rebalances;
		abandoned[n] = cm.rebalances_abandoned;
		missing[n] = cm.replicas_missing;
		waiting[n] = cm.shards_waiting;
		names[n++] = app->hosted[k].name;
	}
	per_type(p, "shardnode_coordinator_active", "gauge",
		 "1 where the type's coordinator (a cluster singleton on the oldest member) runs here.", names, active,
		 n);
	per_type(p, "shardnode_rebalances_total", "counter", "Shard moves this node's coordinator started.", names,
		 rebalances, n);
	per_type(p, "shardnode_rebalances_abandoned_total", "counter",
		 "Of those, moves given up after handoff_timeout_ms (the shard stays where it was).", names, abandoned,
		 n);
	per_type(p, "shardnode_shard_replicas_missing", "gauge",
		 "On the coordinator's node: replicas the shards lack (state_replicas less their complete ones).",
		 names, missing, n);
	per_type(p, "shardnode_shards_waiting", "gauge",
		 "On the coordinator's node: shards whose home was lost with no complete replica, waiting for a "
		 "member of their last replica set.", names, waiting, n);
}

static void render_members(struct prom_text *p, const struct node_app *app)
{
	if (app->membership == NULL)
		return;
	struct membership_counts mc;
	membership_count_by_status(app->membership, &mc);
	prom_family(p, "shardnode_members", "gauge", "Cluster members as this node sees them, by status.");
	for (size_t k = 0; k < MEMBERSHIP_STATUSES; k++) {
		char labels[64];
		size_t len = 0;
		labels[0] = '\0';
		(void)prom_label(labels, sizeof labels, &len, "status", mc.names[k]);
		prom_u64(p, "shardnode_members", labels, mc.counts[k]);
	}
}

static void render_dist(struct prom_text *p, const struct node_app *app)
{
	struct dist_node_stats ds;
	dist_node_get_stats(app->node, &ds);
	prom_family(p, "shardnode_dist_connections", "gauge",
		    "Distribution connections, by state (up: handshake done; setup: still shaking hands).");
	prom_u64(p, "shardnode_dist_connections", "state=\"up\"", ds.connections_up);
	prom_u64(p, "shardnode_dist_connections", "state=\"setup\"", ds.connections_open - ds.connections_up);
	single(p, "shardnode_dist_connections_accepted_total", "counter",
	       "Distribution connections accepted.", ds.connections_accepted);
	single(p, "shardnode_dist_connections_refused_total", "counter",
	       "Distribution connections closed at accept: max_connections open.", ds.connections_refused);
	prom_family(p, "shardnode_dist_bytes_total", "counter",
		    "Distribution bytes, by direction (inside TLS: the plaintext).");
	prom_u64(p, "shardnode_dist_bytes_total", "direction=\"in\"", ds.bytes_in);
	prom_u64(p, "shardnode_dist_bytes_total", "direction=\"out\"", ds.bytes_out);
	prom_family(p, "shardnode_dist_packets_total", "counter", "Distribution packets, by direction.");
	prom_u64(p, "shardnode_dist_packets_total", "direction=\"in\"", ds.packets_in);
	prom_u64(p, "shardnode_dist_packets_total", "direction=\"out\"", ds.packets_out);
	single(p, "shardnode_dist_undeliverable_total", "counter",
	       "Messages from peers to names or pids that do not exist here.", ds.undeliverable);
	by_reason(p, "shardnode_undeliverable_messages_total",
		  "Messages no process could take, by reason: unknown_name, unknown_pid (here), unreachable_peer "
		  "(to a node our connection attempts fail to reach).",
		  dist_node_drops(app->node));
	if (app->admin != NULL)
		by_reason(p, "shardnode_admin_dropped_messages_total",
			  "Messages to net_kernel or shardnode that are no call (not_a_call) or a call that cannot be "
			  "answered (malformed_call).",
			  admin_drops(app->admin));
}

static void render_store(struct prom_text *p, const struct node_app *app)
{
	if (app->store == NULL)
		return;
	const struct state_store_metrics *m = state_store_get_metrics(app->store);
	single(p, "shardnode_store_writes_total", "counter", "Entity-state writes queued for the store.", m->writes);
	single(p, "shardnode_store_commits_total", "counter",
	       "Store commits (each covers the writes queued before it).", m->commits);
	single(p, "shardnode_store_commit_errors_total", "counter",
	       "Store commits that failed (their replies get store_unavailable).", m->commit_errors);
	prom_family(p, "shardnode_store_commit_latency_seconds", "histogram",
		    "From a commit's oldest write queued to the commit reported: what a held reply waits.");
	prom_histogram(p, "shardnode_store_commit_latency_seconds", NULL, &m->commit_latency);
}

static void render_self(struct prom_text *p, const struct node_app *app)
{
	struct http_server_stats hs = {0};
	if (app->metrics != NULL)
		http_server_get_stats(app->metrics, &hs);
	single(p, "shardnode_metrics_scrapes_total", "counter", "Pages served by this endpoint.", hs.pages);
	single(p, "shardnode_metrics_renders_total", "counter",
	       "Pages rendered: scrapes within one millisecond share one rendering.", hs.renders);
	single(p, "shardnode_metrics_bad_requests_total", "counter",
	       "Requests this endpoint refused with 400 (malformed or oversized).", hs.bad_requests);
	prom_family(p, "shardnode_metrics_render_seconds", "gauge", "How long the previous page took to render.");
	prom_seconds(p, "shardnode_metrics_render_seconds", NULL, hs.last_render_ns);

	char labels[NODE_NAME_BUF + 96];
	size_t len = 0;
	labels[0] = '\0';
	(void)prom_label(labels, sizeof labels, &len, "node", app->cfg->name);
	(void)prom_label(labels, sizeof labels, &len, "log_level", log_level_name(log_get_level(&app->log)));
	(void)prom_label(labels, sizeof labels, &len, "version", SHARDNODE_VERSION);
	(void)prom_label(labels, sizeof labels, &len, "protocol", MEMBER_PROTOCOL_TEXT);
	prom_family(p, "shardnode_info", "gauge",
		    "1, with the node's name, log level, version and member protocol as labels.");
	prom_u64(p, "shardnode_info", labels, 1);
}

static void render_process(struct prom_text *p)
{
	struct process_stats ps;
	if (process_stats_read(&ps) != 0)
		return;
	prom_family(p, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
	prom_seconds(p, "process_cpu_seconds_total", NULL, ps.cpu_ns);
	single(p, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", ps.resident_bytes);
	single(p, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", ps.virtual_bytes);
	single(p, "process_open_fds", "gauge", "Number of open file descriptors.", ps.open_fds);
	single(p, "process_max_fds", "gauge", "Maximum number of open file descriptors.", ps.max_fds);
	if (ps.start_time_s != 0) {
		prom_family(p, "process_start_time_seconds", "gauge",
			    "Start time of the process since unix epoch in seconds.");
		prom_u64(p, "process_start_time_seconds", NULL, ps.start_time_s);
	}
}

int metrics_page_render(void *arg, struct bytebuf *out)
{
	const struct node_app *app = arg;
	struct prom_text p = {.out = out};
	render_regions(&p, app);
	render_coordinators(&p, app);
	render_members(&p, app);
	render_dist(&p, app);
	render_store(&p, app);
	render_self(&p, app);
	render_process(&p);
	return p.err;
}
