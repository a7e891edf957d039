/* config.c — see config.h. */
#include "app/config.h"
#include "base/node_limits.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bsd/string.h>

const char config_usage[] =
	"usage: shardnode (--name NAME@HOST | --sname NAME)\n"
	"                 [--cookie COOKIE | --cookie-file FILE]\n"
	"                 [--port PORT] [--join NODE[,NODE...]] [--types TYPE[,TYPE...]]\n"
	"                 [--proxy-only] [--stop-on-stdin-eof] [--config FILE] [--set KEY=VALUE]...\n"
	"                 [--singleton NAME=TYPE]...\n";

static int fail(char err[CONFIG_ERR_BUF], const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(char err[CONFIG_ERR_BUF], const char *fmt, ...)
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
	c->remember_entities = false;
	c->min_nr_of_members = 1;
	c->heartbeat_interval_ms = 1000;
	c->failure_timeout_ms = 5000;
	c->downing = DOWNING_KEEP_MAJORITY;
	c->stable_after_ms = 10000;
	c->net_ticktime = 60;
	c->max_message_bytes = 64u << 20;
	c->max_connections = 1024;
	c->outq_max_bytes = 256u << 20;
	c->log_level = LOG_INFO;
	c->state_store = STATE_STORE_MEMORY;
	c->store_timeout_ms = 5000;
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
	{"remember_entities", K_BOOL, offsetof(struct sn_config, remember_entities), 0, 0},
	U(min_nr_of_members, 1, 10000),
	U(heartbeat_interval_ms, 1, 3600000),
	U(failure_timeout_ms, 1, 86400000),
	{"downing", K_DOWNING, offsetof(struct sn_config, downing), 0, 0},
	U(stable_after_ms, 0, 86400000),
	{"data_dir", K_PATH, offsetof(struct sn_config, data_dir), 0, PATH_MAX},
	{"plugin_dir", K_PATH, offsetof(struct sn_config, plugin_dir), 0, PATH_MAX},
	{"postgres_conninfo", K_PATH, offsetof(struct sn_config, postgres_conninfo), 0, CONFIG_CONNINFO_BUF},
	{"state_store", K_STATE_STORE, offsetof(struct sn_config, state_store), 0, 0},
	U(store_timeout_ms, 1, 86400000),
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
			return fail(err, "%s: %s expects an integer from %u to %u", origin, k->name, k->min, k->max);
		*(uint32_t *)(void *)field = (uint32_t)v->i;
		return 0;
	case K_BOOL:
		if (v->kind == V_ATOM && strcmp(v->text, "true") == 0)
			*(bool *)(void *)field = true;
		else if (v->kind == V_ATOM && strcmp(v->text, "false") == 0)
			*(bool *)(void *)field = false;
		else
			return fail(err, "%s: %s expects true or false", origin, k->name);
		return 0;
	case K_DOWNING:
		if (v->kind == V_ATOM && strcmp(v->text, "keep_majority") == 0)
			c->downing = DOWNING_KEEP_MAJORITY;
		else if (v->kind == V_ATOM && strcmp(v->text, "manual") == 0)
			c->downing = DOWNING_MANUAL;
		else
			return fail(err, "%s: downing expects keep_majority or manual", origin);
		return 0;
	case K_STATE_STORE:
		if (v->kind == V_ATOM && strcmp(v->text, "memory") == 0)
			c->state_store = STATE_STORE_MEMORY;
		else if (v->kind == V_ATOM && strcmp(v->text, "lmdb") == 0)
			c->state_store = STATE_STORE_LMDB;
		else if (v->kind == V_ATOM && strcmp(v->text, "postgres") == 0)
			c->state_store = STATE_STORE_POSTGRES;
		else
			return fail(err, "%s: state_store expects memory, lmdb or postgres", origin);
		return 0;
	case K_TLS_VERIFY:
		if (v->kind == V_ATOM && strcmp(v->text, "peer") == 0)
			c->tls_verify_peer = true;
		else if (v->kind == V_ATOM && strcmp(v->text, "none") == 0)
			c->tls_verify_peer = false;
		else
			return fail(err, "%s: tls_verify expects peer or none", origin);
		return 0;
	case K_LOGLEVEL:
		if (v->kind != V_ATOM || log_level_parse(v->text, &c->log_level) != 0)
			return fail(err, "%s: log_level expects debug, info, warn or error", origin);
		return 0;
	case K_PATH: /* a string into a char array of k->max bytes */
		if (v->kind == V_INT || v->text[0] == '\0')
			return fail(err, "%s: %s expects a string", origin, k->name);
		if (strlcpy(field, v->text, k->max) >= k->max)
			return fail(err, "%s: %s is longer than %u bytes", origin, k->name, k->max - 1);
		return 0;
	}
	return fail(err, "%s: %s cannot be set", origin, k->name);
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
static int add_singleton(struct sn_config *c, const char *name, const char *type, const char *origin,
			 char err[CONFIG_ERR_BUF])
{
	if (c->nsingletons == NODE_TYPES_MAX)
		return fail(err, "%s: at most %d singletons", origin, NODE_TYPES_MAX);
	if (strlcpy(c->singleton_names[c->nsingletons], name, CONFIG_NAME_BUF) >= CONFIG_NAME_BUF ||
	    strlcpy(c->singleton_types[c->nsingletons], type, CONFIG_NAME_BUF) >= CONFIG_NAME_BUF)
		return fail(err, "%s: singleton name or type too long", origin);
	c->nsingletons++;
	return 0;
}

