/* config.c — see config.h: defaults, the keys and their values, the
 * file:consult/1 subset the config file is read in, --set. The command
 * line is read in config_args.c, on top of this (config_internal.h). */
#include "app/config.h"
#include "app/config_internal.h"
#include "base/node_limits.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

const char config_usage[] =
	"usage: shardnode (--name NAME@HOST | --sname NAME)\n"
	"                 [--cookie COOKIE | --cookie-file FILE]\n"
	"                 [--port PORT] [--join NODE[,NODE...]] [--join-dns NAME] [--types TYPE[,TYPE...]]\n"
	"                 [--proxy-only] [--stop-on-stdin-eof] [--config FILE] [--set KEY=VALUE]...\n"
	"                 [--singleton NAME=TYPE]... [--host NODE] [--host-types TYPE[,TYPE...]]\n";

int config_fail(char err[CONFIG_ERR_BUF], const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, CONFIG_ERR_BUF, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

void config_defaults(struct sn_config *c)
{
	memset(c, 0, sizeof *c);
	c->number_of_shards = 100;
	c->buffer_size = 100000;
	c->retry_interval_ms = 2000;
	c->handoff_timeout_ms = 60000;
	c->rebalance_interval_ms = 10000;
	c->rebalance_threshold = 1;
	c->max_simultaneous_rebalance = 3;
	c->passivate_idle_after_ms = 0;
	c->max_active_by_frequency = true;
	c->remember_entities = false;
	c->min_nr_of_members = 1;
	c->heartbeat_interval_ms = 1000;
	c->failure_timeout_ms = 5000;
	c->downing = DOWNING_KEEP_MAJORITY;
	c->stable_after_ms = 10000;
	c->watchers = 5;
	c->seed_timeout_ms = 5000;
	c->net_ticktime = 60;
	c->max_message_bytes = 64u << 20;
	c->max_connections = 1024;
	c->outq_max_bytes = 256u << 20;
	c->log_level = LOG_INFO;
	c->state_store = STATE_STORE_MEMORY;
	c->store_timeout_ms = 5000;
	c->state_replicas = 1;
	c->tls_verify_peer = true;
}

/* ---- keys ---- */

enum key_kind { K_UINT, K_BOOL, K_DOWNING, K_PATH, K_LOGLEVEL, K_STATE_STORE, K_TLS_VERIFY };

struct key_spec {
	const char *name;
	enum key_kind kind;
	size_t offset;
	uint32_t min, max; /* K_UINT only */
};

#define U(field, lo, hi) {#field, K_UINT, offsetof(struct sn_config, field), lo, hi}
static const struct key_spec keys[] = {
	U(number_of_shards, 1, 1000000),
	U(buffer_size, 0, 100000000),
	U(retry_interval_ms, 1, 3600000),
	U(handoff_timeout_ms, 1, 86400000),
	U(rebalance_interval_ms, 1, 86400000),
	U(rebalance_threshold, 0, 1000000),
	U(max_simultaneous_rebalance, 1, 1000000),
	U(passivate_idle_after_ms, 0, 2000000000),
	U(max_active_entities, 0, 1000000000),
	{"max_active_by_frequency", K_BOOL, offsetof(struct sn_config, max_active_by_frequency), 0, 0},
	{"remember_entities", K_BOOL, offsetof(struct sn_config, remember_entities), 0, 0},
	U(min_nr_of_members, 1, 10000),
	U(heartbeat_interval_ms, 1, 3600000),
	U(failure_timeout_ms, 1, 86400000),
	{"downing", K_DOWNING, offsetof(struct sn_config, downing), 0, 0},
	U(stable_after_ms, 0, 86400000),
	U(watchers, 1, 64),
	U(seed_timeout_ms, 1, 86400000),
	{"data_dir", K_PATH, offsetof(struct sn_config, data_dir), 0, PATH_MAX},
	{"plugin_dir", K_PATH, offsetof(struct sn_config, plugin_dir), 0, PATH_MAX},
	{"postgres_conninfo", K_PATH, offsetof(struct sn_config, postgres_conninfo), 0, CONFIG_CONNINFO_BUF},
	{"state_store", K_STATE_STORE, offsetof(struct sn_config, state_store), 0, 0},
	{"host", K_PATH, offsetof(struct sn_config, host), 0, NODE_NAME_BUF},
	{"instance_reports_to", K_PATH, offsetof(struct sn_config, instance_reports_to), 0, NODE_NAME_BUF},
	{"join_dns", K_PATH, offsetof(struct sn_config, join_dns), 0, CONFIG_DNS_NAME_BUF},
	U(store_timeout_ms, 1, 86400000),
	U(state_replicas, 0, 3),
	U(net_ticktime, 1, 86400),
	U(max_message_bytes, 1024, 2000000000),
	U(max_connections, 1, 1000000),
	U(outq_max_bytes, 65536, 4000000000u),
	{"log_level", K_LOGLEVEL, offsetof(struct sn_config, log_level), 0, 0},
	U(metrics_port, 0, 65535),
	{"tls_certfile", K_PATH, offsetof(struct sn_config, tls_certfile), 0, PATH_MAX},
	{"tls_keyfile", K_PATH, offsetof(struct sn_config, tls_keyfile), 0, PATH_MAX},
	{"tls_cacertfile", K_PATH, offsetof(struct sn_config, tls_cacertfile), 0, PATH_MAX},
	{"tls_verify", K_TLS_VERIFY, offsetof(struct sn_config, tls_verify_peer), 0, 0},
};
#undef U

static const struct key_spec *find_key(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		if (strlen(keys[i].name) == len && memcmp(keys[i].name, name, len) == 0)
			return &keys[i];
	}
	return NULL;
}

