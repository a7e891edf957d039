/*
 * main.c — the shardnode executable: reads the configuration, becomes an
 * Erlang node, serves until SIGTERM/SIGINT, an admin `leave`, stdin closing
 * (with --stop-on-stdin-eof) or a down, then unregisters and exits 0
 * (docs/contract.md). A bad flag or config value, or a cookie that cannot be
 * had, exits 2; a node that cannot start, or whose event loop fails, 1.
 *
 * What the node is made of and the order its parts start and stop in is
 * node_app.h's; how the cluster drives sharding, cluster_glue.h's.
 */
#include <limits.h>
#include <stdio.h>

#include "app/config.h"
#include "app/node_app.h"
#include "base/log.h"
#include "entity/entity.h"
#include "entity/entity_builtin.h"
#include "entity/entity_plugin.h"

/* The entity types this node may host: the built-in ones, then those of the
 * plugins in priv/ beside the executable (a plugin whose name is taken by a
 * built-in type is skipped, and a bad plugin is logged and skipped). */
struct catalog {
	const struct entity_type *types[CONFIG_MAX_LIST + 1];
	size_t n;
	const char *names[CONFIG_MAX_LIST + 1];   /* every type; NULL-terminated */
	const char *builtin[CONFIG_MAX_LIST + 1]; /* hosted without --types; NULL-terminated */
};

/* Fills *c; the plugins stay loaded in *plugins until unloaded. */
static void load_catalog(struct catalog *c, struct entity_plugins *plugins)
{
	struct logger startup_log = {.min_level = LOG_INFO, .out = stderr};
	char priv[PATH_MAX];
	if (entity_plugins_exe_dir(priv, sizeof priv) == 0)
		entity_plugins_load(plugins, priv, entity_builtin_types(), &startup_log);
	c->n = 0;
	for (const struct entity_type *const *t = entity_builtin_types(); *t && c->n < CONFIG_MAX_LIST; t++) {
		c->builtin[c->n] = (*t)->name;
		c->types[c->n++] = *t;
	}
	c->builtin[c->n] = NULL;
	for (size_t k = 0; k < plugins->count && c->n < CONFIG_MAX_LIST; k++)
		c->types[c->n++] = plugins->types[k];
	for (size_t k = 0; k < c->n; k++)
		c->names[k] = c->types[k]->name;
	c->names[c->n] = NULL;
}

int main(int argc, char **argv)
{
	/* Large (paths, lists, the parts): not on the stack. */
	static struct entity_plugins plugins;
	static struct catalog catalog;
	static struct sn_config cfg;
	static struct node_app app;
	char err[CONFIG_ERR_BUF];

	load_catalog(&catalog, &plugins);
	config_defaults(&cfg);
	int rc = config_parse_args(&cfg, argc - 1, argv + 1, catalog.builtin, catalog.names, err);
	if (rc == 1)
		return 0; /* --help */
	/* Only a good command line may create ~/.erlang.cookie. */
	if (rc == 0)
		rc = config_resolve_cookie(&cfg, err);
	if (rc) {
		fprintf(stderr, "shardnode: %s\n", err);
		return 2;
	}

	rc = node_app_start(&app, &cfg, catalog.types, catalog.n);
	if (rc == 0)
		rc = node_app_run(&app);
	node_app_stop(&app);
	entity_plugins_free(&plugins);
	return rc ? 1 : 0;
}