/* The singletons key's value: [{Name, Type}, ...], replacing any earlier
 * ones. */
static int read_singletons(struct reader *r, struct sn_config *c, const char *origin, char err[CONFIG_ERR_BUF])
{
	c->nsingletons = 0;
	if (!take(r, '['))
		return fail(err, "%s: singletons expects a list of {Name, Type}", origin);
	if (take(r, ']'))
		return 0;
	do {
		struct value name, type;
		if (!take(r, '{') || read_value(r, &name) || name.kind != V_ATOM || !take(r, ',') ||
		    read_value(r, &type) || type.kind != V_ATOM || !take(r, '}'))
			return fail(err, "%s: singletons expects a list of {Name, Type}", origin);
		int rc = add_singleton(c, name.text, type.text, origin, err);
		if (rc)
			return rc;
	} while (take(r, ','));
	if (!take(r, ']'))
		return fail(err, "%s: singletons expects a list of {Name, Type}", origin);
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
			return fail(err, "%s:%d: expected {Key, Value}.", origin, r.line);
		if (strcmp(key.text, "singletons") == 0) {
			char where[CONFIG_ERR_BUF / 2];
			snprintf(where, sizeof where, "%s:%d", origin, r.line);
			int rc = take(&r, ',') ? read_singletons(&r, c, where, err) : -EINVAL;
			if (rc == 0 && (!take(&r, '}') || !take(&r, '.')))
				rc = -EINVAL;
			if (rc)
				return err[0] ? rc : fail(err, "%s: expected {singletons, [{Name, Type}]}.", where);
			continue;
		}
		const struct key_spec *k = find_key(key.text, strlen(key.text));
		if (k == NULL)
			return fail(err, "%s:%d: unknown config key '%s'", origin, r.line, key.text);
		if (!take(&r, ',') || read_value(&r, &val) || !take(&r, '}') || !take(&r, '.'))
			return fail(err, "%s:%d: expected {%s, Value}.", origin, r.line, key.text);
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
		return fail(err, "--set %s: expected KEY=VALUE", kv);
	if ((size_t)(eq - kv) == strlen("singletons") && memcmp(kv, "singletons", (size_t)(eq - kv)) == 0) {
		struct reader r = {.p = eq + 1, .end = eq + 1 + strlen(eq + 1), .line = 1};
		int rc = read_singletons(&r, c, "--set singletons", err);
		skip_blank(&r);
		if (rc == 0 && r.p != r.end)
			rc = fail(err, "--set singletons: expects a list of {Name, Type}");
		return rc;
	}
	const struct key_spec *k = find_key(kv, (size_t)(eq - kv));
	if (k == NULL)
		return fail(err, "--set %s: unknown config key '%.*s'", kv, (int)(eq - kv), kv);
	const char *text = eq + 1;
	struct value v;
	char origin[CONFIG_ERR_BUF / 2];
	snprintf(origin, sizeof origin, "--set %.200s", kv);
	if (k->kind == K_PATH && text[0] != '"' && text[0] != '<') {
		/* A bare path, as a shell user writes it. */
		v.kind = V_STRING;
		if (strlcpy(v.text, text, sizeof v.text) >= sizeof v.text)
			return fail(err, "%s: path too long", origin);
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

/* ---- flags ---- */

static bool valid_type_name(const char *s)
{
	if (!islower((unsigned char)s[0]))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

/* Splits a comma list into out[]. */
static int split_list(const char *flag, const char *arg, char out[][CONFIG_NAME_BUF], size_t *n,
		      char err[CONFIG_ERR_BUF])
{
	*n = 0;
	const char *p = arg;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == 0 || len >= CONFIG_NAME_BUF)
			return fail(err, "%s %s: empty or too long element", flag, arg);
		if (*n == CONFIG_MAX_LIST)
			return fail(err, "%s: at most %d elements", flag, CONFIG_MAX_LIST);
		memcpy(out[*n], p, len);
		out[*n][len] = '\0';
		(*n)++;
		if (comma == NULL)
			return 0;
		p = comma + 1;
	}
}

static int read_file(const char *path, char **text, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return errno ? -errno : -EIO; /* never 0: the caller would read *text */
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	while (buf != NULL) {
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (n < cap)
			break;
		if (cap >= (16u << 20)) {
			free(buf);
			buf = NULL;
			break;
		}
		char *nb = realloc(buf, cap * 2);
		if (nb == NULL) {
			free(buf);
			buf = NULL;
		}
		buf = nb;
		cap *= 2;
	}
	fclose(f);
	if (buf == NULL)
		return -ENOMEM;
	*text = buf;
	*len = n;
	return 0;
}

static int read_cookie_file(const char *path, char cookie[CONFIG_NAME_BUF], char err[CONFIG_ERR_BUF])
{
	char *text = NULL;
	size_t len = 0;
	int rc = read_file(path, &text, &len);
	if (rc)
		return fail(err, "cookie file %s: %s", path, strerror(-rc));
	while (len > 0 && isspace((unsigned char)text[len - 1]))
		len--;
	size_t start = 0;
	while (start < len && isspace((unsigned char)text[start]))
		start++;
	bool ok = len > start && len - start < CONFIG_NAME_BUF && memchr(text + start, '\n', len - start) == NULL;
	if (ok) {
		memcpy(cookie, text + start, len - start);
		cookie[len - start] = '\0';
	}
	free(text);
	return ok ? 0 : fail(err, "cookie file %s: expected one line of at most %d characters", path,
			     CONFIG_NAME_BUF - 1);
}

/* As erl: use ~/.erlang.cookie, creating it (mode 0400) when absent. */
static int default_cookie(char cookie[CONFIG_NAME_BUF], char err[CONFIG_ERR_BUF])
{
	const char *home = getenv("HOME");
	if (home == NULL || home[0] == '\0')
		return fail(err, "no --cookie given and HOME is not set");
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/.erlang.cookie", home);
	if (access(path, F_OK) != 0) {
		uint8_t rnd[20];
		if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
			return fail(err, "cannot make a cookie: no randomness");
		char fresh[21];
		for (size_t i = 0; i < 20; i++)
			fresh[i] = (char)('A' + rnd[i] % 26);
		fresh[20] = '\0';
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0400);
		if (fd >= 0) {
			ssize_t w = write(fd, fresh, 20);
			close(fd);
			if (w != 20)
				return fail(err, "cannot write %s", path);
		}
	}
	return read_cookie_file(path, cookie, err);
}

