/* coordinator_members.c — see coordinator_members.h. */
#include "sharding/coordinator_members.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

void coordinator_members_free(struct coordinator_members *cm)
{
	for (int s = 0; s < CM_NSETS; s++) {
		free(cm->set[s].nodes);
		cm->set[s].nodes = NULL;
		cm->set[s].n = 0;
	}
}

int coordinator_members_set(struct coordinator_members *cm, enum coordinator_node_set which,
			    const char *const *nodes, size_t n)
{
	char (*copy)[256] = calloc(n ? n : 1, sizeof *copy);
	if (copy == NULL)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++)
		strlcpy(copy[k], nodes[k], sizeof copy[k]);
	free(cm->set[which].nodes);
	cm->set[which].nodes = copy;
	cm->set[which].n = n;
	return 0;
}

bool coordinator_members_in(const struct coordinator_members *cm, enum coordinator_node_set which,
			    const char *node)
{
	for (size_t k = 0; k < cm->set[which].n; k++)
		if (strcmp(cm->set[which].nodes[k], node) == 0)
			return true;
	return false;
}

size_t coordinator_members_count(const struct coordinator_members *cm, enum coordinator_node_set which)
{
	return cm->set[which].n;
}

bool coordinator_members_keeps(const struct coordinator_members *cm, const char *node, uint32_t nshards)
{
	return coordinator_members_in(cm, CM_OWNERS, node) ||
	       (coordinator_members_in(cm, CM_JOINING, node) && nshards == 0);
}

bool coordinator_members_may_get_shards(const struct coordinator_members *cm, const char *node)
{
	return coordinator_members_in(cm, CM_OWNERS, node) && !coordinator_members_in(cm, CM_DRAINING, node) &&
	       !coordinator_members_in(cm, CM_DOWNED, node);
}

bool coordinator_members_all_reported(const struct coordinator_members *cm, const char *const *reported, size_t n)
{
	for (size_t e = 0; e < cm->set[CM_OWNERS].n; e++) {
		bool found = false;
		for (size_t k = 0; k < n && !found; k++)
			found = strcmp(reported[k], cm->set[CM_OWNERS].nodes[e]) == 0;
		if (!found)
			return false;
	}
	return true;
}

enum coordinator_unknown_region coordinator_members_unknown_region(const struct coordinator_members *cm,
								   const char *node)
{
	return coordinator_members_in(cm, CM_DOWNED, node) ? CM_IGNORE : CM_ACCEPT;
}
