/* coordinator_members.c — see coordinator_members.h. */
#include "coordinator/coordinator_members.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


void coordinator_members_free(struct coordinator_members *cm)
{
	for (int s = 0; s < CM_NSETS; s++)
		node_set_free(&cm->set[s]);
}

int coordinator_members_set(struct coordinator_members *cm, enum coordinator_node_set which,
			    const char *const *nodes, size_t n)
{
	return node_set_assign(&cm->set[which], nodes, n);
}

bool coordinator_members_in(const struct coordinator_members *cm, enum coordinator_node_set which,
			    const char *node)
{
	return node_set_contains(&cm->set[which], node);
}

size_t coordinator_members_count(const struct coordinator_members *cm, enum coordinator_node_set which)
{
	return node_set_count(&cm->set[which]);
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
	for (size_t e = 0; e < node_set_count(&cm->set[CM_OWNERS]); e++) {
		bool found = false;
		for (size_t k = 0; k < n && !found; k++)
			found = strcmp(reported[k], node_set_at(&cm->set[CM_OWNERS], e)) == 0;
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