/* A value as written: an integer, an atom, or a string (quoted or raw). */
enum value_kind { V_INT, V_ATOM, V_STRING };
struct value {
	enum value_kind kind;
	long long i;
	char text[PATH_MAX];
};

static int apply_value(struct sn_config *c, const struct key_spec *k, const struct value *v,
		       const char *origin, char err[CONFIG_ERR_BUF])
{
	char *field = (char *)c + k->offset;
	switch (k->kind) {
	case K_UINT:
		if (v->kind != V_INT || v->i < k->min || v->i > k->max)
			return config_fail(err, "%s: %s expects an integer from %u to %u", origin, k->name, k->min, k->max);
		*(uint32_t *)(void *)field = (uint32_t)v->i;
		return 0;
	case K_BOOL:
		if (v->kind == V_ATOM && strcmp(v->text, "true") == 0)
			*(bool *)(void *)field = true;
		else if (v->kind == V_ATOM && strcmp(v->text, "false") == 0)
			*(bool *)(void *)field = false;
		else
			return config_fail(err, "%s: %s expects true or false", origin, k->name);
		return 0;
	case K_DOWNING:
		if (v->kind == V_ATOM && strcmp(v->text, "keep_majority") == 0)
			c->downing = DOWNING_KEEP_MAJORITY;
		else if (v->kind == V_ATOM && strcmp(v->text, "manual") == 0)
			c->downing = DOWNING_MANUAL;
		else
			return config_fail(err, "%s: downing expects keep_majority or manual", origin);
		return 0;
	case K_STATE_STORE:
		if (v->kind == V_ATOM && strcmp(v->text, "memory") == 0)
			c->state_store = STATE_STORE_MEMORY;
		else if (v->kind == V_ATOM && strcmp(v->text, "lmdb") == 0)
			c->state_store = STATE_STORE_LMDB;
		else if (v->kind == V_ATOM && strcmp(v->text, "postgres") == 0)
			c->state_store = STATE_STORE_POSTGRES;
		else
			return config_fail(err, "%s: state_store expects memory, lmdb or postgres", origin);
		return 0;
	case K_TLS_VERIFY:
		if (v->kind == V_ATOM && strcmp(v->text, "peer") == 0)
			c->tls_verify_peer = true;
		else if (v->kind == V_ATOM && strcmp(v->text, "none") == 0)
			c->tls_verify_peer = false;
		else
			return config_fail(err, "%s: tls_verify expects peer or none", origin);
		return 0;
	case K_LOGLEVEL:
		if (v->kind != V_ATOM || log_level_parse(v->text, &c->log_level) != 0)
			return config_fail(err, "%s: log_level expects debug, info, warn or error", origin);
		return 0;
	case K_PATH: /* a string into a char array of k->max bytes */
		if (v->kind == V_INT || v->text[0] == '\0')
			return config_fail(err, "%s: %s expects a string", origin, k->name);
		if (strlcpy(field, v->text, k->max) >= k->max)
			return config_fail(err, "%s: %s is longer than %u bytes", origin, k->name, k->max - 1);
		return 0;
	}
	return config_fail(err, "%s: %s cannot be set", origin, k->name);
}