static int derive_name(struct sn_config *c, const char *arg, bool short_names, char err[CONFIG_ERR_BUF])
{
	const char *flag = short_names ? "--sname" : "--name";
	const char *at = strchr(arg, '@');
	size_t alive_len = at ? (size_t)(at - arg) : strlen(arg);
	if (alive_len == 0)
		return fail(err, "%s %s: empty name", flag, arg);
	for (size_t i = 0; i < alive_len; i++) {
		unsigned char ch = (unsigned char)arg[i];
		if (!isalnum(ch) && ch != '_' && ch != '-' && ch != '.')
			return fail(err, "%s %s: names may use letters, digits, '_', '-' and '.'", flag, arg);
	}
	char host[CONFIG_NAME_BUF];
	if (at != NULL) {
		if (at[1] == '\0' || strchr(at + 1, '@'))
			return fail(err, "%s %s: expected NAME@HOST", flag, arg);
		strlcpy(host, at + 1, sizeof host);
	} else if (short_names) {
		if (gethostname(host, sizeof host) != 0)
			return fail(err, "%s %s: cannot read the host name", flag, arg);
		host[sizeof host - 1] = '\0';
		char *dot = strchr(host, '.');
		if (dot)
			*dot = '\0';
	} else {
		return fail(err, "--name %s: expected NAME@HOST (e.g. %s@127.0.0.1)", arg, arg);
	}
	if (short_names && strchr(host, '.'))
		return fail(err, "--sname %s: a short name's host has no dots; use --name", arg);
	if ((size_t)snprintf(c->name, sizeof c->name, "%.*s@%s", (int)alive_len, arg, host) >= sizeof c->name)
		return fail(err, "%s %s: name too long", flag, arg);
	c->short_names = short_names;
	return 0;
}

