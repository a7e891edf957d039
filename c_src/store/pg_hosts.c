/* pg_hosts.c — see pg_hosts.h. */
#include "store/pg_hosts.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* How many comma-separated entries `list` has (NULL or "": 0). */
static uint32_t entries(const char *list)
{
	if (list == NULL || list[0] == '\0')
		return 0;
	uint32_t n = 1;
	for (const char *p = list; *p; p++)
		n += *p == ',';
	return n;
}

/* Entry k of `list`: *at its first byte, its length returned. */
static size_t entry(const char *list, uint32_t k, const char **at)
{
	const char *p = list;
	for (uint32_t i = 0; i < k; i++)
		p = strchr(p, ',') + 1; /* k < entries(list) */
	const char *end = strchr(p, ',');
	*at = p;
	return end ? (size_t)(end - p) : strlen(p);
}

static const char *value(const struct pg_hosts *h, const char *keyword)
{
	for (const PQconninfoOption *o = h->opts; o->keyword != NULL; o++)
		if (strcmp(o->keyword, keyword) == 0)
			return o->val;
	return NULL;
}

int pg_hosts_parse(struct pg_hosts *h, const char *conninfo, char **why)
{
	*why = NULL;
	h->opts = PQconninfoParse(conninfo, why);
	if (h->opts == NULL)
		return *why != NULL ? -EINVAL : -ENOMEM;
	uint32_t hosts = entries(value(h, "host")), addrs = entries(value(h, "hostaddr"));
	h->n = hosts > addrs ? hosts : addrs;
	if (h->n == 0)
		h->n = 1;
	return 0;
}

void pg_hosts_free(struct pg_hosts *h)
{
	if (h->opts != NULL)
		PQconninfoFree(h->opts);
	h->opts = NULL;
}

uint32_t pg_hosts_connect_timeout_ms(const struct pg_hosts *h, uint32_t default_ms)
{
	const char *v = value(h, "connect_timeout");
	if (v == NULL)
		return default_ms;
	char *end;
	long s = strtol(v, &end, 10);
	if (end == v || *end != '\0' || s <= 0)
		return default_ms;
	return (uint32_t)(s < 2 ? 2000 : s > 3600 ? 3600000 : s * 1000);
}

/* Whether entry k of `list` is `text`; a list of one entry (or none,
 * libpq's default) stands for every k. */
static bool entry_is(const char *list, uint32_t k, const char *text, const char *fallback)
{
	uint32_t n = entries(list);
	if (n == 0)
		return fallback != NULL && strcmp(text, fallback) == 0;
	if (n > 1 && k >= n)
		return false; /* lists of different lengths: libpq refuses them when connecting */
	const char *at;
	size_t len = entry(list, n == 1 ? 0 : k, &at);
	return strlen(text) == len && memcmp(at, text, len) == 0;
}

int pg_hosts_index(const struct pg_hosts *h, const char *host, const char *port)
{
	if (host == NULL || port == NULL)
		return -1;
	const char *hosts = value(h, "host"), *addrs = value(h, "hostaddr"), *ports = value(h, "port");
	for (uint32_t k = 0; k < h->n; k++)
		if ((entry_is(hosts, k, host, NULL) || entry_is(addrs, k, host, NULL)) &&
		    entry_is(ports, k, port, "5432"))
			return (int)k;
	return -1;
}

/* `list` (of n entries) begun at entry `first`; malloc'ed, NULL when
 * memory runs out. A list of one entry or none is copied as it is. */
static char *rotated(const char *list, uint32_t n, uint32_t first)
{
	char *out = malloc(strlen(list) + 1);
	if (out == NULL || entries(list) != n || n < 2) {
		if (out != NULL)
			memcpy(out, list, strlen(list) + 1);
		return out;
	}
	size_t o = 0;
	for (uint32_t i = 0; i < n; i++) {
		const char *at;
		size_t len = entry(list, (first + i) % n, &at);
		if (i > 0)
			out[o++] = ',';
		memcpy(out + o, at, len);
		o += len;
	}
	out[o] = '\0';
	return out;
}

PGconn *pg_hosts_connect_start(const struct pg_hosts *h, uint32_t first)
{
	size_t count = 0;
	for (const PQconninfoOption *o = h->opts; o->keyword != NULL; o++)
		count += o->val != NULL;
	const char **keys = calloc(count + 1, sizeof *keys), **vals = calloc(count + 1, sizeof *vals);
	char **owned = calloc(count + 1, sizeof *owned);
	PGconn *pg = NULL;
	bool ok = keys != NULL && vals != NULL && owned != NULL;
	size_t k = 0;
	for (const PQconninfoOption *o = h->opts; ok && o->keyword != NULL; o++) {
		if (o->val == NULL)
			continue;
		keys[k] = o->keyword;
		vals[k] = o->val;
		if (first != 0 && (strcmp(o->keyword, "host") == 0 || strcmp(o->keyword, "hostaddr") == 0 ||
				   strcmp(o->keyword, "port") == 0)) {
			owned[k] = rotated(o->val, h->n, first);
			ok = owned[k] != NULL;
			vals[k] = owned[k];
		}
		k++;
	}
	if (ok)
		pg = PQconnectStartParams(keys, vals, 0); /* libpq copies them */
	for (size_t i = 0; owned != NULL && i < count; i++)
		free(owned[i]);
	free(owned);
	free(keys);
	free(vals);
	return pg;
}
