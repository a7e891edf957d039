/* metrics_page.c — see metrics_page.h. */
#include "app/metrics_page.h"

#include <errno.h>
#include <string.h>

#include "app/node_app.h"
#include "base/http_server.h"
#include "base/process_stats.h"
#include "base/prom_text.h"
#include "cluster/membership.h"
#include "dist/dist_node.h"
#include "sharding/coordinator.h"
#include "sharding/region.h"
#include "store/state_store.h"

/* Labels of one hosted type: type="name", and kind or the like added by
 * the caller. */
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

/* Every hosted type's region metrics, family by family (the format wants
 * a family's samples together). */
static void render_regions(struct prom_text *p, const struct node_app *app)
{
	struct region_metrics rm[NODE_TYPES_MAX];
	size_t n = 0;
	const char *names[NODE_TYPES_MAX];
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
	prom_family(p, "shardnode_messages_forwarded_total", "counter",
		    "Messages this node's region sent on to the region hosting their shard.");
	for (size_t k = 0; k < n; k++) {
		labels_of(&l, names[k], NULL, NULL);
		prom_u64(p, "shardnode_messages_forwarded_total", l.text, rm[k].stats.forwarded);
	}
	prom_family(p, "shardnode_reply_latency_seconds", "histogram",
		    "From the wakeup that took a message to its reply's send, for messages handled here.");
	for (size_t k = 0; k < n; k++) {
		labels_of(&l, names[k], NULL, NULL);
		prom_histogram(p, "shardnode_reply_latency_seconds", l.text, &rm[k].reply_latency);
	}
	prom_family(p, "shardnode_entities", "gauge", "Live entities on this node.");
	for (size_t k = 0; k < n; k++) {
		labels_of(&l, names[k], NULL, NULL);
		prom_u64(p, "shardnode_entities", l.text, rm[k].stats.entities);
	}
	prom_family(p, "shardnode_shards", "gauge", "Shards hosted on this node.");
	for (size_t k = 0; k < n; k++) {
		labels_of(&l, names[k], NULL, NULL);
		prom_u64(p, "shardnode_shards", l.text, rm[k].stats.shards);
	}
	prom_family(p, "shardnode_buffered_messages", "gauge",
		    "Messages waiting in this node's region for their shard's home (unknown, moving, loading).");
	for (size_t k = 0; k < n; k++) {
		labels_of(&l, names[k], NULL, NULL);
		prom_u64(p, "shardnode_buffered_messages", l.text, rm[k].stats.buffered);
	}
	prom_family(p, "shardnode_dropped_messages_total", "counter",
		    "Messages dropped: a full buffer (buffer_size), or not {EntityId, Msg}.");
	for (size_t k = 0; k < n; k++) {
		labels_of(&l, names[k], NULL, NULL);
		prom_u64(p, "shardnode_dropped_messages_total", l.text, rm[k].stats.dropped);
	}
	prom_family(p, "shardnode_handoffs_total", "counter", "Shards handed off from this node to another.");
	for (size_t k = 0; k < n; k++) {
		labels_of(&l, names[k], NULL, NULL);
		prom_u64(p, "shardnode_handoffs_total", l.text, rm[k].handoffs);
	}
	prom_family(p, "shardnode_handoff_duration_seconds", "histogram",
		    "From the coordinator's hand-off order to the shard stopped here.");
	for (size_t k = 0; k < n; k++) {
		labels_of(&l, names[k], NULL, NULL);
		prom_histogram(p, "shardnode_handoff_duration_seconds", l.text, &rm[k].handoff_duration);
	}
}

