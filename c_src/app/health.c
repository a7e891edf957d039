/* health.c — see health.h. */
#include "app/health.h"

#include <stdio.h>
#include <string.h>

#include "app/node_app.h"
#include "cluster/membership.h"
#include "sharding/region.h"
#include "store/state_store.h"

bool health_live(void *arg, char *reason, size_t cap)
{
	(void)arg;
	(void)reason;
	(void)cap;
	return true;
}

bool health_ready(void *arg, char *reason, size_t cap)
{
	const struct node_app *app = arg;
	/* First: while the host is away nothing else can be right, and the
	 * operator must learn which node to look at. A proxy-only node runs
	 * no entity, so it needs no host. */
	if (app->awaiting_host_types) {
		snprintf(reason, cap, "waiting for host %s to name the types it runs here", app->cfg->host);
		return false;
	}
	if (app->host_link != NULL && !app->cfg->proxy_only && !host_link_welcomed(app->host_link)) {
		snprintf(reason, cap, "host %s has not answered or is down", app->cfg->host);
		return false;
	}
	const char *status = app->membership != NULL ? membership_self_status(app->membership) : "joining";
	if (strcmp(status, "up") != 0) {
		snprintf(reason, cap, "not an up member: %s", status);
		return false;
	}
	for (size_t k = 0; k < app->nhosted; k++) {
		const struct hosted_type *h = &app->hosted[k];
		if (h->region == NULL) {
			snprintf(reason, cap, "%s: the region has not started", h->name);
			return false;
		}
		if (!region_registered(h->region)) {
			snprintf(reason, cap, "%s: the region is not registered with a coordinator", h->name);
			return false;
		}
	}
	const char *why = app->store != NULL ? state_store_unreachable(app->store, evloop_now_ns(app->loop)) : NULL;
	if (why != NULL) {
		snprintf(reason, cap, "store: %s", why);
		return false;
	}
	return true;
}