/* Each singleton's name is one no other process of the node has, and its
 * type one this node hosts (or proxies, --proxy-only). */
static int check_singletons(const struct sn_config *c, char err[CONFIG_ERR_BUF])
{
	if (c->ntypes + c->nsingletons > NODE_TYPES_MAX)
		return fail(err, "%zu types and %zu singletons; a node has at most %d in all", c->ntypes,
			    c->nsingletons, NODE_TYPES_MAX);
	for (size_t k = 0; k < c->nsingletons; k++) {
		const char *name = c->singleton_names[k], *type = c->singleton_types[k];
		if (!valid_type_name(name) || strncmp(name, "shardnode", 9) == 0 || strcmp(name, "net_kernel") == 0)
			return fail(err, "singleton %s: the name must be a lower-case atom, not net_kernel or "
				    "shardnode*", name);
		bool hosted = false;
		for (size_t t = 0; t < c->ntypes; t++)
			hosted |= strcmp(c->types[t], type) == 0;
		if (!hosted)
			return fail(err, "singleton %s: its type %s is not one of --types", name, type);
		for (size_t j = 0; j < k; j++)
			if (strcmp(c->singleton_names[j], name) == 0)
				return fail(err, "singleton %s: given twice", name);
	}
	return 0;
}

int config_parse_args(struct sn_config *c, int argc, char *const argv[], const char *const *default_types,
		      const char *const *known_types, char err[CONFIG_ERR_BUF])
{
	const char *config_file = NULL, *cookie_file = NULL;
	const char *sets[256];
	size_t nsets = 0;
	bool named = false, have_cookie = false, have_types = false;
	const char *singleton_args[NODE_TYPES_MAX];
	size_t nsingleton_args = 0;

	for (int i = 0; i < argc; i++) {
		const char *flag = argv[i];
		if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
			fputs(config_usage, stdout);
			return 1;
		}
		if (strcmp(flag, "--proxy-only") == 0) {
			c->proxy_only = true;
			continue;
		}
		if (strcmp(flag, "--stop-on-stdin-eof") == 0) {
			c->stop_on_stdin_eof = true;
			continue;
		}
		static const char *const with_arg[] = {"--name", "--sname", "--cookie", "--cookie-file", "--port",
						       "--join", "--types", "--config", "--set", "--singleton", NULL};
		bool known = false;
		for (size_t k = 0; with_arg[k]; k++)
			known |= strcmp(flag, with_arg[k]) == 0;
		if (!known)
			return fail(err, "unknown flag '%s' (try --help)", flag);
		if (i + 1 >= argc)
			return fail(err, "%s needs a value", flag);
		const char *arg = argv[++i];
		int rc = 0;
		if (strcmp(flag, "--name") == 0 || strcmp(flag, "--sname") == 0) {
			if (named)
				return fail(err, "%s: give one of --name or --sname, once", flag);
			named = true;
			rc = derive_name(c, arg, flag[2] == 's', err);
		} else if (strcmp(flag, "--cookie") == 0) {
			if (arg[0] == '\0' || strlcpy(c->cookie, arg, sizeof c->cookie) >= sizeof c->cookie)
				return fail(err, "--cookie: expected 1 to %d characters", CONFIG_NAME_BUF - 1);
			have_cookie = true;
		} else if (strcmp(flag, "--cookie-file") == 0) {
			cookie_file = arg;
		} else if (strcmp(flag, "--port") == 0) {
			char *end;
			long v = strtol(arg, &end, 10);
			if (*arg == '\0' || *end != '\0' || v < 0 || v > 65535)
				return fail(err, "--port %s: expected 0 to 65535", arg);
			c->port = (uint16_t)v;
		} else if (strcmp(flag, "--join") == 0) {
			rc = split_list(flag, arg, c->join, &c->njoin, err);
			for (size_t k = 0; rc == 0 && k < c->njoin; k++) {
				const char *at = strchr(c->join[k], '@');
				if (at == NULL || at == c->join[k] || at[1] == '\0')
					rc = fail(err, "--join %s: expected NAME@HOST", c->join[k]);
			}
		} else if (strcmp(flag, "--types") == 0) {
			rc = split_list(flag, arg, c->types, &c->ntypes, err);
			have_types = true;
		} else if (strcmp(flag, "--config") == 0) {
			config_file = arg;
		} else if (strcmp(flag, "--singleton") == 0) {
			if (nsingleton_args == NODE_TYPES_MAX)
				return fail(err, "--singleton: at most %d singletons", NODE_TYPES_MAX);
			singleton_args[nsingleton_args++] = arg;
		} else {
			if (nsets == sizeof sets / sizeof sets[0])
				return fail(err, "--set: too many");
			sets[nsets++] = arg;
		}
		if (rc)
			return rc;
	}
	if (!named)
		return fail(err, "give --name NAME@HOST or --sname NAME");
	if (have_cookie && cookie_file)
		return fail(err, "give --cookie or --cookie-file, not both");

	if (!have_types) {
		for (c->ntypes = 0; default_types[c->ntypes] && c->ntypes < CONFIG_MAX_LIST; c->ntypes++)
			strlcpy(c->types[c->ntypes], default_types[c->ntypes], CONFIG_NAME_BUF);
	}
	if (c->ntypes > NODE_TYPES_MAX)
		return fail(err, "--types: %zu types; a node hosts at most %d", c->ntypes, NODE_TYPES_MAX);
	for (size_t k = 0; k < c->ntypes; k++) {
		if (!valid_type_name(c->types[k]))
			return fail(err, "--types: '%s' is not an entity type name", c->types[k]);
		for (size_t j = 0; j < k; j++)
			if (strcmp(c->types[j], c->types[k]) == 0)
				return fail(err, "--types: '%s' given twice", c->types[k]);
	}

	if (config_file != NULL) {
		char *text = NULL;
		size_t len = 0;
		int rc = read_file(config_file, &text, &len);
		if (rc)
			return fail(err, "--config %s: %s", config_file, strerror(-rc));
		rc = config_apply_text(c, text, len, config_file, err);
		free(text);
		if (rc)
			return rc;
	}
	for (size_t k = 0; k < nsets; k++) {
		int rc = config_set(c, sets[k], err);
		if (rc)
			return rc;
	}
	/* --singleton flags replace the singletons of the file and --set. */
	if (nsingleton_args > 0)
		c->nsingletons = 0;
	for (size_t k = 0; k < nsingleton_args; k++) {
		const char *arg = singleton_args[k], *eq = strchr(arg, '=');
		char name[CONFIG_NAME_BUF];
		if (eq == NULL || eq == arg || (size_t)(eq - arg) >= sizeof name)
			return fail(err, "--singleton %s: expected NAME=TYPE", arg);
		memcpy(name, arg, (size_t)(eq - arg));
		name[eq - arg] = '\0';
		int rc = add_singleton(c, name, eq + 1, "--singleton", err);
		if (rc)
			return rc;
	}
	int rc = check_singletons(c, err);
	if (rc)
		return rc;
	/* A member is unreachable, and its quorum lease runs out, after this
	 * long without a heartbeat: with no room for one, both would flap. */
	if (c->failure_timeout_ms <= c->heartbeat_interval_ms)
		return fail(err, "failure_timeout_ms (%u) must be greater than heartbeat_interval_ms (%u)",
			    c->failure_timeout_ms, c->heartbeat_interval_ms);
	int ntls = (c->tls_certfile[0] != '\0') + (c->tls_keyfile[0] != '\0') + (c->tls_cacertfile[0] != '\0');
	if (ntls != 0 && ntls != 3)
		return fail(err, "TLS needs tls_certfile, tls_keyfile and tls_cacertfile, all three");
	if (c->state_store == STATE_STORE_POSTGRES && c->postgres_conninfo[0] == '\0')
		return fail(err, "state_store postgres needs postgres_conninfo (a libpq connection string)");
	if (c->data_dir[0] == '\0') {
		char alive[CONFIG_NAME_BUF];
		strlcpy(alive, c->name, sizeof alive);
		*strchr(alive, '@') = '\0';
		snprintf(c->data_dir, sizeof c->data_dir, "./shardnode-data/%s", alive);
	}
	if (known_types != NULL) {
		rc = config_check_types(c, known_types, err);
		if (rc)
			return rc;
	}
	/* A path this long cannot be opened: refused after every other check,
	 * with the message config_resolve_cookie would give for it. */
	if (cookie_file && strlcpy(c->cookie_file, cookie_file, sizeof c->cookie_file) >= sizeof c->cookie_file)
		return fail(err, "cookie file %s: %s", cookie_file, strerror(ENAMETOOLONG));
	return 0;
}

static bool listed(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (strcmp(*list, name) == 0)
			return true;
	return false;
}

int config_check_types(const struct sn_config *c, const char *const *known_types, char err[CONFIG_ERR_BUF])
{
	for (size_t k = 0; k < c->ntypes; k++)
		if (!listed(known_types, c->types[k]))
			return fail(err, "--types: unknown entity type '%s'", c->types[k]);
	for (size_t k = 0; k < c->nsingletons; k++)
		if (listed(known_types, c->singleton_names[k]))
			return fail(err, "singleton %s: the name is an entity type's", c->singleton_names[k]);
	return 0;
}

int config_resolve_cookie(struct sn_config *c, char err[CONFIG_ERR_BUF])
{
	if (c->cookie_file[0] != '\0')
		return read_cookie_file(c->cookie_file, c->cookie, err);
	if (c->cookie[0] != '\0')
		return 0;
	return default_cookie(c->cookie, err);
}
