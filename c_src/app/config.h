/*
 * config.h — the node's settings: command-line flags, the config file
 * (file:consult/1 format: `{Key, Value}.` terms, `%` comments) and --set.
 *
 * Precedence: built-in defaults < config file < --set, whatever their order
 * on the command line. Every error names the flag or key and what was
 * expected, in one line, so main can print it and exit 2.
 *
 * Parsing reads the files it is pointed at (--config) and writes none. The
 * cookie is a separate step, config_resolve_cookie, since without --cookie
 * it may create ~/.erlang.cookie: a --help or a refused flag must leave the
 * home directory as it was.
 */
#ifndef SN_CONFIG_H
#define SN_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "base/node_limits.h"
#include "protocol/node_name.h"

#define CONFIG_MAX_LIST 64
#define CONFIG_NAME_BUF 256
#define CONFIG_ERR_BUF 512
/* A DNS name: at most 253 characters, and its NUL. */
#define CONFIG_DNS_NAME_BUF 254

enum downing_strategy { DOWNING_KEEP_MAJORITY, DOWNING_MANUAL };
/* Where entity states are kept (docs/contract.md, "Entity state"). */
enum state_store_kind { STATE_STORE_MEMORY, STATE_STORE_LMDB, STATE_STORE_POSTGRES };

/* Bytes of postgres_conninfo plus its NUL. */
#define CONFIG_CONNINFO_BUF 1024

struct sn_config {
	/* flags */
	char name[CONFIG_NAME_BUF]; /* full node name, "alive@host" */
	bool short_names;
	char cookie[CONFIG_NAME_BUF]; /* --cookie; else set by config_resolve_cookie */
	char cookie_file[PATH_MAX];   /* --cookie-file; empty: none given */
	uint16_t port;
	char join[CONFIG_MAX_LIST][CONFIG_NAME_BUF];
	size_t njoin;
	/* --join-dns / join_dns: the seeds are BASE@ADDR for each address this
	 * DNS name resolves to (dns_seeds.h); empty: none. */
	char join_dns[CONFIG_DNS_NAME_BUF];
	char types[CONFIG_MAX_LIST][CONFIG_NAME_BUF];
	size_t ntypes;
	/* types[k] is written in Erlang or Elixir and runs on the host
	 * (--host-types; hosted_entity.h), not a C type. */
	bool type_on_host[CONFIG_MAX_LIST];
	bool proxy_only;
	bool stop_on_stdin_eof; /* leave when stdin closes: its parent is gone */
	/* Cluster singletons (--singleton NAME=TYPE, the singletons key): an
	 * entity of singleton_types[k], one in the cluster, reached through the
	 * name singleton_names[k]. Types and singletons together are at most
	 * NODE_TYPES_MAX. */
	char singleton_names[NODE_TYPES_MAX][CONFIG_NAME_BUF];
	char singleton_types[NODE_TYPES_MAX][CONFIG_NAME_BUF];
	size_t nsingletons;

	/* keys of the config file and --set (docs/contract.md, "Config keys") */
	uint32_t number_of_shards;
	uint32_t buffer_size;
	uint32_t retry_interval_ms;
	uint32_t handoff_timeout_ms;
	uint32_t rebalance_interval_ms;
	uint32_t rebalance_threshold;
	uint32_t max_simultaneous_rebalance;
	uint32_t passivate_idle_after_ms;
	uint32_t max_active_entities; /* per region; 0: no limit */
	bool max_active_by_frequency; /* passivate by frequency too, not recency alone */
	bool remember_entities;
	uint32_t min_nr_of_members;
	uint32_t heartbeat_interval_ms;
	uint32_t failure_timeout_ms;
	enum downing_strategy downing;
	uint32_t stable_after_ms;
	/* How many members watch each member once the cluster is larger than
	 * watchers + 1 (docs/contract.md "A cluster's cost per member"). */
	uint32_t watchers;
	/* The first seed (or a node started without seeds that remembers
	 * members) forms a new cluster only once no seed or remembered member
	 * has answered as a member for this long (membership.h). */
	uint32_t seed_timeout_ms;
	char data_dir[PATH_MAX];
	/* entity plugins (*.so) of the user's, loaded after priv/'s; empty:
	 * none */
	char plugin_dir[PATH_MAX];
	enum state_store_kind state_store;
	char postgres_conninfo[CONFIG_CONNINFO_BUF]; /* a libpq connection string */
	/* The BEAM node hosting this node's entities written in Erlang
	 * (NAME@HOST; host_link.h); empty: none. */
	char host[NODE_NAME_BUF];
	/* instance_reports_to: a test setting, the node whose registered
	 * shardnode_instances hears of every entity incarnation (region.h);
	 * empty: none. */
	char instance_reports_to[NODE_NAME_BUF];
	uint32_t store_timeout_ms;
	/* Copies of each shard's records on other members besides its home
	 * (docs/contract.md, "Replicated state"); used with state_store =
	 * lmdb only. 0: none. */
	uint32_t state_replicas;

