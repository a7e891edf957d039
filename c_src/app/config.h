/*
 * config.h — the node's settings: command-line flags, the config file
 * (file:consult/1 format: `{Key, Value}.` terms, `%` comments) and --set.
 *
 * Precedence: built-in defaults < config file < --set, whatever their order
 * on the command line. Every error names the flag or key and what was
 * expected, in one line, so main can print it and exit 2.
 */
#ifndef SN_CONFIG_H
#define SN_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"

#define CONFIG_MAX_LIST 64
#define CONFIG_NAME_BUF 256
#define CONFIG_ERR_BUF 512

enum downing_strategy { DOWNING_KEEP_MAJORITY, DOWNING_MANUAL };

struct sn_config {
	/* flags */
	char name[CONFIG_NAME_BUF]; /* full node name, "alive@host" */
	bool short_names;
	char cookie[CONFIG_NAME_BUF];
	uint16_t port;
	char join[CONFIG_MAX_LIST][CONFIG_NAME_BUF];
	size_t njoin;
	char types[CONFIG_MAX_LIST][CONFIG_NAME_BUF];
	size_t ntypes;
	bool proxy_only;
	bool stop_on_stdin_eof; /* leave when stdin closes: its parent is gone */

	/* keys of the config file and --set (SPEC §2) */
	uint32_t number_of_shards;
	uint32_t buffer_size;
	uint32_t retry_interval_ms;
	uint32_t handoff_timeout_ms;
	uint32_t rebalance_interval_ms;
	uint32_t rebalance_threshold;
	uint32_t max_simultaneous_rebalance;
	uint32_t passivate_idle_after_ms;
	bool remember_entities;
	uint32_t min_nr_of_members;
	uint32_t heartbeat_interval_ms;
	uint32_t failure_timeout_ms;
	enum downing_strategy downing;
	uint32_t stable_after_ms;
	char data_dir[PATH_MAX];

	/* keys of the runtime, beyond the SPEC's table */
	uint32_t net_ticktime;       /* seconds, as the kernel parameter */
	uint32_t max_message_bytes;  /* largest packet accepted from a peer */
	uint32_t max_connections;
	uint32_t outq_max_bytes;     /* per peer; a peer that reads slower is disconnected */
	enum log_level log_level;
};

/* Fills defaults (data_dir is left empty; config_parse_args derives it). */
void config_defaults(struct sn_config *cfg);

/* Parses argv (without argv[0]) into cfg, reading --config and
 * --cookie-file, and the default cookie file ~/.erlang.cookie (created with a
 * random cookie if missing, as erl does). `known_types` (NULL-terminated) are
 * the entity types that may be named in --types; `default_types` those hosted
 * without --types. Returns 0; 1 when --help was asked (usage printed to
 * stdout); or -EINVAL with a one-line message in err. */
int config_parse_args(struct sn_config *cfg, int argc, char *const argv[], const char *const *default_types,
		      const char *const *known_types, char err[CONFIG_ERR_BUF]);

/* Applies one KEY=VALUE (as --set does). Returns 0 or -EINVAL with err set. */
int config_set(struct sn_config *cfg, const char *key_eq_value, char err[CONFIG_ERR_BUF]);

/* Applies a config file's text (file:consult format). `origin` names it in
 * errors. Returns 0 or -EINVAL with err set. */
int config_apply_text(struct sn_config *cfg, const char *text, size_t len, const char *origin,
		      char err[CONFIG_ERR_BUF]);

/* The usage text. */
extern const char config_usage[];

#endif
