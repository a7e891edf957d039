/* dns_seeds.c — see dns_seeds.h. */
#include "app/dns_seeds.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

#include "app/config.h"
#include "cluster/membership.h"

#define BACKOFF_FIRST_MS 250
#define BACKOFF_MAX_MS 2000

struct dns_seeds {
	struct dns_seeds_config cfg;
	char name[CONFIG_DNS_NAME_BUF];
	char our_node[NODE_NAME_BUF];
	struct resolver *resolver;
	struct resolve_req *pending;
	struct evloop_timer timer;
	uint32_t backoff_ms;
	bool failing;          /* the last look-up failed (logged once a streak) */
	uint64_t stable_since; /* the loop's ms the answer last changed */
	/* The seeds membership holds: the fixed ones, then those of the name
	 * (sorted), pointed to by `seeds`. */
	char names[CONFIG_MAX_LIST + DNS_SEEDS_MAX][NODE_NAME_BUF];
	const char *seeds[CONFIG_MAX_LIST + DNS_SEEDS_MAX];
	size_t nfixed, nfound;
};

static int by_name(const void *a, const void *b) { return strcmp(a, b); }

size_t dns_seeds_names(const char *our_node, const char (*addrs)[RESOLVER_ADDR_BUF], size_t n,
		       char (*out)[NODE_NAME_BUF], size_t max)
{
	const char *at = strchr(our_node, '@');
	size_t base = at != NULL ? (size_t)(at - our_node) : strlen(our_node);
	size_t count = 0;
	for (size_t k = 0; k < n && count < max; k++) {
		size_t alen = strnlen(addrs[k], RESOLVER_ADDR_BUF);
		if (base + 1 + alen >= NODE_NAME_BUF || alen == 0)
			continue;
		memcpy(out[count], our_node, base);
		out[count][base] = '@';
		memcpy(out[count] + base + 1, addrs[k], alen);
		out[count][base + 1 + alen] = '\0';
		bool seen = false;
		for (size_t j = 0; j < count && !seen; j++)
			seen = strcmp(out[j], out[count]) == 0;
		count += !seen;
	}
	qsort(out, count, sizeof out[0], by_name);
	return count;
}

bool dns_seeds_lowest(const char *our_node, const char (*names)[NODE_NAME_BUF], size_t n)
{
	return n > 0 && strcmp(names[0], our_node) == 0;
}

static void lookup(struct dns_seeds *d);

static bool still_joining(const struct dns_seeds *d)
{
	return strcmp(membership_self_status(d->cfg.membership), "joining") == 0;
}

static void schedule(struct dns_seeds *d)
{
	if (!still_joining(d))
		return; /* a member: the seeds have done their part */
	evloop_timer_start(d->cfg.loop, &d->timer, d->backoff_ms);
	d->backoff_ms = d->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : d->backoff_ms * 2;
}

/* The answer replaces the seeds of the name; returns whether it changed. */
static bool take(struct dns_seeds *d, const char (*addrs)[RESOLVER_ADDR_BUF], size_t n)
{
	char found[DNS_SEEDS_MAX][NODE_NAME_BUF];
	size_t nfound = dns_seeds_names(d->our_node, addrs, n, found, DNS_SEEDS_MAX);
	bool same = nfound == d->nfound;
	for (size_t k = 0; k < nfound && same; k++)
		same = strcmp(found[k], d->names[d->nfixed + k]) == 0;
	if (same)
		return false;
	memcpy(d->names[d->nfixed], found, nfound * sizeof found[0]);
	d->nfound = nfound;
	for (size_t k = 0; k < d->nfixed + nfound; k++)
		d->seeds[k] = d->names[k];
	membership_set_seeds(d->cfg.membership, d->seeds, d->nfixed + nfound);
	return true;
}

static void on_answer(int err, const char (*addrs)[RESOLVER_ADDR_BUF], size_t n, void *arg)
{
	struct dns_seeds *d = arg;
	d->pending = NULL;
	uint64_t now = evloop_now_ms(d->cfg.loop);
	if (err != 0) {
		if (!d->failing)
			log_warn(d->cfg.log, "join_dns %s: %s; looking it up again with back-off", d->name,
				 err == -ENOENT ? "no address" : strerror(-err));
		d->failing = true;
		schedule(d);
		return;
	}
	d->failing = false;
	if (take(d, addrs, n)) {
		d->stable_since = now;
		d->backoff_ms = BACKOFF_FIRST_MS;
		log_info(d->cfg.log, "join_dns %s: %zu seeds, the lowest %s", d->name, d->nfound,
			 d->nfound ? d->names[d->nfixed] : "none");
	}
	const char (*found)[NODE_NAME_BUF] = (const char (*)[NODE_NAME_BUF])d->names + d->nfixed;
	if (d->nfixed == 0 && still_joining(d) && now - d->stable_since >= d->cfg.form_after_ms &&
	    dns_seeds_lowest(d->our_node, found, d->nfound))
		membership_form_cluster(d->cfg.membership);
	schedule(d);
}

static void lookup(struct dns_seeds *d)
{
	int err = 0;
	d->pending = resolver_start_all(d->resolver, d->name, on_answer, d, &err);
	if (d->pending == NULL) {
		log_warn(d->cfg.log, "join_dns %s: cannot look it up now: %s", d->name, strerror(-err));
		schedule(d);
	}
}

static void on_timer(struct evloop *loop, void *arg)
{
	(void)loop;
	struct dns_seeds *d = arg;
	if (still_joining(d))
		lookup(d);
}

struct dns_seeds *dns_seeds_start(const struct dns_seeds_config *cfg, int *err)
{
	if (cfg->nfixed > CONFIG_MAX_LIST || strlen(cfg->name) >= CONFIG_DNS_NAME_BUF ||
	    strlen(cfg->our_node) >= NODE_NAME_BUF) {
		*err = -EINVAL;
		return NULL;
	}
	struct dns_seeds *d = calloc(1, sizeof *d);
	if (d == NULL || (d->resolver = resolver_new(cfg->loop)) == NULL) {
		free(d);
		*err = -ENOMEM;
		return NULL;
	}
	evloop_timer_init(&d->timer, on_timer, d); /* before any dns_seeds_free */
	d->cfg = *cfg;
	strlcpy(d->name, cfg->name, sizeof d->name);
	strlcpy(d->our_node, cfg->our_node, sizeof d->our_node);
	d->cfg.name = d->name;
	d->cfg.our_node = d->our_node;
	d->cfg.fixed = NULL;
	d->nfixed = cfg->nfixed;
	for (size_t k = 0; k < cfg->nfixed; k++) {
		if (strlcpy(d->names[k], cfg->fixed[k], sizeof d->names[k]) >= sizeof d->names[k]) {
			dns_seeds_free(d);
			*err = -EINVAL;
			return NULL;
		}
		d->seeds[k] = d->names[k];
	}
	d->backoff_ms = BACKOFF_FIRST_MS;
	d->stable_since = evloop_now_ms(cfg->loop);
	lookup(d);
	*err = 0;
	return d;
}

void dns_seeds_free(struct dns_seeds *d)
{
	if (d == NULL)
		return;
	evloop_timer_stop(d->cfg.loop, &d->timer);
	membership_set_seeds(d->cfg.membership, NULL, 0); /* it points into d */
	resolver_cancel(d->pending);
	resolver_free(d->resolver);
	free(d);
}
