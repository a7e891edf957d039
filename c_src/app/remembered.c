/* remembered.c — see remembered.h. */
#include "app/remembered.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether data_dir holds what an earlier run left: an LMDB store. */
static bool has_state(const char *data_dir)
{
	char path[PATH_MAX];
	int w = snprintf(path, sizeof path, "%s/state.lmdb", data_dir);
	return w > 0 && (size_t)w < sizeof path && access(path, F_OK) == 0;
}

struct members_record *remembered_load(const struct sn_config *cfg, const struct logger *log)
{
	struct members_record *r = malloc(sizeof *r);
	int rc = r != NULL ? members_file_read(cfg->data_dir, r) : -ENOMEM;
	if (rc == 0 && strcmp(r->self, cfg->name) != 0)
		rc = -EXDEV; /* another node's data_dir */
	if (rc == -ENOENT && cfg->njoin == 0 && cfg->join_dns[0] == '\0' && has_state(cfg->data_dir))
		log_warn(log, "%s holds state but no members file (a release before 0.2.0 kept none): started "
			 "without seeds, this node forms a new cluster; give it the cluster's seed list to rejoin",
			 cfg->data_dir);
	if (rc != 0) {
		if (rc != -ENOENT)
			log_warn(log, "%s/members ignored: %s", cfg->data_dir,
				 rc == -EXDEV ? "it was written by another node" :
				 rc == -EPROTO ? "a line is not what it writes" : strerror(-rc));
		free(r);
		return NULL;
	}
	if (r->n > 0)
		log_info(log, "remembered members: %zu (in %s/members), asked before this node forms a cluster", r->n,
			 cfg->data_dir);
	return r;
}
