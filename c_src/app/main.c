/*
 * main.c — the shardnode executable: reads the configuration, becomes an
 * Erlang node, serves until SIGTERM/SIGINT or an admin `leave`, then
 * unregisters and exits 0. A bad flag or config value exits 2.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <ei.h>

#include "app/admin.h"
#include "app/config.h"
#include "sharding/coordinator.h"
#include "dist/dist_node.h"
#include "entity/entity_builtin.h"
#include "entity/entity_plugin.h"
#include "base/evloop.h"
#include "base/log.h"
#include "cluster/membership.h"
#include "sharding/region.h"
#include "store/remember.h"

/* One hosted entity type: its coordinator (active only on the oldest
 * member hosting the type) and its region. */
struct hosted_type {
	const struct entity_type *type;
	struct coordinator *coordinator;
	struct region *region;
	struct remember *remember; /* NULL: remember_entities is off */
};

struct app {
	struct evloop *loop;
	struct logger log;
	struct ev_timer leave_timer;
	bool leaving;
	bool proxy_only;
	uint64_t leave_deadline;
	uint32_t handoff_timeout_ms;
	const char *stop_reason;
	const char *self;
	struct membership *membership;
	struct hosted_type *hosted;
	size_t nhosted;
};

/* A region stopped by graceful_shutdown: this node no longer hosts its
 * type, so the coordinators stop waiting for that region's reports. */
static void on_region_stopped(void *arg, struct region *r)
{
	(void)r;
	struct app *app = arg;
	if (app->membership == NULL || app->proxy_only)
		return;
	const char *types[CONFIG_MAX_LIST];
	size_t n = 0;
	for (size_t k = 0; k < app->nhosted; k++)
		if (!region_stopped(app->hosted[k].region))
			types[n++] = app->hosted[k].type->name;
	membership_set_types(app->membership, types, n);
}

/* For regions: the members hosting a type. */
static size_t members_hosting(void *arg, const char *type, const char **out, size_t max)
{
	struct app *app = arg;
	return app->membership ? membership_nodes_with(app->membership, type, out, max) : 0;
}

/* Stops the first n hosted types: regions first (their entities stop and
 * the coordinators hear of it), then coordinators, then the remembered
 * entity stores (after their regions: the last changes are written). */
static void stop_hosted(struct hosted_type *hosted, size_t n)
{
	for (size_t j = 0; j < n; j++)
		region_free(hosted[j].region);
	for (size_t j = 0; j < n; j++) {
		coordinator_stop(hosted[j].coordinator);
		remember_close(hosted[j].remember);
	}
}

/* For regions: entities run only while this node holds a quorum lease. */
static bool may_deliver(void *arg)
{
	struct app *app = arg;
	return app->membership == NULL || membership_may_deliver(app->membership);
}

/* After any membership change: the coordinator of each type is active only
 * on the oldest up member hosting it, forgets proxies on downed members,
 * expects a report from every member owning shards (and keeps the regions
 * of joining members registered), and every region
 * registers with it, stops sending to downed members, gives members that
 * joined its remembered entities, and delivers what waited for a lease. */
static void on_membership_change(void *arg)
{
	struct app *app = arg;
	if (membership_self_down(app->membership)) {
		log_error(&app->log, "this node was marked down by the cluster: stopping");
		app->stop_reason = "downed";
		evloop_stop(app->loop);
	}
	for (size_t k = 0; k < app->nhosted; k++) {
		struct hosted_type *h = &app->hosted[k];
		const char *oldest = membership_oldest_with(app->membership, h->type->name);
		const char *nodes[256], *downed[256];
		size_t ndown = membership_downed(app->membership, downed, 256);
		if (region_set_downed(h->region, downed, ndown) != 0)
			log_warn(&app->log, "out of memory: region %s keeps an old list of downed members", h->type->name);
		size_t n = membership_nodes_with(app->membership, h->type->name, nodes, 256);
		const char *joining[256];
		size_t njoining = membership_joining_with(app->membership, h->type->name, joining, 256);
		if (h->coordinator != NULL) {
			/* Active first: a coordinator that is about to stand down must
			 * not start handoffs it will not see through. */
			coordinator_set_active(h->coordinator, oldest != NULL && strcmp(oldest, app->self) == 0);
			/* Downed proxies first: a handoff the next calls start must not
			 * wait for their acks. */
			coordinator_set_downed(h->coordinator, downed, ndown);
			coordinator_set_members(h->coordinator, nodes, n, joining, njoining);
			n = membership_leaving_with(app->membership, h->type->name, nodes, 256);
			coordinator_set_draining(h->coordinator, nodes, n);
		}
		region_set_coordinator_node(h->region, oldest);
		region_members_changed(h->region);
		region_resume(h->region);
	}
}

