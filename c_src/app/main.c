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
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "app/config.h"
#include "app/config_describe.h"
#include "app/node_app.h"
#include "base/log.h"
#include "entity/entity.h"
#include "entity/entity_builtin.h"
#include "entity/entity_plugin.h"

/* The entity types this node may host: the built-in ones, then those of the
 * plugins in priv/ beside the executable, then those of plugin_dir (a
 * plugin whose name is taken is skipped, and a bad plugin is logged and
 * skipped). */
struct catalog {
	const struct entity_type *types[CONFIG_MAX_LIST + 1];
	size_t n;
	const char *names[CONFIG_MAX_LIST + 1];   /* every type; NULL-terminated */
	const char *builtin[CONFIG_MAX_LIST + 1]; /* hosted without --types; NULL-terminated */
};

static void catalog_add(struct catalog *c, const struct entity_type *t)
{
	if (c->n == CONFIG_MAX_LIST)
		return;
	c->types[c->n] = t;
	c->names[c->n++] = t->name;
	c->names[c->n] = NULL;
}

/* The built-in types, which are known before the configuration is read. */
static void catalog_builtin(struct catalog *c)
{
	c->n = 0;
	c->names[0] = NULL;
	for (const struct entity_type *const *t = entity_builtin_types(); *t; t++)
		catalog_add(c, *t);
	for (size_t k = 0; k < c->n; k++)
		c->builtin[k] = c->names[k];
	c->builtin[c->n] = NULL;
}

/* Adds the plugins of priv/ and of plugin_dir (when set) to *c; they stay
 * loaded in *plugins until unloaded. Returns 0, or -EINVAL with err set
 * when plugin_dir cannot be read: a directory the user named is not
 * skipped quietly, as a priv/ without plugins is. */
static int catalog_plugins(struct catalog *c, struct entity_plugins *plugins, const struct sn_config *cfg,
			   char err[CONFIG_ERR_BUF])
{
	struct logger startup_log = {.min_level = cfg->log_level, .out = stderr, .node = cfg->name};
	char priv[PATH_MAX];
	memset(plugins, 0, sizeof *plugins);
	if (entity_plugins_exe_dir(priv, sizeof priv) == 0)
		(void)entity_plugins_add_dir(plugins, priv, entity_builtin_types(), &startup_log);
	if (cfg->plugin_dir[0] != '\0') {
		int rc = entity_plugins_add_dir(plugins, cfg->plugin_dir, entity_builtin_types(), &startup_log);
		if (rc) {
			snprintf(err, CONFIG_ERR_BUF, "plugin_dir %.400s: %s", cfg->plugin_dir, strerror(-rc));
			return -EINVAL;
		}
	}
	for (size_t k = 0; k < plugins->count; k++)
		catalog_add(c, plugins->types[k]);
	return 0;
}

int main(int argc, char **argv)
{
	/* Large (paths, lists, the parts): not on the stack. */
	static struct entity_plugins plugins;
	static struct catalog catalog;
	static struct sn_config cfg;
	static struct node_app app;
	char err[CONFIG_ERR_BUF];

	catalog_builtin(&catalog);
	config_defaults(&cfg);
	/* The types named are checked once plugin_dir, a setting, has been read
	 * and its plugins loaded. */
	int rc = config_parse_args(&cfg, argc - 1, argv + 1, catalog.builtin, NULL, err);
	if (rc == 1)
		return 0; /* --help */
	if (rc == 0) {
		/* The log's first line: what this node runs. */
		static char what[4096];
		struct logger startup_log = {.min_level = cfg.log_level, .out = stderr, .node = cfg.name};
		config_describe(&cfg, what, sizeof what);
		log_info(&startup_log, "%s", what);
		rc = catalog_plugins(&catalog, &plugins, &cfg, err);
	}
	if (rc == 0)
		rc = config_check_types(&cfg, catalog.names, err);
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
	else if (rc == -ECANCELED)
		rc = 0; /* stopped while waiting for its host: a stop like any other */
	node_app_stop(&app);
	entity_plugins_free(&plugins);
	return rc ? 1 : 0;
}