/* ---- a small reader for the file:consult/1 subset we accept ---- */

struct reader {
	const char *p, *end;
	int line;
};

static void skip_blank(struct reader *r)
{
	while (r->p < r->end) {
		if (*r->p == '%') {
			while (r->p < r->end && *r->p != '\n')
				r->p++;
		} else if (isspace((unsigned char)*r->p)) {
			if (*r->p == '\n')
				r->line++;
			r->p++;
		} else {
			break;
		}
	}
}

static bool take(struct reader *r, char ch)
{
	skip_blank(r);
	if (r->p < r->end && *r->p == ch) {
		r->p++;
		return true;
	}
	return false;
}

/* Reads an integer, atom, 'quoted atom', "string" or <<"binary">>. */
static int read_value(struct reader *r, struct value *v)
{
	skip_blank(r);
	if (r->p >= r->end)
		return -EINVAL;
	const char *s = r->p;
	if (*s == '-' || isdigit((unsigned char)*s)) {
		bool neg = *s == '-';
		s += neg;
		if (s >= r->end || !isdigit((unsigned char)*s))
			return -EINVAL;
		long long val = 0;
		while (s < r->end && (isdigit((unsigned char)*s) || *s == '_')) {
			if (*s != '_') {
				if (val > (LLONG_MAX - 9) / 10)
					return -EINVAL;
				val = val * 10 + (*s - '0');
			}
			s++;
		}
		v->kind = V_INT;
		v->i = neg ? -val : val;
		r->p = s;
		return 0;
	}
	bool binary = false;
	if (*s == '<' && r->end - s >= 2 && s[1] == '<') {
		binary = true;
		s += 2;
	}
	if (s >= r->end) /* the text ends right after "<<" */
		return -EINVAL;
	if (*s == '\'' || *s == '"') {
		char quote = *s++;
		size_t n = 0;
		while (s < r->end && *s != quote) {
			if (*s == '\\' && s + 1 < r->end)
				s++;
			if (*s == '\n')
				r->line++;
			if (n + 1 >= sizeof v->text)
				return -EINVAL;
			v->text[n++] = *s++;
		}
		if (s >= r->end)
			return -EINVAL;
		s++;
		v->text[n] = '\0';
		v->kind = quote == '\'' ? V_ATOM : V_STRING;
		if (binary) {
			if (quote != '"' || r->end - s < 2 || s[0] != '>' || s[1] != '>')
				return -EINVAL;
			s += 2;
		}
		r->p = s;
		return 0;
	}
	if (binary || !islower((unsigned char)*s))
		return -EINVAL;
	size_t n = 0;
	while (s < r->end && (isalnum((unsigned char)*s) || *s == '_' || *s == '@')) {
		if (n + 1 >= sizeof v->text)
			return -EINVAL;
		v->text[n++] = *s++;
	}
	v->text[n] = '\0';
	v->kind = V_ATOM;
	r->p = s;
	return 0;
}

/* Adds one singleton (checked with the rest in check_singletons). */
int config_add_singleton(struct sn_config *c, const char *name, const char *type, const char *origin,
			 char err[CONFIG_ERR_BUF])
{
	if (c->nsingletons == NODE_TYPES_MAX)
		return config_fail(err, "%s: at most %d singletons", origin, NODE_TYPES_MAX);
	if (strlcpy(c->singleton_names[c->nsingletons], name, CONFIG_NAME_BUF) >= CONFIG_NAME_BUF ||
	    strlcpy(c->singleton_types[c->nsingletons], type, CONFIG_NAME_BUF) >= CONFIG_NAME_BUF)
		return config_fail(err, "%s: singleton name or type too long", origin);
	c->nsingletons++;
	return 0;
}

/* The singletons key's value: [{Name, Type}, ...], replacing any earlier
 * ones. */