static void render_coordinators(struct prom_text *p, const struct node_app *app)
{
	struct coordinator_metrics cm[NODE_TYPES_MAX];
	const char *names[NODE_TYPES_MAX];
	size_t n = 0;
	for (size_t k = 0; k < app->nhosted; k++) {
		if (app->hosted[k].coordinator == NULL)
			continue;
		coordinator_get_metrics(app->hosted[k].coordinator, &cm[n]);
		names[n++] = app->hosted[k].name;
	}
	struct type_labels l;
	prom_family(p, "shardnode_coordinator_active", "gauge",
		    "1 where the type's coordinator (a cluster singleton on the oldest member) runs here.");
	for (size_t k = 0; k < n; k++) {
		labels_of(&l, names[k], NULL, NULL);
		prom_u64(p, "shardnode_coordinator_active", l.text, cm[k].active);
	}
	prom_family(p, "shardnode_rebalances_total", "counter", "Shard moves this node's coordinator started.");
	for (size_t k = 0; k < n; k++) {
		labels_of(&l, names[k], NULL, NULL);
		prom_u64(p, "shardnode_rebalances_total", l.text, cm[k].rebalances);
	}
	prom_family(p, "shardnode_rebalances_abandoned_total", "counter",
		    "Of those, moves given up after handoff_timeout_ms (the shard stays where it was).");
	for (size_t k = 0; k < n; k++) {
		labels_of(&l, names[k], NULL, NULL);
		prom_u64(p, "shardnode_rebalances_abandoned_total", l.text, cm[k].rebalances_abandoned);
	}
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
	prom_family(p, "shardnode_dist_connections_accepted_total", "counter", "Distribution connections accepted.");
	prom_u64(p, "shardnode_dist_connections_accepted_total", NULL, ds.connections_accepted);
	prom_family(p, "shardnode_dist_connections_refused_total", "counter",
		    "Distribution connections closed at accept: max_connections open.");
	prom_u64(p, "shardnode_dist_connections_refused_total", NULL, ds.connections_refused);
	prom_family(p, "shardnode_dist_bytes_total", "counter",
		    "Distribution bytes, by direction (inside TLS: the plaintext).");
	prom_u64(p, "shardnode_dist_bytes_total", "direction=\"in\"", ds.bytes_in);
	prom_u64(p, "shardnode_dist_bytes_total", "direction=\"out\"", ds.bytes_out);
	prom_family(p, "shardnode_dist_packets_total", "counter", "Distribution packets, by direction.");
	prom_u64(p, "shardnode_dist_packets_total", "direction=\"in\"", ds.packets_in);
	prom_u64(p, "shardnode_dist_packets_total", "direction=\"out\"", ds.packets_out);
	prom_family(p, "shardnode_dist_undeliverable_total", "counter",
		    "Messages from peers to names or pids that do not exist here.");
	prom_u64(p, "shardnode_dist_undeliverable_total", NULL, ds.undeliverable);
}

static void render_store(struct prom_text *p, const struct node_app *app)
{
	if (app->store == NULL)
		return;
	const struct state_store_metrics *m = state_store_get_metrics(app->store);
	prom_family(p, "shardnode_store_writes_total", "counter", "Entity-state writes queued for the store.");
	prom_u64(p, "shardnode_store_writes_total", NULL, m->writes);
	prom_family(p, "shardnode_store_commits_total", "counter", "Store commits (each covers the writes queued before it).");
	prom_u64(p, "shardnode_store_commits_total", NULL, m->commits);
	prom_family(p, "shardnode_store_commit_errors_total", "counter",
		    "Store commits that failed (their replies get store_unavailable).");
	prom_u64(p, "shardnode_store_commit_errors_total", NULL, m->commit_errors);
	prom_family(p, "shardnode_store_commit_latency_seconds", "histogram",
		    "From a commit's oldest write queued to the commit reported: what a held reply waits.");
	prom_histogram(p, "shardnode_store_commit_latency_seconds", NULL, &m->commit_latency);
}

static void render_self(struct prom_text *p, const struct node_app *app)
{
	struct http_server_stats hs = {0};
	if (app->metrics != NULL)
		http_server_get_stats(app->metrics, &hs);
	prom_family(p, "shardnode_metrics_scrapes_total", "counter", "Pages served by this endpoint.");
	prom_u64(p, "shardnode_metrics_scrapes_total", NULL, hs.pages);
	prom_family(p, "shardnode_metrics_renders_total", "counter",
		    "Pages rendered: scrapes within one millisecond share one rendering.");
	prom_u64(p, "shardnode_metrics_renders_total", NULL, hs.renders);
	prom_family(p, "shardnode_metrics_bad_requests_total", "counter",
		    "Requests this endpoint refused with 400 (malformed or oversized).");
	prom_u64(p, "shardnode_metrics_bad_requests_total", NULL, hs.bad_requests);
	prom_family(p, "shardnode_metrics_render_seconds", "gauge", "How long the previous page took to render.");
	prom_seconds(p, "shardnode_metrics_render_seconds", NULL, hs.last_render_ns);

	char labels[NODE_NAME_BUF + 64];
	size_t len = 0;
	labels[0] = '\0';
	(void)prom_label(labels, sizeof labels, &len, "node", app->cfg->name);
	(void)prom_label(labels, sizeof labels, &len, "log_level", log_level_name(log_get_level(&app->log)));
	prom_family(p, "shardnode_info", "gauge", "1, with the node's name and log level as labels.");
	prom_u64(p, "shardnode_info", labels, 1);
}

static void render_process(struct prom_text *p)
{
	struct process_stats ps;
	if (process_stats_read(&ps) != 0)
		return;
	prom_family(p, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
	prom_seconds(p, "process_cpu_seconds_total", NULL, ps.cpu_ns);
	prom_family(p, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
	prom_u64(p, "process_resident_memory_bytes", NULL, ps.resident_bytes);
	prom_family(p, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
	prom_u64(p, "process_virtual_memory_bytes", NULL, ps.virtual_bytes);
	prom_family(p, "process_open_fds", "gauge", "Number of open file descriptors.");
	prom_u64(p, "process_open_fds", NULL, ps.open_fds);
	prom_family(p, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
	prom_u64(p, "process_max_fds", NULL, ps.max_fds);
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
