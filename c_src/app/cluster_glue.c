/* cluster_glue.c — see cluster_glue.h. */
#include "app/cluster_glue.h"

#include <stdlib.h>
#include <string.h>

#include "app/config.h"
#include "base/node_limits.h"
#include "cluster/members_file.h"
#include "cluster/membership.h"
#include "coordinator/coordinator.h"
#include "sharding/region.h"

/* How often a leave looks whether its shards have gone. */
#define LEAVE_CHECK_MS 50

static bool left(void *arg);
static void on_left(void *arg, bool in_time);

void cluster_glue_init(struct cluster_glue *g, const struct cluster_glue_config *cfg)
{
	*g = (struct cluster_glue){.cfg = *cfg};
	poll_until_init(&g->leave_poll, cfg->loop, left, on_left, g);
}

void cluster_glue_set_hosted(struct cluster_glue *g, struct hosted_type *hosted, size_t n)
{
	g->hosted = hosted;
	g->nhosted = n;
}

void cluster_glue_set_membership(struct cluster_glue *g, struct membership *m) { g->membership = m; }

void cluster_glue_stop(struct cluster_glue *g)
{
	poll_until_stop(&g->leave_poll);
	free(g->members_written);
	g->members_written = NULL;
}

/* data_dir/members as the list is now, unless that is what it holds or
 * this node is not a member yet (while it joins, the file keeps the
 * members it is asking: a crash meanwhile must not forget them). A
 * failed write is said once (and tried again at the next change): the
 * node runs on, and only a restart would miss the file. */
static void remember_members(struct cluster_glue *g)
{
	if (g->cfg.data_dir == NULL || g->cfg.data_dir[0] == '\0')
		return;
	struct members_record *now = calloc(1, sizeof *now); /* zeroed: compared whole below */
	if (now == NULL)
		return;
	membership_remembered(g->membership, now);
	if (now->self_up_number == 0) {
		free(now);
		return;
	}
	struct members_record *was = g->members_written;
	bool same = was != NULL && was->self_up_number == now->self_up_number && was->n == now->n;
	for (size_t k = 0; same && k < now->n; k++)
		same = strcmp(was->nodes[k], now->nodes[k]) == 0;
	int rc = same ? 0 : members_file_write(g->cfg.data_dir, now);
	if (rc != 0 && !g->members_failed)
		log_warn(g->cfg.log, "cannot write %s/members: %s; a restart of this node may not find its cluster",
			 g->cfg.data_dir, strerror(-rc));
	g->members_failed = rc != 0;
	if (same || rc != 0) {
		free(now);
		return;
	}
	free(was);
	g->members_written = now;
}

/* One hosted type after a membership change: see the top of the header. A
 * singleton's parts follow the members hosting its type, as the type's do. */
static void apply_to_type(struct cluster_glue *g, struct hosted_type *h)
{
	struct membership *m = g->membership;
	const char *oldest = membership_oldest_with(m, h->type->name);
	const char *nodes[CLUSTER_MEMBERS_MAX], *downed[CLUSTER_MEMBERS_MAX], *joining[CLUSTER_MEMBERS_MAX];
	size_t ndown = membership_downed(m, downed, CLUSTER_MEMBERS_MAX);
	if (region_set_downed(h->region, downed, ndown) != 0)
		log_warn(g->cfg.log, "out of memory: region %s keeps an old list of downed members", h->name);
	size_t n = membership_nodes_with(m, h->type->name, nodes, CLUSTER_MEMBERS_MAX);
	size_t njoining = membership_joining_with(m, h->type->name, joining, CLUSTER_MEMBERS_MAX);
	if (h->coordinator != NULL) {
		/* Active first: a coordinator that is about to stand down must
		 * not start handoffs it will not see through. */
		coordinator_set_active(h->coordinator, oldest != NULL && strcmp(oldest, g->cfg.our_node) == 0);
		/* Downed proxies first: a handoff the next calls start must not
		 * wait for their acks. */
		coordinator_set_downed(h->coordinator, downed, ndown);
		coordinator_set_members(h->coordinator, nodes, n, joining, njoining);
		n = membership_leaving_with(m, h->type->name, nodes, CLUSTER_MEMBERS_MAX);
		coordinator_set_draining(h->coordinator, nodes, n);
	}
	region_set_coordinator_node(h->region, oldest, oldest ? membership_protocol_of(m, oldest) : 0);
	region_members_changed(h->region);
	region_resume(h->region);
}

void cluster_glue_membership_changed(void *glue)
{
	struct cluster_glue *g = glue;
	if (g->membership == NULL)
		return; /* a change while membership starts: applied once it is set */
	if (membership_self_down(g->membership)) {
		log_error(g->cfg.log, "this node was marked down by the cluster: stopping");
		g->stop_reason = "downed";
		evloop_stop(g->cfg.loop);
	}
	for (size_t k = 0; k < g->nhosted; k++)
		apply_to_type(g, &g->hosted[k]);
	remember_members(g);
}

size_t cluster_glue_members_hosting(void *glue, const char *type, const char **out, size_t max)
{
	struct cluster_glue *g = glue;
	return g->membership ? membership_nodes_with(g->membership, type, out, max) : 0;
}

bool cluster_glue_may_deliver(void *glue)
{
	struct cluster_glue *g = glue;
	return g->membership == NULL || membership_may_deliver(g->membership);
}

void cluster_glue_region_stopped(void *glue, struct region *r)
{
	(void)r;
	struct cluster_glue *g = glue;
	if (g->membership == NULL || g->cfg.proxy_only)
		return;
	const char *types[NODE_TYPES_MAX];
	size_t n = 0;
	for (size_t k = 0; k < g->nhosted && n < NODE_TYPES_MAX; k++)
		if (!g->hosted[k].singleton && !region_stopped(g->hosted[k].region))
			types[n++] = g->hosted[k].type->name;
	membership_set_types(g->membership, types, n);
}

/* The leave is over when no shard is left here, when nobody is left to
 * take them, or at the deadline; then the node is marked exiting and the
 * loop stops. */
static bool left(void *arg)
{
	struct cluster_glue *g = arg;
	bool empty = true;
	for (size_t k = 0; k < g->nhosted; k++) {
		struct region_stats st;
		region_get_stats(g->hosted[k].region, &st);
		empty = empty && st.shards == 0;
	}
	bool alone = g->membership == NULL || membership_others(g->membership) == 0;
	return empty || alone;
}

static void on_left(void *arg, bool in_time)
{
	struct cluster_glue *g = arg;
	if (!in_time)
		log_warn(g->cfg.log, "leaving with shards still here: handoff did not finish in time");
	if (g->membership != NULL)
		membership_exit(g->membership);
	evloop_stop(g->cfg.loop);
}

void cluster_glue_leave(struct cluster_glue *g, const char *why)
{
	if (g->leaving)
		return;
	g->leaving = true;
	g->stop_reason = why;
	if (g->membership != NULL)
		membership_leave(g->membership);
	/* The first look on the next turn, so a reply already queued (to
	 * `leave`) goes out. */
	if (poll_until_start(&g->leave_poll, 0, LEAVE_CHECK_MS, g->cfg.handoff_timeout_ms) != 0)
		on_left(g, false); /* no timer to wait with: leave now, as the deadline would */
}

void cluster_glue_request_leave(void *glue) { cluster_glue_leave(glue, "leave requested"); }

bool cluster_glue_leaving(const struct cluster_glue *g) { return g->leaving; }

const char *cluster_glue_stop_reason(const struct cluster_glue *g) { return g->stop_reason; }