/* A graceful leave: the node is marked leaving, the coordinators move its
 * shards off with handoffs, and when it hosts none (or handoff_timeout_ms
 * has passed, or there is nobody to take them) it is marked exiting and
 * stops. Checked every 50 ms by leave_timer. */
static void on_leave_timer(struct evloop *loop, void *arg)
{
	struct app *app = arg;
	bool empty = true;
	for (size_t k = 0; k < app->nhosted; k++) {
		struct region_stats st;
		region_get_stats(app->hosted[k].region, &st);
		empty = empty && st.shards == 0;
	}
	bool alone = app->membership == NULL || membership_others(app->membership) == 0;
	if (empty || alone || evloop_now_ms(loop) >= app->leave_deadline) {
		if (!empty && !alone)
			log_warn(&app->log, "leaving with shards still here: handoff did not finish in time");
		if (app->membership != NULL)
			membership_exit(app->membership);
		evloop_stop(loop);
		return;
	}
	evloop_timer_start(loop, &app->leave_timer, 50);
}

static void leave_cluster(struct app *app, const char *why)
{
	if (app->leaving)
		return;
	app->leaving = true;
	app->stop_reason = why;
	app->leave_deadline = evloop_now_ms(app->loop) + app->handoff_timeout_ms;
	if (app->membership != NULL)
		membership_leave(app->membership);
	/* On the next turn, so a reply already queued (to `leave`) goes out. */
	evloop_timer_start(app->loop, &app->leave_timer, 0);
}