	/* keys of the runtime (in the same table) */
	uint32_t net_ticktime;       /* seconds, as the kernel parameter */
	uint32_t max_message_bytes;  /* largest packet accepted from a peer */
	uint32_t max_connections;
	uint32_t outq_max_bytes;     /* per peer; a peer that reads slower is disconnected */
	enum log_level log_level;
	uint32_t metrics_port;       /* GET /metrics on this port; 0: off */
	/* TLS distribution (docs/contract.md "TLS"): all three files, or none
	 * (plain TCP); tls_verify_peer false is tls_verify = none. */
	char tls_certfile[PATH_MAX];
	char tls_keyfile[PATH_MAX];
	char tls_cacertfile[PATH_MAX];
	bool tls_verify_peer;
};

/* Whether `name` is one --types accepts as an entity type's: a lowercase
 * letter, then letters, digits and `_` (it becomes a registered name and a
 * file name under data_dir). */
bool config_valid_type_name(const char *name);

/* Fills defaults (data_dir is left empty; config_parse_args derives it). */
void config_defaults(struct sn_config *cfg);

/* Parses argv (without argv[0]) into cfg (filled by config_defaults
 * first), reading the --config file. The cookie is not resolved: cfg->cookie
 * holds --cookie, or stays empty; cfg->cookie_file holds --cookie-file, which
 * is not read. No file is created or written. `default_types`
 * (NULL-terminated) are the entity types hosted without --types;
 * `known_types` (NULL-terminated) those that may be named, checked by
 * config_check_types before returning. NULL known_types defers that check
 * to the caller, which learns the types from plugin_dir only after parsing.
 * A singleton's type must be one of the types, unless the host names
 * them at start (`host` without --host-types): node_app checks it then.
 * Nothing is kept of argv. Returns 0; 1 when --help was asked (usage
 * printed to stdout); or -EINVAL with a one-line message in err. */
int config_parse_args(struct sn_config *cfg, int argc, char *const argv[], const char *const *default_types,
		      const char *const *known_types, char err[CONFIG_ERR_BUF]);

/* Checks a parsed cfg against the entity types that exist (`known_types`,
 * NULL-terminated): every hosted type is one of them, and no singleton is
 * named like one. Returns 0, or -EINVAL with a one-line message in err. */
int config_check_types(const struct sn_config *cfg, const char *const *known_types, char err[CONFIG_ERR_BUF]);

/* The cookie, after a successful config_parse_args, as erl finds it: the
 * --cookie given; else the one line of the --cookie-file (blanks around it
 * dropped); else the one line of $HOME/.erlang.cookie, which is first
 * created, mode 0400, holding 20 random capital letters, when it does not
 * exist (a file another process creates meanwhile is read as it is). Sets
 * cfg->cookie. Returns 0, or -EINVAL with a one-line message in err (HOME
 * unset, no randomness, the new file not written, or a cookie file that
 * cannot be read or is not one line of 1 to 255 characters). */
int config_resolve_cookie(struct sn_config *cfg, char err[CONFIG_ERR_BUF]);

/* Applies one KEY=VALUE (as --set does). Returns 0 or -EINVAL with err set. */
int config_set(struct sn_config *cfg, const char *key_eq_value, char err[CONFIG_ERR_BUF]);

/* Applies a config file's text (file:consult format). `origin` names it in
 * errors. Returns 0 or -EINVAL with err set. */
int config_apply_text(struct sn_config *cfg, const char *text, size_t len, const char *origin,
		      char err[CONFIG_ERR_BUF]);

/* The usage text. */
extern const char config_usage[];

#endif