static int read_singletons(struct reader *r, struct sn_config *c, const char *origin, char err[CONFIG_ERR_BUF])
{
	c->nsingletons = 0;
	if (!take(r, '['))
		return config_fail(err, "%s: singletons expects a list of {Name, Type}", origin);
	if (take(r, ']'))
		return 0;
	do {
		struct value name, type;
		if (!take(r, '{') || read_value(r, &name) || name.kind != V_ATOM || !take(r, ',') ||
		    read_value(r, &type) || type.kind != V_ATOM || !take(r, '}'))
			return config_fail(err, "%s: singletons expects a list of {Name, Type}", origin);
		int rc = config_add_singleton(c, name.text, type.text, origin, err);
		if (rc)
			return rc;
	} while (take(r, ','));
	if (!take(r, ']'))
		return config_fail(err, "%s: singletons expects a list of {Name, Type}", origin);
	return 0;
}

int config_apply_text(struct sn_config *c, const char *text, size_t len, const char *origin,
		      char err[CONFIG_ERR_BUF])
{
	struct reader r = {.p = text, .end = text + len, .line = 1};
	for (;;) {
		skip_blank(&r);
		if (r.p >= r.end)
			return 0;
		struct value key, val;
		if (!take(&r, '{') || read_value(&r, &key) || key.kind != V_ATOM)
			return config_fail(err, "%s:%d: expected {Key, Value}.", origin, r.line);
		if (strcmp(key.text, "singletons") == 0) {
			char where[CONFIG_ERR_BUF / 2];
			snprintf(where, sizeof where, "%s:%d", origin, r.line);
			int rc = take(&r, ',') ? read_singletons(&r, c, where, err) : -EINVAL;
			if (rc == 0 && (!take(&r, '}') || !take(&r, '.')))
				rc = -EINVAL;
			if (rc)
				return err[0] ? rc : config_fail(err, "%s: expected {singletons, [{Name, Type}]}.", where);
			continue;
		}
		const struct key_spec *k = find_key(key.text, strlen(key.text));
		if (k == NULL)
			return config_fail(err, "%s:%d: unknown config key '%s'", origin, r.line, key.text);
		if (!take(&r, ',') || read_value(&r, &val) || !take(&r, '}') || !take(&r, '.'))
			return config_fail(err, "%s:%d: expected {%s, Value}.", origin, r.line, key.text);
		char where[CONFIG_ERR_BUF / 2];
		snprintf(where, sizeof where, "%s:%d", origin, r.line);
		int rc = apply_value(c, k, &val, where, err);
		if (rc)
			return rc;
	}
}

int config_set(struct sn_config *c, const char *kv, char err[CONFIG_ERR_BUF])
{
	const char *eq = strchr(kv, '=');
	if (eq == NULL || eq == kv)
		return config_fail(err, "--set %s: expected KEY=VALUE", kv);
	if ((size_t)(eq - kv) == strlen("singletons") && memcmp(kv, "singletons", (size_t)(eq - kv)) == 0) {
		struct reader r = {.p = eq + 1, .end = eq + 1 + strlen(eq + 1), .line = 1};
		int rc = read_singletons(&r, c, "--set singletons", err);
		skip_blank(&r);
		if (rc == 0 && r.p != r.end)
			rc = config_fail(err, "--set singletons: expects a list of {Name, Type}");
		return rc;
	}
	const struct key_spec *k = find_key(kv, (size_t)(eq - kv));
	if (k == NULL)
		return config_fail(err, "--set %s: unknown config key '%.*s'", kv, (int)(eq - kv), kv);
	const char *text = eq + 1;
	struct value v;
	char origin[CONFIG_ERR_BUF / 2];
	snprintf(origin, sizeof origin, "--set %.200s", kv);
	if (k->kind == K_PATH && text[0] != '"' && text[0] != '<') {
		/* A bare path, as a shell user writes it. */
		v.kind = V_STRING;
		if (strlcpy(v.text, text, sizeof v.text) >= sizeof v.text)
			return config_fail(err, "%s: path too long", origin);
		return apply_value(c, k, &v, origin, err);
	}
	struct reader r = {.p = text, .end = text + strlen(text), .line = 1};
	bool whole = read_value(&r, &v) == 0;
	skip_blank(&r);
	if (!whole || r.p != r.end) {
		/* Not one value: apply_value reports what the key expects. */
		v.kind = V_STRING;
		v.text[0] = '\0';
	}
	return apply_value(c, k, &v, origin, err);
}