static void on_signal(struct evloop *loop, int fd, uint32_t events, void *arg)
{
	(void)events;
	struct app *app = arg;
	struct signalfd_siginfo si;
	if (read(fd, &si, sizeof si) != (ssize_t)sizeof si)
		return;
	if (app->leaving) {
		/* A second signal: stop now. */
		evloop_stop(loop);
		return;
	}
	leave_cluster(app, si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
}

/* --stop-on-stdin-eof: whoever started us holds the other end of stdin (the
 * Erlang wrapper's port); when it closes, that owner is gone, and a node
 * nobody supervises any more leaves the cluster rather than lingering. */
static void on_stdin(struct evloop *loop, int fd, uint32_t events, void *arg)
{
	(void)events;
	struct app *app = arg;
	char buf[512];
	ssize_t n = read(fd, buf, sizeof buf);
	if (n > 0 || (n < 0 && errno == EINTR))
		return; /* input is ignored */
	evloop_unwatch(loop, fd);
	leave_cluster(app, "stdin closed");
}

/* The admin answered `leave`. */
static void request_leave(void *arg)
{
	leave_cluster(arg, "leave requested");
}

int main(int argc, char **argv)
{
	static struct sn_config cfg; /* large (paths, lists); not on the stack */
	char err[CONFIG_ERR_BUF];
	/* Built-in types, then the plugins in priv/ beside the executable. */
	static struct entity_plugins plugins;
	struct logger startup_log = {.min_level = LOG_INFO, .out = stderr};
	char priv[PATH_MAX];
	if (entity_plugins_exe_dir(priv, sizeof priv) == 0)
		entity_plugins_load(&plugins, priv, entity_builtin_types(), &startup_log);
	const struct entity_type *known[CONFIG_MAX_LIST + 1];
	const char *known_names[CONFIG_MAX_LIST + 1];
	const char *builtin_names[CONFIG_MAX_LIST + 1];
	size_t nknown = 0;
	for (const struct entity_type *const *t = entity_builtin_types(); *t && nknown < CONFIG_MAX_LIST; t++) {
		builtin_names[nknown] = (*t)->name;
		known[nknown++] = *t;
	}
	builtin_names[nknown] = NULL;
	for (size_t k = 0; k < plugins.count && nknown < CONFIG_MAX_LIST; k++)
		known[nknown++] = plugins.types[k];
	for (size_t k = 0; k < nknown; k++)
		known_names[k] = known[k]->name;
	known_names[nknown] = NULL;
	config_defaults(&cfg);
	int rc = config_parse_args(&cfg, argc - 1, argv + 1, builtin_names, known_names, err);
	if (rc == 1)
		return 0;
	if (rc == 0)
		rc = config_resolve_cookie(&cfg, err);
	if (rc) {
		fprintf(stderr, "shardnode: %s\n", err);
		return 2;
	}

	struct app app = {.log = {.min_level = cfg.log_level, .out = stderr, .node = cfg.name}};
	ei_init();
	signal(SIGPIPE, SIG_IGN);
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	int sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);

	app.loop = evloop_new();
	if (app.loop == NULL || sigfd < 0) {
		log_error(&app.log, "cannot start the event loop: %s", strerror(errno));
		return 1;
	}
	ev_timer_init(&app.leave_timer, on_leave_timer, &app);
	evloop_watch(app.loop, sigfd, EPOLLIN, on_signal, &app);
	/* stdin stays blocking (it may be a terminal shared with the parent):
	 * it is read only when epoll says it is readable. If stdin was closed
	 * at start, fd 0 may now be something else, such as the signalfd. */
	if (cfg.stop_on_stdin_eof) {
		if (sigfd == STDIN_FILENO || fcntl(STDIN_FILENO, F_GETFD) < 0 ||
		    evloop_watch(app.loop, STDIN_FILENO, EPOLLIN, on_stdin, &app) != 0)
			log_warn(&app.log, "--stop-on-stdin-eof: stdin cannot be watched (closed, or a file); ignored");
	}

	struct dist_node_config ncfg = {
		.loop = app.loop,
		.log = &app.log,
		.name = cfg.name,
		.cookie = cfg.cookie,
		.port = cfg.port,
		.max_packet = cfg.max_message_bytes,
		.outq_max = cfg.outq_max_bytes,
		.outq_pause = cfg.outq_max_bytes / 8,
		.setup_ms = 7000,
		.ticktime_ms = cfg.net_ticktime * 1000u,
		.max_connections = cfg.max_connections,
	};
	struct dist_node *node = dist_node_start(&ncfg, &rc);
	if (node == NULL) {
		log_error(&app.log, "cannot start node %s: %s", cfg.name,
			  rc == -EADDRINUSE ? "the name is taken in epmd, or the port is in use" : strerror(-rc));
		return 1;
	}

	const char *types[CONFIG_MAX_LIST];
	for (size_t k = 0; k < cfg.ntypes; k++)
		types[k] = cfg.types[k];
	struct admin_config acfg = {
		.node = node, .log = &app.log, .types = types, .ntypes = cfg.ntypes,
		.proxy_only = cfg.proxy_only, .request_leave = request_leave, .leave_arg = &app,
	};
	struct admin *admin = admin_start(&acfg, &rc);
	if (admin == NULL) {
		log_error(&app.log, "cannot register the admin: %s", strerror(-rc));
		dist_node_free(node);
		return 1;
	}

	static struct hosted_type hosted[CONFIG_MAX_LIST];
	size_t nhosted = 0;
	for (size_t k = 0; k < cfg.ntypes; k++) {
		struct hosted_type *h = &hosted[nhosted];
		for (size_t t = 0; t < nknown; t++)
			if (strcmp(known[t]->name, cfg.types[k]) == 0)
				h->type = known[t];
		char coord_name[CONFIG_NAME_BUF + 32];
		snprintf(coord_name, sizeof coord_name, "shardnode_coordinator_%s", h->type->name);
		struct coordinator_config ccfg = {
			.node = node, .log = &app.log, .type_name = h->type->name, .name = coord_name,
			.nshards = cfg.number_of_shards, .loop = app.loop,
			.rebalance_interval_ms = cfg.rebalance_interval_ms,
			.rebalance_threshold = cfg.rebalance_threshold,
			.max_simultaneous_rebalance = cfg.max_simultaneous_rebalance,
			.handoff_timeout_ms = cfg.handoff_timeout_ms,
			.min_members = cfg.min_nr_of_members,
		};
		/* A proxy-only node never coordinates: the oldest member hosting
		 * the type does, and a proxy hosts nothing. */
		h->coordinator = cfg.proxy_only ? NULL : coordinator_start(&ccfg, &rc);
		if (!cfg.proxy_only && h->coordinator == NULL) {
			log_error(&app.log, "cannot start the %s coordinator: %s", h->type->name, strerror(-rc));
			goto start_failed;
		}
		if (cfg.remember_entities && !cfg.proxy_only) {
			h->remember = remember_open(cfg.data_dir, h->type->name, cfg.number_of_shards, &app.log, &rc);
			if (h->remember == NULL) {
				log_error(&app.log, "cannot open the remembered %s entities in %s: %s", h->type->name,
					  cfg.data_dir, strerror(-rc));
				coordinator_stop(h->coordinator);
				goto start_failed;
			}
		}
		struct region_config rcfg = {
			.node = node, .loop = app.loop, .log = &app.log, .type = h->type,
			.nshards = cfg.number_of_shards, .buffer_size = cfg.buffer_size,
			.retry_interval_ms = cfg.retry_interval_ms, .passivate_idle_ms = cfg.passivate_idle_after_ms,
			.coordinator_name = coord_name, .handoff_timeout_ms = cfg.handoff_timeout_ms,
			.proxy_only = cfg.proxy_only,
			.members_hosting = members_hosting, .members_arg = &app,
			.may_deliver = may_deliver, .may_deliver_arg = &app,
			.remember = h->remember,
			.on_stopped = on_region_stopped, .on_stopped_arg = &app,
		};
		h->region = region_start(&rcfg, &rc);
		if (h->region == NULL) {
			log_error(&app.log, "cannot start the %s region: %s", cfg.types[k], strerror(-rc));
			coordinator_stop(h->coordinator);
			remember_close(h->remember);
			goto start_failed;
		}
		nhosted++;
	}
	if (false) {
	start_failed:
		stop_hosted(hosted, nhosted);
		admin_stop(admin);
		dist_node_free(node);
		return 1;
	}

	/* Membership last: its first change places the coordinators. */
	const char *seeds[CONFIG_MAX_LIST];
	for (size_t k = 0; k < cfg.njoin; k++)
		seeds[k] = cfg.join[k];
	/* Members know a proxy-only node as hosting nothing. */
	const char *hosted_names[CONFIG_MAX_LIST];
	size_t nhosted_names = 0;
	for (size_t k = 0; k < nhosted && !cfg.proxy_only; k++)
		hosted_names[nhosted_names++] = hosted[k].type->name;
	app.self = dist_node_name(node);
	app.handoff_timeout_ms = cfg.handoff_timeout_ms;
	app.proxy_only = cfg.proxy_only;
	app.hosted = hosted;
	app.nhosted = nhosted;
	struct membership_config mcfg = {
		.node = node, .from = *admin_pid(admin), .loop = app.loop, .log = &app.log,
		.seeds = seeds, .nseeds = cfg.njoin, .types = hosted_names, .ntypes = nhosted_names,
		.gossip_interval_ms = cfg.heartbeat_interval_ms,
		.failure_timeout_ms = cfg.failure_timeout_ms, .stable_after_ms = cfg.stable_after_ms,
		.keep_majority = cfg.downing == DOWNING_KEEP_MAJORITY,
		.on_change = on_membership_change, .on_change_arg = &app,
	};
	app.membership = membership_start(&mcfg, &rc);
	if (app.membership == NULL) {
		log_error(&app.log, "cannot start membership: %s", strerror(-rc));
		goto start_failed;
	}
	admin_set_membership(admin, app.membership);
	on_membership_change(&app);
	log_info(&app.log, "node %s up: port %u, creation %u, types %zu%s", cfg.name, dist_node_port(node),
		 dist_node_creation(node), cfg.ntypes, cfg.proxy_only ? " (proxy only)" : "");
	rc = evloop_run(app.loop);
	if (rc)
		log_error(&app.log, "event loop failed: %s", strerror(-rc));

	log_info(&app.log, "stopping (%s)", app.stop_reason ? app.stop_reason : "loop ended");
	/* Membership still answers the regions as they stop (who hosts the
	 * type, for the last remembered-entity changes; whether a lease is
	 * held). */
	stop_hosted(hosted, nhosted);
	admin_set_membership(admin, NULL);
	membership_free(app.membership);
	app.membership = NULL;
	admin_stop(admin);
	dist_node_free(node);
	evloop_timer_stop(app.loop, &app.leave_timer);
	evloop_unwatch(app.loop, sigfd);
	close(sigfd);
	evloop_free(app.loop);
	entity_plugins_unload(&plugins);
	log_info(&app.log, "stopped");
	return rc ? 1 : 0;
}
