/* config_args.c — the command line (config.h's config_parse_args): flags,
 * the cookie from its file or ~/.erlang.cookie, the node's name, the types
 * and singletons checked; on top of config.c (config_internal.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bsd/string.h>

#include "app/config.h"
#include "app/config_internal.h"
#include "protocol/node_name.h"
#include "base/node_limits.h"

bool config_valid_type_name(const char *s)
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
			return config_fail(err, "%s %s: empty or too long element", flag, arg);
		if (*n == CONFIG_MAX_LIST)
			return config_fail(err, "%s: at most %d elements", flag, CONFIG_MAX_LIST);
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
		return config_fail(err, "cookie file %s: %s", path, strerror(-rc));
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
	return ok ? 0 : config_fail(err, "cookie file %s: expected one line of at most %d characters", path,
			     CONFIG_NAME_BUF - 1);
}

/* As erl: use ~/.erlang.cookie, creating it (mode 0400) when absent. */
static int default_cookie(char cookie[CONFIG_NAME_BUF], char err[CONFIG_ERR_BUF])
{
	const char *home = getenv("HOME");
	if (home == NULL || home[0] == '\0')
		return config_fail(err, "no --cookie given and HOME is not set");
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/.erlang.cookie", home);
	if (access(path, F_OK) != 0) {
		uint8_t rnd[20];
		if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
			return config_fail(err, "cannot make a cookie: no randomness");
		char fresh[21];
		for (size_t i = 0; i < 20; i++)
			fresh[i] = (char)('A' + rnd[i] % 26);
		fresh[20] = '\0';
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0400);
		if (fd >= 0) {
			ssize_t w = write(fd, fresh, 20);
			close(fd);
			if (w != 20)
				return config_fail(err, "cannot write %s", path);
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
		return config_fail(err, "%s %s: empty name", flag, arg);
	for (size_t i = 0; i < alive_len; i++) {
		unsigned char ch = (unsigned char)arg[i];
		if (!isalnum(ch) && ch != '_' && ch != '-' && ch != '.')
			return config_fail(err, "%s %s: names may use letters, digits, '_', '-' and '.'", flag, arg);
	}
	char host[CONFIG_NAME_BUF];
	if (at != NULL) {
		if (at[1] == '\0' || strchr(at + 1, '@'))
			return config_fail(err, "%s %s: expected NAME@HOST", flag, arg);
		strlcpy(host, at + 1, sizeof host);
	} else if (short_names) {
		if (gethostname(host, sizeof host) != 0)
			return config_fail(err, "%s %s: cannot read the host name", flag, arg);
		host[sizeof host - 1] = '\0';
		char *dot = strchr(host, '.');
		if (dot)
			*dot = '\0';
	} else {
		return config_fail(err, "--name %s: expected NAME@HOST (e.g. %s@127.0.0.1)", arg, arg);
	}
	if (short_names && strchr(host, '.'))
		return config_fail(err, "--sname %s: a short name's host has no dots; use --name", arg);
	if ((size_t)snprintf(c->name, sizeof c->name, "%.*s@%s", (int)alive_len, arg, host) >= sizeof c->name)
		return config_fail(err, "%s %s: name too long", flag, arg);
	c->short_names = short_names;
	return 0;
}

/* A DNS name as --join-dns takes it: labels of letters, digits and '-',
 * separated by dots (a trailing dot allowed), none empty or over 63. */
static bool dns_name_valid(const char *name)
{
	size_t label = 0;
	for (const char *p = name; *p != '\0'; p++) {
		unsigned char ch = (unsigned char)*p;
		if (ch == '.') {
			if (label == 0)
				return false;
			label = 0;
		} else if (isalnum(ch) || ch == '-' || ch == '_') {
			if (++label > 63)
				return false;
		} else {
			return false;
		}
	}
	return name[0] != '\0';
}

/* Whether the types written in Erlang are named by the host at start
 * (`host` without --host-types, not proxy-only: node_app's gather_types). */
static bool host_names_types(const struct sn_config *c)
{
	bool given = false;
	for (size_t t = 0; t < c->ntypes; t++)
		given |= c->type_on_host[t];
	return c->host[0] != '\0' && !given && !c->proxy_only;
}

/* Each singleton's name is one no other process of the node has, and its
 * type one this node hosts (or proxies, --proxy-only) — or, when the host
 * names the types at start, one it may name: node_app checks it then. */
static int check_singletons(const struct sn_config *c, char err[CONFIG_ERR_BUF])
{
	if (c->ntypes + c->nsingletons > NODE_TYPES_MAX)
		return config_fail(err, "%zu types and %zu singletons; a node has at most %d in all", c->ntypes,
			    c->nsingletons, NODE_TYPES_MAX);
	for (size_t k = 0; k < c->nsingletons; k++) {
		const char *name = c->singleton_names[k], *type = c->singleton_types[k];
		if (!config_valid_type_name(name) || strncmp(name, "shardnode", 9) == 0 || strcmp(name, "net_kernel") == 0)
			return config_fail(err, "singleton %s: the name must be a lower-case atom, not net_kernel or "
				    "shardnode*", name);
		bool hosted = false;
		for (size_t t = 0; t < c->ntypes; t++)
			hosted |= strcmp(c->types[t], type) == 0;
		if (!hosted && !(host_names_types(c) && config_valid_type_name(type)))
			return config_fail(err, "singleton %s: its type %s is not one of --types", name, type);
		for (size_t j = 0; j < k; j++)
			if (strcmp(c->singleton_names[j], name) == 0)
				return config_fail(err, "singleton %s: given twice", name);
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
	const char *host_arg = NULL, *join_dns_arg = NULL;
	char host_types[CONFIG_MAX_LIST][CONFIG_NAME_BUF];
	size_t nhost_types = 0;

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
						       "--join", "--join-dns", "--types", "--config", "--set", "--singleton", "--host",
						       "--host-types", NULL};
		bool known = false;
		for (size_t k = 0; with_arg[k]; k++)
			known |= strcmp(flag, with_arg[k]) == 0;
		if (!known)
			return config_fail(err, "unknown flag '%s' (try --help)", flag);
		if (i + 1 >= argc)
			return config_fail(err, "%s needs a value", flag);
		const char *arg = argv[++i];
		int rc = 0;
		if (strcmp(flag, "--name") == 0 || strcmp(flag, "--sname") == 0) {
			if (named)
				return config_fail(err, "%s: give one of --name or --sname, once", flag);
			named = true;
			rc = derive_name(c, arg, flag[2] == 's', err);
		} else if (strcmp(flag, "--cookie") == 0) {
			if (arg[0] == '\0' || strlcpy(c->cookie, arg, sizeof c->cookie) >= sizeof c->cookie)
				return config_fail(err, "--cookie: expected 1 to %d characters", CONFIG_NAME_BUF - 1);
			have_cookie = true;
		} else if (strcmp(flag, "--cookie-file") == 0) {
			cookie_file = arg;
		} else if (strcmp(flag, "--port") == 0) {
			char *end;
			long v = strtol(arg, &end, 10);
			if (*arg == '\0' || *end != '\0' || v < 0 || v > 65535)
				return config_fail(err, "--port %s: expected 0 to 65535", arg);
			c->port = (uint16_t)v;
		} else if (strcmp(flag, "--join") == 0) {
			rc = split_list(flag, arg, c->join, &c->njoin, err);
			for (size_t k = 0; rc == 0 && k < c->njoin; k++) {
				const char *at = strchr(c->join[k], '@');
				if (at == NULL || at == c->join[k] || at[1] == '\0')
					rc = config_fail(err, "--join %s: expected NAME@HOST", c->join[k]);
			}
		} else if (strcmp(flag, "--join-dns") == 0) {
			join_dns_arg = arg;
		} else if (strcmp(flag, "--types") == 0) {
			/* An empty list: none of the built-in types (a node of
			 * types written in Erlang only, or of none). */
			c->ntypes = 0;
			rc = arg[0] == '\0' ? 0 : split_list(flag, arg, c->types, &c->ntypes, err);
			have_types = true;
		} else if (strcmp(flag, "--host") == 0) {
			host_arg = arg;
		} else if (strcmp(flag, "--host-types") == 0) {
			rc = split_list(flag, arg, host_types, &nhost_types, err);
		} else if (strcmp(flag, "--config") == 0) {
			config_file = arg;
		} else if (strcmp(flag, "--singleton") == 0) {
			if (nsingleton_args == NODE_TYPES_MAX)
				return config_fail(err, "--singleton: at most %d singletons", NODE_TYPES_MAX);
			singleton_args[nsingleton_args++] = arg;
		} else {
			if (nsets == sizeof sets / sizeof sets[0])
				return config_fail(err, "--set: too many");
			sets[nsets++] = arg;
		}
		if (rc)
			return rc;
	}
	if (!named)
		return config_fail(err, "give --name NAME@HOST or --sname NAME");
	if (have_cookie && cookie_file)
		return config_fail(err, "give --cookie or --cookie-file, not both");

	if (!have_types) {
		for (c->ntypes = 0; default_types[c->ntypes] && c->ntypes < CONFIG_MAX_LIST; c->ntypes++)
			strlcpy(c->types[c->ntypes], default_types[c->ntypes], CONFIG_NAME_BUF);
	}
	/* The types written in Erlang join the C ones: to the rest of the
	 * node they are types like any other. */
	for (size_t k = 0; k < nhost_types; k++) {
		if (c->ntypes == CONFIG_MAX_LIST)
			return config_fail(err, "--host-types: too many types");
		strlcpy(c->types[c->ntypes], host_types[k], CONFIG_NAME_BUF);
		c->type_on_host[c->ntypes++] = true;
	}
	if (c->ntypes > NODE_TYPES_MAX)
		return config_fail(err, "--types: %zu types; a node hosts at most %d", c->ntypes, NODE_TYPES_MAX);
	for (size_t k = 0; k < c->ntypes; k++) {
		if (!config_valid_type_name(c->types[k]))
			return config_fail(err, "--types: '%s' is not an entity type name", c->types[k]);
		for (size_t j = 0; j < k; j++) {
			if (strcmp(c->types[j], c->types[k]) != 0)
				continue;
			/* Say where each came from: a C type (--types, or the
			 * default counter,kv when none is given) and one written
			 * in Erlang (--host-types: the wrapper's `entities`). */
			if (c->type_on_host[j] != c->type_on_host[k])
				return config_fail(err, "type '%s' is both a C type (%s) and an Erlang type (--host-types, "
						   "the `entities` of shardnode:start_node/1): rename one, or give --types "
						   "without it", c->types[k],
						   have_types ? "--types" : "one of the default types counter,kv");
			return config_fail(err, "%s: '%s' given twice", c->type_on_host[k] ? "--host-types" : "--types",
					   c->types[k]);
		}
	}

	if (config_file != NULL) {
		char *text = NULL;
		size_t len = 0;
		int rc = read_file(config_file, &text, &len);
		if (rc)
			return config_fail(err, "--config %s: %s", config_file, strerror(-rc));
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
			return config_fail(err, "--singleton %s: expected NAME=TYPE", arg);
		memcpy(name, arg, (size_t)(eq - arg));
		name[eq - arg] = '\0';
		int rc = config_add_singleton(c, name, eq + 1, "--singleton", err);
		if (rc)
			return rc;
	}
	/* --host wins over the file and --set, as every flag does; before the
	 * singletons, whose types the host may name. */
	if (host_arg != NULL && strlcpy(c->host, host_arg, sizeof c->host) >= sizeof c->host)
		return config_fail(err, "--host %s: expected NAME@HOST, the BEAM node hosting this node's entities",
				   host_arg);
	int rc = check_singletons(c, err);
	if (rc)
		return rc;
	/* A member is unreachable, and its quorum lease runs out, after this
	 * long without a heartbeat: with no room for one, both would flap. */
	if (c->failure_timeout_ms <= c->heartbeat_interval_ms)
		return config_fail(err, "failure_timeout_ms (%u) must be greater than heartbeat_interval_ms (%u)",
			    c->failure_timeout_ms, c->heartbeat_interval_ms);
	int ntls = (c->tls_certfile[0] != '\0') + (c->tls_keyfile[0] != '\0') + (c->tls_cacertfile[0] != '\0');
	if (ntls != 0 && ntls != 3)
		return config_fail(err, "TLS needs tls_certfile, tls_keyfile and tls_cacertfile, all three");
	if (nhost_types > 0 && c->host[0] == '\0')
		return config_fail(err, "--host-types: the types run on a host: give --host NODE (or the host key)");
	if (c->host[0] != '\0' && !node_name_valid(c->host, strlen(c->host)))
		return config_fail(err, "host %s: expected NAME@HOST, the BEAM node hosting this node's entities", c->host);
	if (c->instance_reports_to[0] != '\0' && !node_name_valid(c->instance_reports_to, strlen(c->instance_reports_to)))
		return config_fail(err, "instance_reports_to %s: expected NAME@HOST, the node that counts entity instances",
				   c->instance_reports_to);
	if (join_dns_arg != NULL && strlcpy(c->join_dns, join_dns_arg, sizeof c->join_dns) >= sizeof c->join_dns)
		return config_fail(err, "--join-dns: a DNS name has at most %d characters", CONFIG_DNS_NAME_BUF - 1);
	if ((join_dns_arg != NULL || c->join_dns[0] != '\0') && !dns_name_valid(c->join_dns))
		return config_fail(err, "join_dns %s: expected a DNS name (letters, digits, '-' and '.')", c->join_dns);
	if (c->state_store == STATE_STORE_POSTGRES && c->postgres_conninfo[0] == '\0')
		return config_fail(err, "state_store postgres needs postgres_conninfo (a libpq connection string)");
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
		return config_fail(err, "cookie file %s: %s", cookie_file, strerror(ENAMETOOLONG));
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
		if (!c->type_on_host[k] && !listed(known_types, c->types[k]))
			return config_fail(err, "--types: unknown entity type '%s'", c->types[k]);
	for (size_t k = 0; k < c->nsingletons; k++)
		if (listed(known_types, c->singleton_names[k]))
			return config_fail(err, "singleton %s: the name is an entity type's", c->singleton_names[k]);
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
