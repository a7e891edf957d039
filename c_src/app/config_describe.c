/* config_describe.c — see config_describe.h. */
#include "app/config_describe.h"
#include "app/version.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Appends to out[*len..n), keeping it NUL-terminated; once it is full,
 * the end says "...". */
static void add(char *out, size_t n, size_t *len, const char *fmt, ...)
{
	if (*len + 1 >= n)
		return;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(out + *len, n - *len, fmt, ap);
	va_end(ap);
	if (w < 0)
		return;
	if ((size_t)w >= n - *len) {
		*len = n - 1;
		if (n >= 4)
			memcpy(out + n - 4, "...", 4);
		return;
	}
	*len += (size_t)w;
}

/* The types of one kind (on the host or not), comma-separated; false if
 * there is none. */
static bool add_types(const struct sn_config *cfg, bool on_host, char *out, size_t n, size_t *len)
{
	bool any = false;
	for (size_t k = 0; k < cfg->ntypes; k++) {
		if (cfg->type_on_host[k] != on_host)
			continue;
		add(out, n, len, "%s%s", any ? "," : "", cfg->types[k]);
		any = true;
	}
	return any;
}

const char *config_store_name(enum state_store_kind kind)
{
	switch (kind) {
	case STATE_STORE_LMDB: return "lmdb";
	case STATE_STORE_POSTGRES: return "postgres";
	default: return "memory";
	}
}

void config_describe(const struct sn_config *cfg, char *out, size_t n)
{
	size_t len = 0;
	if (n == 0)
		return;
	out[0] = '\0';
	/* The version first: in a rolling upgrade the logs show which build
	 * each start of a member ran. */
	add(out, n, &len, "shardnode %s %s starting: types ", SHARDNODE_VERSION, cfg->name);
	if (!add_types(cfg, false, out, n, &len))
		add(out, n, &len, "none");
	if (cfg->host[0] != '\0') {
		add(out, n, &len, ", written in Erlang (host %s): ", cfg->host);
		if (!add_types(cfg, true, out, n, &len))
			add(out, n, &len, "as the host says");
	}
	for (size_t k = 0; k < cfg->nsingletons; k++)
		add(out, n, &len, "%s%s=%s", k == 0 ? "; singletons " : ",", cfg->singleton_names[k],
		    cfg->singleton_types[k]);
	if (cfg->proxy_only)
		add(out, n, &len, " (proxy only)");
	add(out, n, &len, "; store %s", config_store_name(cfg->state_store));
	if (cfg->state_store == STATE_STORE_LMDB)
		add(out, n, &len, " in %s, state_replicas %u", cfg->data_dir, cfg->state_replicas);
	add(out, n, &len, "; TLS %s", cfg->tls_certfile[0] != '\0' ? "on" : "off");
	if (cfg->metrics_port != 0)
		add(out, n, &len, "; metrics port %u", cfg->metrics_port);
	add(out, n, &len, "; seeds ");
	if (cfg->njoin == 0 && cfg->join_dns[0] == '\0')
		add(out, n, &len, "none");
	for (size_t k = 0; k < cfg->njoin; k++)
		add(out, n, &len, "%s%s", k == 0 ? "" : ",", cfg->join[k]);
	if (cfg->join_dns[0] != '\0')
		add(out, n, &len, "%sfrom DNS name %s", cfg->njoin == 0 ? "" : ", ", cfg->join_dns);
}
