/* node_app.c — see node_app.h. */
#include "app/node_app.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <ei.h>

#include "app/admin.h"
#include "app/config_describe.h"
#include "app/host_link.h"
#include "hosting/hosted_entity.h"
#include "app/dns_seeds.h"
#include "app/health.h"
#include "app/metrics_page.h"
#include "app/remembered.h"
#include "entity/entity_type.h"
#include "base/http_server.h"
#include "cluster/members_file.h"
#include "cluster/membership.h"
#include "distribution/dist_node.h"
#include "protocol/dist_tls.h"
#include "coordinator/coordinator.h"
#include "sharding/region.h"
#include "store/state_lmdb.h"
#include "store/state_pg.h"
#include "store/remember.h"

/* The metrics endpoint's limits (base/http_server.h): scrapers open at
 * once, the time a client has to send a whole request (and to take its
 * response), and the bytes of a request head. */
#define METRICS_MAX_CONNECTIONS 1024
#define METRICS_REQUEST_TIMEOUT_MS 10000
#define METRICS_MAX_HEAD 8192

/* A failed call that left errno unset still fails. */
static int neg_errno(int e) { return e > 0 ? -e : -EIO; }

/* A signal starts the graceful leave; a second one stops at once. */
static void on_signal(struct evloop *loop, int fd, uint32_t events, void *arg)
{
	(void)events;
	struct node_app *app = arg;
	struct signalfd_siginfo si;
	if (read(fd, &si, sizeof si) != (ssize_t)sizeof si)
		return;
	if (app->awaiting_host_types) {
		/* Nothing of the cluster runs yet: there is nothing to leave. */
		app->host_wait_cancelled = true;
		evloop_stop(loop);
		return;
	}
	if (cluster_glue_leaving(&app->glue)) {
		evloop_stop(loop);
		return;
	}
	cluster_glue_leave(&app->glue, si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
}

/* --stop-on-stdin-eof: whoever started us holds the other end of stdin (the
 * Erlang wrapper's port); when it closes, that owner is gone, and a node
 * nobody supervises any more leaves the cluster rather than lingering. */
static void on_stdin(struct evloop *loop, int fd, uint32_t events, void *arg)
{
	(void)events;
	struct node_app *app = arg;
	char buf[512];
	ssize_t n = read(fd, buf, sizeof buf);
	if (n > 0 || (n < 0 && errno == EINTR))
		return; /* input is ignored */
	evloop_unwatch(loop, fd);
	if (app->awaiting_host_types) {
		app->host_wait_cancelled = true; /* nothing of the cluster runs yet */
		evloop_stop(loop);
		return;
	}
	cluster_glue_leave(&app->glue, "stdin closed");
}

/* The process's signals, the event loop, and what it watches before the
 * node exists. */
static int start_loop(struct node_app *app)
{
	ei_init();
	signal(SIGPIPE, SIG_IGN);
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	/* Before the loop's own descriptor: with stdin closed at start, fd 0
	 * is then the signalfd, which the stdin check below recognises. */
	app->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	app->loop = evloop_new();
	if (app->loop == NULL || app->sigfd < 0) {
		int rc = neg_errno(errno);
		log_error(&app->log, "cannot start the event loop: %s", strerror(-rc));
		return rc;
	}
	/* A node deaf to SIGTERM could not leave gracefully: refuse to start. */
	int rc = evloop_watch(app->loop, app->sigfd, EPOLLIN, on_signal, app);
	if (rc != 0) {
		log_error(&app->log, "cannot watch for signals: %s", strerror(-rc));
		return rc;
	}
	/* stdin stays blocking (it may be a terminal shared with the parent):
	 * it is read only when epoll says it is readable. If stdin was closed
	 * at start, fd 0 may now be something else, such as the signalfd. */
	if (app->cfg->stop_on_stdin_eof) {
		if (app->sigfd == STDIN_FILENO || fcntl(STDIN_FILENO, F_GETFD) < 0 ||
		    evloop_watch(app->loop, STDIN_FILENO, EPOLLIN, on_stdin, app) != 0)
			log_warn(&app->log, "--stop-on-stdin-eof: stdin cannot be watched (closed, or a file); ignored");
	}
	return 0;
}

/* The distribution node and the admin; then the glue, which needs the
 * node's name. */
static int gather_types(struct node_app *app);
static int start_host_link(struct node_app *app);
static int start_metrics(struct node_app *app);

static int start_node(struct node_app *app)
{
	const struct sn_config *cfg = app->cfg;
	if (cfg->tls_certfile[0] != '\0') {
		struct dist_tls_config tcfg = {cfg->tls_certfile, cfg->tls_keyfile, cfg->tls_cacertfile,
					       cfg->tls_verify_peer};
		char err[DIST_TLS_ERR_BUF];
		if ((app->tls = dist_tls_ctx_new(&tcfg, err)) == NULL) {
			log_error(&app->log, "cannot set up TLS: %s", err);
			return -EINVAL;
		}
	}
	struct dist_node_config ncfg = {
		.loop = app->loop, .tls = app->tls,
		.log = &app->log,
		.name = cfg->name,
		.cookie = cfg->cookie,
		.port = cfg->port,
		.max_message_bytes = cfg->max_message_bytes,
		.outq_max_bytes = cfg->outq_max_bytes,
		.outq_pause = cfg->outq_max_bytes / 8,
		.setup_ms = 7000,
		.ticktime_ms = cfg->net_ticktime * 1000u,
		.max_connections = cfg->max_connections,
	};
	int rc = 0;
	app->node = dist_node_start(&ncfg, &rc);
	if (app->node == NULL) {
		/* Words the Erlang wrapper reads to give a typed error
		 * (shardnode_node.erl, start_error/1). */
		if (rc == -EEXIST)
			log_error(&app->log, "cannot start node %s: the name is taken in epmd (another node runs under it)",
				  cfg->name);
		else if (rc == -EADDRINUSE)
			log_error(&app->log, "cannot start node %s: port %u is in use", cfg->name, cfg->port);
		else
			log_error(&app->log, "cannot start node %s: %s", cfg->name, strerror(-rc));
		return neg_errno(-rc);
	}

	/* The endpoint before the wait for the host's types: a liveness probe
	 * must find the node alive meanwhile (its readiness says why not). */
	if (cfg->metrics_port != 0 && (rc = start_metrics(app)) != 0)
		return rc;
	rc = gather_types(app);
	if (rc)
		return rc;
	for (size_t k = 0; k < cfg->nsingletons; k++) {
		app->singleton_names[k] = cfg->singleton_names[k];
		app->singleton_types[k] = cfg->singleton_types[k];
	}
	struct admin_config acfg = {
		.node = app->node, .loop = app->loop, .log = &app->log, .levels = &app->log,
		.types = app->type_names, .ntypes = app->ntypes,
		.singleton_names = app->singleton_names, .singleton_types = app->singleton_types,
		.nsingletons = cfg->nsingletons,
		.proxy_only = cfg->proxy_only, .max_message_bytes = cfg->max_message_bytes, .request_leave = cluster_glue_request_leave, .leave_arg = &app->glue,
	};
	app->admin = admin_start(&acfg, &rc);
	if (app->admin == NULL) {
		log_error(&app->log, "cannot register the admin: %s", strerror(-rc));
		return neg_errno(-rc);
	}

	struct cluster_glue_config gcfg = {
		.loop = app->loop, .log = &app->log, .our_node = dist_node_name(app->node),
		.proxy_only = cfg->proxy_only, .handoff_timeout_ms = cfg->handoff_timeout_ms,
		.data_dir = cfg->data_dir,
	};
	cluster_glue_init(&app->glue, &gcfg);
	return 0;
}

/* cfg's types, and with `host` but no host types, the types the host
 * names: the link starts now, and the loop runs until the host names at
 * least one type (it is asked every heartbeat interval, for as long as it
 * takes), or a signal or the end of stdin. A name that is no valid type
 * name, or one this node has already, is left out. Returns 0, or
 * -ECANCELED (stopped first: node_app_start's caller exits as on a
 * graceful stop), -EINVAL (a singleton's type is none of them: logged)
 * or the loop's or the link's error. */
static int gather_types(struct node_app *app)
{
	const struct sn_config *cfg = app->cfg;
	bool host_types_given = false;
	for (size_t k = 0; k < cfg->ntypes; k++) {
		app->type_names[k] = cfg->types[k];
		app->type_on_host[k] = cfg->type_on_host[k];
		host_types_given = host_types_given || cfg->type_on_host[k];
	}
	app->ntypes = cfg->ntypes;
	if (cfg->host[0] == '\0' || host_types_given || cfg->proxy_only)
		return 0;
	int rc = start_host_link(app);
	if (rc)
		return rc;
	log_info(&app->log, "waiting for host %s to name the types it runs here", cfg->host);
	app->awaiting_host_types = true;
	rc = evloop_run(app->loop);
	app->awaiting_host_types = false;
	if (rc)
		return rc;
	if (app->host_wait_cancelled) {
		log_info(&app->log, "stopped before host %s answered", cfg->host);
		return -ECANCELED;
	}
	const char *named[HOST_LINK_TYPES_MAX];
	size_t n = host_link_types(app->host_link, named, HOST_LINK_TYPES_MAX);
	for (size_t k = 0; k < n; k++) {
		bool known = false;
		for (size_t t = 0; t < app->ntypes; t++)
			known = known || strcmp(app->type_names[t], named[k]) == 0;
		for (size_t t = 0; t < cfg->nsingletons; t++)
			known = known || strcmp(cfg->singleton_names[t], named[k]) == 0;
		if (known)
			continue; /* a C type of the same name (--types has it), or a singleton's */
		if (!config_valid_type_name(named[k]) || strncmp(named[k], "shardnode", 9) == 0 ||
		    strcmp(named[k], "net_kernel") == 0) {
			log_warn(&app->log, "host %s names type %.255s: not a name a type may have here", cfg->host,
				 named[k]);
			continue;
		}
		if (app->ntypes + cfg->nsingletons >= NODE_TYPES_MAX) {
			log_warn(&app->log, "host %s names type %s: not hosted here (at most %d types)", cfg->host,
				 named[k], NODE_TYPES_MAX);
			continue;
		}
		memcpy(app->named_by_host[app->ntypes], named[k], strlen(named[k]) + 1);
		app->type_names[app->ntypes] = app->named_by_host[app->ntypes];
		app->type_on_host[app->ntypes++] = true;
	}
	log_info(&app->log, "host %s runs %zu types here", cfg->host, app->ntypes - cfg->ntypes);
	/* A singleton's type could not be checked before (config_parse_args
	 * left it to the host): one nobody names stops the start. */
	for (size_t k = 0; k < cfg->nsingletons; k++) {
		bool hosted = false;
		for (size_t t = 0; t < app->ntypes; t++)
			hosted = hosted || strcmp(app->type_names[t], cfg->singleton_types[k]) == 0;
		if (!hosted) {
			log_error(&app->log, "singleton %s: its type %s is not one of --types, nor one host %s runs",
				  cfg->singleton_names[k], cfg->singleton_types[k], cfg->host);
			return -EINVAL;
		}
	}
	return 0;
}

/* One hosted type, or one singleton (`singleton_name` not NULL): its
 * coordinator, remembered entities, region. A singleton is a type of one
 * shard whose coordinator keeps it on the oldest member (coordinator.h,
 * region.h). A part that fails leaves the earlier ones in *h for
 * node_app_stop. */
static int start_type(struct node_app *app, struct hosted_type *h, const struct entity_type *type, bool on_host,
		      const char *singleton_name)
{
	const struct sn_config *cfg = app->cfg;
	int rc = 0;
	h->type = type;
	h->singleton = singleton_name != NULL;
	h->name = h->singleton ? singleton_name : type->name;
	h->log = (struct logger){.parent = &app->log, .type = h->name};
	uint32_t nshards = h->singleton ? 1 : cfg->number_of_shards;
	char coord_name[CONFIG_NAME_BUF + 32];
	snprintf(coord_name, sizeof coord_name, "shardnode_%s_%s", h->singleton ? "singleton" : "coordinator", h->name);
	/* A proxy-only node never coordinates: the oldest member hosting the
	 * type does, and a proxy hosts nothing. */
	if (!cfg->proxy_only) {
		struct coordinator_config ccfg = {
			.node = app->node, .log = &h->log, .type_name = h->name, .name = coord_name,
			.number_of_shards = nshards, .loop = app->loop,
			.rebalance_interval_ms = cfg->rebalance_interval_ms,
			.rebalance_threshold = cfg->rebalance_threshold,
			.max_simultaneous_rebalance = cfg->max_simultaneous_rebalance,
			.handoff_timeout_ms = cfg->handoff_timeout_ms,
			.min_nr_of_members = cfg->min_nr_of_members,
			.pinned = h->singleton,
			/* Only where its regions keep copies: a store of each
			 * node's own and a type that keeps state (region_store.c
			 * opens the store on the same terms). */
			.state_replicas = app->store != NULL && !app->store->shared && entity_type_keeps_state(type)
						  ? cfg->state_replicas
						  : 0,
		};
		h->coordinator = coordinator_start(&ccfg, &rc);
		if (h->coordinator == NULL) {
			log_error(&app->log, "cannot start the %s coordinator: %s", h->name, strerror(-rc));
			return neg_errno(-rc);
		}
	}
	if (cfg->remember_entities && !cfg->proxy_only && !h->singleton) {
		h->remember = remember_open(cfg->data_dir, type->name, cfg->number_of_shards, &h->log, &rc);
		if (h->remember == NULL) {
			log_error(&app->log, "cannot open the remembered %s entities in %s: %s", type->name,
				  cfg->data_dir, strerror(-rc));
			return neg_errno(-rc);
		}
	}
	struct region_config rcfg = {
		.node = app->node, .loop = app->loop, .log = &h->log, .type = type,
		.host = on_host ? &app->region_host : NULL, .name = h->name, .singleton = h->singleton,
		.number_of_shards = nshards, .buffer_size = cfg->buffer_size,
		.retry_interval_ms = cfg->retry_interval_ms, .passivate_idle_after_ms = cfg->passivate_idle_after_ms,
		.max_active_entities = cfg->max_active_entities,
		.limit_by_frequency = cfg->max_active_by_frequency,
		.coordinator_name = coord_name, .handoff_timeout_ms = cfg->handoff_timeout_ms,
		.proxy_only = cfg->proxy_only,
		.members_hosting = cluster_glue_members_hosting, .members_arg = &app->glue,
		.may_deliver = cluster_glue_may_deliver, .may_deliver_arg = &app->glue,
		.remember = h->remember,
		.store = app->store, .store_name = config_store_name(cfg->state_store), .store_timeout_ms = cfg->store_timeout_ms,
		.state_replicas = cfg->state_replicas,
		.metrics = cfg->metrics_port != 0,
		.instance_reports_to = cfg->instance_reports_to,
		.on_stopped = cluster_glue_region_stopped, .on_stopped_arg = &app->glue,
	};
	h->region = region_start(&rcfg, &rc);
	if (h->region == NULL) {
		log_error(&app->log, "cannot start the %s region: %s", h->name, strerror(-rc));
		return neg_errno(-rc);
	}
	return 0;
}

/* Every type of cfg->types, from `known` (config_parse_args accepted only
 * known names). */
static void read_remembered(struct node_app *app);

static int start_hosted(struct node_app *app, const struct entity_type *const *known, size_t nknown)
{
	const struct sn_config *cfg = app->cfg;
	/* Before the store opens: whether data_dir holds an earlier run's
	 * state is read from its files, which opening would create. */
	read_remembered(app);
	if (cfg->state_store == STATE_STORE_POSTGRES && !cfg->proxy_only) {
		int rc = 0;
		struct state_pg *pg = state_pg_open(cfg->postgres_conninfo, app->loop, &app->log, &rc);
		if (pg != NULL)
			state_pg_set_answer_timeout(pg, cfg->store_timeout_ms);
		app->store = pg ? state_pg_store(pg) : NULL;
		if (app->store == NULL) {
			log_error(&app->log, "cannot open the entity state store: %s", strerror(-rc));
			return neg_errno(-rc);
		}
	}
	if (cfg->state_store == STATE_STORE_LMDB && !cfg->proxy_only) {
		int rc = 0;
		struct state_lmdb *lmdb = state_lmdb_open(cfg->data_dir, app->loop, &app->log, &rc);
		app->store = lmdb ? state_lmdb_store(lmdb) : NULL;
		if (app->store == NULL) {
			log_error(&app->log, "cannot open the entity state store in %s: %s", cfg->data_dir,
				  rc == -EWOULDBLOCK ? "another node has it open" : strerror(-rc));
			return neg_errno(-rc);
		}
	}
	/* The types, then the singletons (config_parse_args checked that each
	 * singleton's type is one of the types, and the count). */
	for (size_t k = 0; k < app->ntypes + cfg->nsingletons; k++) {
		bool singleton = k >= app->ntypes;
		const char *type_name = singleton ? cfg->singleton_types[k - app->ntypes] : app->type_names[k];
		const struct entity_type *type = NULL;
		bool on_host = false;
		for (size_t t = 0; t < app->ntypes; t++)
			if (app->type_on_host[t] && strcmp(app->type_names[t], type_name) == 0) {
				hosted_entity_type_init(&app->on_host_types[t], app->type_names[t]);
				type = &app->on_host_types[t];
				on_host = true;
			}
		for (size_t t = 0; t < nknown && !on_host; t++)
			if (strcmp(known[t]->name, type_name) == 0)
				type = known[t];
		if (type == NULL) {
			log_error(&app->log, "cannot host %s: no such entity type", type_name);
			return -EINVAL;
		}
		/* Counted before it starts, so a part that did start is stopped. */
		app->nhosted++;
		int rc = start_type(app, &app->hosted[k], type, on_host,
				    singleton ? cfg->singleton_names[k - app->ntypes] : NULL);
		if (rc)
			return rc;
	}
	cluster_glue_set_hosted(&app->glue, app->hosted, app->nhosted);
	return 0;
}

/* data_dir/members (remembered.h): asked to let this node join as the
 * seeds are. */
static void read_remembered(struct node_app *app)
{
	app->remembered = remembered_load(app->cfg, &app->log);
	for (size_t k = 0; app->remembered != NULL && k < app->remembered->n; k++)
		app->remembered_names[k] = app->remembered->nodes[k];
}

/* Membership last: its first change places the coordinators. */
static int start_membership(struct node_app *app)
{
	const struct sn_config *cfg = app->cfg;
	for (size_t k = 0; k < cfg->njoin; k++)
		app->seeds[k] = cfg->join[k];
	/* Members know a proxy-only node as hosting nothing. */
	size_t nhosted_names = 0;
	for (size_t k = 0; k < app->nhosted && !cfg->proxy_only; k++)
		if (!app->hosted[k].singleton) /* its type is listed */
			app->hosted_names[nhosted_names++] = app->hosted[k].type->name;
	struct membership_config mcfg = {
		.node = app->node, .from = *admin_pid(app->admin), .loop = app->loop, .log = &app->log,
		.seeds = app->seeds, .nseeds = cfg->njoin, .types = app->hosted_names, .ntypes = nhosted_names,
		.heartbeat_interval_ms = cfg->heartbeat_interval_ms,
		.failure_timeout_ms = cfg->failure_timeout_ms, .stable_after_ms = cfg->stable_after_ms,
		.watchers = cfg->watchers,
		.keep_majority = cfg->downing == DOWNING_KEEP_MAJORITY,
		.on_change = cluster_glue_membership_changed, .on_change_arg = &app->glue,
		.seeds_later = cfg->join_dns[0] != '\0',
		.remembered = app->remembered_names,
		.nremembered = app->remembered ? app->remembered->n : 0,
		.last_up_number = app->remembered ? app->remembered->self_up_number : 0,
		/* The first seed, or a node given none (with DNS seeds,
		 * dns_seeds.h decides). */
		.may_form = cfg->join_dns[0] == '\0' && (cfg->njoin == 0 || strcmp(cfg->join[0], cfg->name) == 0),
		.seed_timeout_ms = cfg->seed_timeout_ms,
	};
	int rc = 0;
	app->membership = membership_start(&mcfg, &rc);
	if (app->membership == NULL) {
		log_error(&app->log, "cannot start membership: %s", strerror(-rc));
		return neg_errno(-rc);
	}
	if (cfg->join_dns[0] != '\0') {
		/* The lowest seed waits three heartbeats for an answer from a
		 * cluster: a running one answers a join within one. */
		struct dns_seeds_config dcfg = {
			.loop = app->loop, .log = &app->log, .membership = app->membership, .name = cfg->join_dns,
			.our_node = cfg->name, .fixed = app->seeds, .nfixed = cfg->njoin,
			.form_after_ms = 3 * cfg->heartbeat_interval_ms,
		};
		app->dns_seeds = dns_seeds_start(&dcfg, &rc);
		if (app->dns_seeds == NULL) {
			log_error(&app->log, "cannot look up join_dns %s: %s", cfg->join_dns, strerror(-rc));
			return neg_errno(-rc);
		}
	}
	admin_set_membership(app->admin, app->membership);
	cluster_glue_set_membership(&app->glue, app->membership);
	cluster_glue_membership_changed(&app->glue);
	return 0;
}

/* Before membership runs (a node waiting for its host's types) there is
 * no lease: the host runs nothing of ours. */
static uint64_t lease_until(void *arg)
{
	const struct node_app *app = arg;
	return app->membership != NULL ? membership_lease_until(app->membership) : 0;
}

/* The host answered: the messages of its types that waited go. */
static void host_welcomed(void *arg)
{
	struct node_app *app = arg;
	if (app->awaiting_host_types)
		return; /* host_named_types decides */
	for (size_t k = 0; k < app->nhosted; k++)
		if (app->hosted[k].region != NULL)
			region_resume(app->hosted[k].region);
}

/* While gather_types waits: the host named its types. None yet (it was
 * asked before shardnode:host_entities/1 gave it any): wait on. */
static void host_named_types(void *arg)
{
	struct node_app *app = arg;
	const char *named[1];
	if (app->awaiting_host_types && host_link_types(app->host_link, named, 1) > 0)
		evloop_stop(app->loop); /* gather_types goes on with them */
}

/* With `host`: the link to the BEAM node hosting this node's entities
 * written in Erlang, renewing their lease from membership's. */
static int start_host_link(struct node_app *app)
{
	const struct sn_config *cfg = app->cfg;
	if (cfg->host[0] == '\0' || app->host_link != NULL)
		return 0; /* none, or started already to learn the types */
	struct host_link_config hcfg = {
		.node = app->node, .loop = app->loop, .log = &app->log, .host = cfg->host,
		.tick_ms = cfg->heartbeat_interval_ms, .lease_until = lease_until, .lease_arg = app,
		/* A renewal older than a heartbeat interval is late anyway. */
		.margin_ms = cfg->heartbeat_interval_ms,
		.on_welcome = host_welcomed, .on_welcome_arg = app,
		.on_types = host_named_types, .on_types_arg = app,
	};
	int rc = 0;
	app->host_link = host_link_start(&hcfg, &rc);
	if (app->host_link == NULL) {
		log_error(&app->log, "cannot start the link to host %s: %s", cfg->host, strerror(-rc));
		return neg_errno(-rc);
	}
	return 0;
}

/* dist_node_set_flushing: the regions' batches, and the batch for the
 * host of the types written in Erlang, join the turn's output. */
static void flush_batches(void *arg)
{
	struct node_app *app = arg;
	for (size_t k = 0; k < app->nhosted; k++)
		region_flush_batches(app->hosted[k].region);
	if (app->host_link != NULL)
		host_link_batch_send(app->host_link);
}

/* dist_node_set_flushed, with metrics: the turn's replies are out. */
static void time_replies(void *arg)
{
	struct node_app *app = arg;
	for (size_t k = 0; k < app->nhosted; k++)
		if (app->hosted[k].region != NULL)
			region_time_replies(app->hosted[k].region);
}

/* The metrics endpoint (docs/contract.md "Metrics"), and the timing of
 * replies it shows. */
static int start_metrics(struct node_app *app)
{
	dist_node_set_flushed(app->node, time_replies, app);
	struct http_server_config hcfg = {
		.loop = app->loop, .log = &app->log, .port = (uint16_t)app->cfg->metrics_port,
		.path = "/metrics", .content_type = "text/plain; version=0.0.4; charset=utf-8",
		.render = metrics_page_render, .render_arg = app,
		.checks = {{.path = "/health/live", .check = health_live, .arg = app},
			   {.path = "/health/ready", .check = health_ready, .arg = app}},
		.max_connections = METRICS_MAX_CONNECTIONS, .request_timeout_ms = METRICS_REQUEST_TIMEOUT_MS,
		.max_head = METRICS_MAX_HEAD,
	};
	int rc = 0;
	app->metrics = http_server_start(&hcfg, &rc);
	if (app->metrics == NULL) {
		log_error(&app->log, "cannot serve metrics on port %u: %s", app->cfg->metrics_port,
			  rc == -EADDRINUSE ? "the port is in use" : strerror(-rc));
		return neg_errno(-rc);
	}
	log_info(&app->log, "metrics on port %u: GET /metrics, /health/live, /health/ready",
		 http_server_port(app->metrics));
	return 0;
}

int node_app_start(struct node_app *app, const struct sn_config *cfg, const struct entity_type *const *known,
		   size_t nknown)
{
	*app = (struct node_app){
		.cfg = cfg,
		.log = {.min_level = cfg->log_level, .out = stderr, .node = cfg->name},
		.sigfd = -1,
	};
	app->region_host = host_link_region_host(&app->host_link, app->cfg->host);
	int rc = start_loop(app);
	if (rc == 0)
		rc = start_node(app);
	/* Before the regions: its nodedown listener then runs before theirs,
	 * so a region that hears its host is gone finds it not ready. */
	if (rc == 0)
		rc = start_host_link(app);
	if (rc == 0)
		rc = start_hosted(app, known, nknown);
	if (rc == 0)
		dist_node_set_flushing(app->node, flush_batches, app);
	if (rc == 0)
		rc = start_membership(app);
	if (rc)
		return rc;
	app->started = true;
	log_info(&app->log, "node %s up: port %u, creation %u, types %zu%s%s", cfg->name, dist_node_port(app->node),
		 dist_node_creation(app->node), app->ntypes, cfg->proxy_only ? " (proxy only)" : "",
		 app->tls ? ", TLS" : "");
	return 0;
}

int node_app_run(struct node_app *app)
{
	int rc = evloop_run(app->loop);
	if (rc)
		log_error(&app->log, "event loop failed: %s", strerror(-rc));
	const char *why = cluster_glue_stop_reason(&app->glue);
	log_info(&app->log, "stopping (%s)", why ? why : "loop ended");
	return rc;
}

void node_app_stop(struct node_app *app)
{
	/* The endpoint first: it reads every other part. */
	http_server_free(app->metrics);
	app->metrics = NULL;
	if (app->node != NULL) {
		dist_node_set_flushed(app->node, NULL, NULL);
		dist_node_set_flushing(app->node, NULL, NULL);
	}
	/* Regions first: their entities stop, and membership still answers
	 * them (who hosts the type, for the last remembered-entity changes;
	 * whether a lease is held). Then the coordinators hear of no more
	 * regions, and the stores close after their regions' last changes. */
	for (size_t k = 0; k < app->nhosted; k++)
		region_free(app->hosted[k].region);
	for (size_t k = 0; k < app->nhosted; k++) {
		coordinator_free(app->hosted[k].coordinator);
		remember_free(app->hosted[k].remember);
	}
	/* After the regions (they closed their types): commits what they
	 * queued last. */
	state_store_free(app->store);
	app->store = NULL;
	cluster_glue_set_hosted(&app->glue, NULL, 0);
	app->nhosted = 0;
	if (app->admin != NULL)
		admin_set_membership(app->admin, NULL);
	host_link_free(app->host_link);
	app->host_link = NULL;
	cluster_glue_set_membership(&app->glue, NULL);
	dns_seeds_free(app->dns_seeds); /* membership points into it */
	app->dns_seeds = NULL;
	membership_free(app->membership);
	app->membership = NULL;
	free(app->remembered); /* membership pointed into it */
	app->remembered = NULL;
	admin_free(app->admin);
	app->admin = NULL;
	dist_node_free(app->node);
	app->node = NULL;
	dist_tls_ctx_free(app->tls);
	app->tls = NULL;
	cluster_glue_stop(&app->glue);
	if (app->sigfd >= 0) {
		if (app->loop != NULL)
			evloop_unwatch(app->loop, app->sigfd);
		close(app->sigfd);
		app->sigfd = -1;
	}
	evloop_free(app->loop);
	app->loop = NULL;
	if (app->started)
		log_info(&app->log, "stopped");
	app->started = false;
}
