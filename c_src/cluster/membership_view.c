/* membership_view.c — what the member list answers (membership.h): the
 * members as the admin reports them, counts by status, the reachability
 * table, and who hosts a type in which status. Read only: nothing here
 * changes the list, and nothing here calls membership.c or
 * membership_health.c (membership_internal.h). */
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

#include "cluster/member_protocol.h"
#include "cluster/members_file.h"
#include "cluster/membership_internal.h"
#include "etf/term_encode.h"

static int by_age(const void *a, const void *b)
{
	const struct member *x = *(const struct member *const *)a, *y = *(const struct member *const *)b;
	/* Joining members (up-number 0) come last. */
	uint32_t ux = x->up_number ? x->up_number : UINT32_MAX, uy = y->up_number ? y->up_number : UINT32_MAX;
	if (ux != uy)
		return ux < uy ? -1 : 1;
	return strcmp(x->node, y->node);
}

int membership_encode_members(const struct membership *m, ei_x_buff *x)
{
	const struct member **sorted = malloc((m->n ? m->n : 1) * sizeof *sorted);
	if (sorted == NULL)
		return -ENOMEM;
	size_t n = 0;
	for (size_t k = 0; k < m->n; k++)
		if (m->members[k].status != MEMBER_REMOVED)
			sorted[n++] = &m->members[k];
	if (n > 1)
		qsort(sorted, n, sizeof *sorted, by_age);
	int rc = ei_x_encode_tuple_header(x, 2) < 0 || term_x_encode_atom(x, "ok") < 0 ||
			 (n && ei_x_encode_list_header(x, (long)n) < 0)
		 ? -ENOMEM
		 : 0;
	for (size_t k = 0; rc == 0 && k < n; k++) {
		/* Unreachable says more than up or leaving, less than down. */
		bool show_unreachable = sorted[k]->unreachable && sorted[k]->status < MEMBER_DOWN;
		if (ei_x_encode_map_header(x, 2) < 0 || term_x_encode_atom(x, "node") < 0 ||
		    term_x_encode_atom(x, sorted[k]->node) < 0 || term_x_encode_atom(x, "status") < 0 ||
		    term_x_encode_atom(x, show_unreachable ? "unreachable" : membership_status_names[sorted[k]->status]) < 0)
			rc = -ENOMEM;
	}
	if (rc == 0 && ei_x_encode_empty_list(x) < 0)
		rc = -ENOMEM;
	free(sorted);
	return rc;
}

void membership_count_by_status(const struct membership *m, struct membership_counts *out)
{
	static const char *const shown[MEMBERSHIP_STATUSES] = {"joining", "up", "leaving", "exiting",
								"unreachable", "down"};
	memset(out, 0, sizeof *out);
	for (size_t k = 0; k < MEMBERSHIP_STATUSES; k++)
		out->names[k] = shown[k];
	for (size_t k = 0; k < m->n; k++) {
		const struct member *mb = &m->members[k];
		if (mb->status == MEMBER_REMOVED)
			continue;
		/* as membership_encode_members shows it */
		if (mb->unreachable && mb->status < MEMBER_DOWN)
			out->counts[4]++;
		else
			out->counts[mb->status == MEMBER_DOWN ? 5 : mb->status]++;
	}
}

/* Neither down nor removed: its records and the records about it count. */
static bool present(const struct membership *m, const char *node)
{
	const struct member *e = membership_member((struct membership *)m, node);
	return e != NULL && e->status < MEMBER_DOWN;
}

int membership_encode_reachability(const struct membership *m, ei_x_buff *x)
{
	if (ei_x_encode_tuple_header(x, 2) < 0 || term_x_encode_atom(x, "ok") < 0)
		return -ENOMEM;
	for (size_t k = 0; k < m->reach.n; k++) {
		const struct reach_record *rec = &m->reach.records[k];
		if (!present(m, rec->observer))
			continue;
		size_t n = 0;
		for (size_t s = 0; s < rec->nsubjects; s++)
			n += present(m, rec->subjects[s]);
		if (n == 0)
			continue;
		if (ei_x_encode_list_header(x, 1) < 0 || ei_x_encode_tuple_header(x, 2) < 0 ||
		    term_x_encode_atom(x, rec->observer) < 0 || ei_x_encode_list_header(x, (long)n) < 0)
			return -ENOMEM;
		for (size_t s = 0; s < rec->nsubjects; s++)
			if (present(m, rec->subjects[s]) && term_x_encode_atom(x, rec->subjects[s]) < 0)
				return -ENOMEM;
		if (ei_x_encode_empty_list(x) < 0)
			return -ENOMEM;
	}
	return ei_x_encode_empty_list(x) < 0 ? -ENOMEM : 0;
}

static bool hosts(const struct member *e, const char *type)
{
	for (size_t t = 0; t < e->ntypes; t++)
		if (strcmp(e->types[t], type) == 0)
			return true;
	return false;
}

/* Unreachable members still serve until they are downed: from here a
 * crash and a partition look the same (see the header on downing). */
static bool serving(const struct member *e) { return e->status == MEMBER_UP; }

int membership_encode_protocols(const struct membership *m, ei_x_buff *x)
{
	long n = 0;
	for (size_t k = 0; k < m->n; k++)
		n += m->members[k].status != MEMBER_REMOVED;
	if (ei_x_encode_map_header(x, n) < 0)
		return -ENOMEM;
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		if (e->status != MEMBER_REMOVED &&
		    (term_x_encode_atom(x, e->node) < 0 || term_x_encode_uint(x, e->protocol) < 0))
			return -ENOMEM;
	}
	return 0;
}

uint32_t membership_protocol_of(const struct membership *m, const char *node)
{
	const struct member *e = membership_find(m, node);
	return e != NULL ? e->protocol : MEMBER_PROTOCOL_OLDEST;
}

uint32_t membership_lowest_protocol(const struct membership *m, const char *type)
{
	uint32_t lowest = MEMBER_PROTOCOL;
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		if (e->status < MEMBER_DOWN && hosts(e, type) && e->protocol < lowest)
			lowest = e->protocol;
	}
	return lowest;
}

const char *membership_oldest_with(const struct membership *m, const char *type)
{
	const struct member *best = NULL;
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		if (!serving(e) || !hosts(e, type))
			continue;
		if (best == NULL || e->up_number < best->up_number ||
		    (e->up_number == best->up_number && strcmp(e->node, best->node) < 0))
			best = e;
	}
	return best ? best->node : NULL;
}

size_t membership_nodes_with(const struct membership *m, const char *type, const char **out, size_t max)
{
	size_t n = 0;
	for (size_t k = 0; k < m->n && n < max; k++) {
		const struct member *e = &m->members[k];
		bool owns_shards = votes(e) || (e->down_at != 0 && !e->released);
		if (owns_shards && hosts(e, type))
			out[n++] = e->node;
	}
	return n;
}

/* Members hosting `type` with the given status, at most max, into out. */
static size_t with_status(const struct membership *m, const char *type, enum member_status status,
			  const char **out, size_t max)
{
	size_t n = 0;
	for (size_t k = 0; k < m->n && n < max; k++)
		if (m->members[k].status == status && hosts(&m->members[k], type))
			out[n++] = m->members[k].node;
	return n;
}

size_t membership_joining_with(const struct membership *m, const char *type, const char **out, size_t max)
{
	return with_status(m, type, MEMBER_JOINING, out, max);
}

size_t membership_downed(const struct membership *m, const char **out, size_t max)
{
	size_t n = 0;
	for (size_t k = 0; k < m->n && n < max; k++)
		if (m->members[k].down_at != 0)
			out[n++] = m->members[k].node;
	return n;
}

size_t membership_leaving_with(const struct membership *m, const char *type, const char **out, size_t max)
{
	return with_status(m, type, MEMBER_LEAVING, out, max);
}

size_t membership_others(const struct membership *m)
{
	size_t n = 0;
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		n += strcmp(e->node, m->our_node) != 0 && e->status == MEMBER_UP;
	}
	return n;
}

void membership_remembered(const struct membership *m, struct members_record *out)
{
	strlcpy(out->self, m->our_node, sizeof out->self);
	out->self_up_number = 0;
	out->n = 0;
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		if (is_us(m, e))
			out->self_up_number = e->up_number;
		else if (e->status < MEMBER_DOWN && out->n < CLUSTER_MEMBERS_MAX)
			strlcpy(out->nodes[out->n++], e->node, sizeof out->nodes[0]);
	}
	/* The members remembered at start that have not been heard of since
	 * stay remembered: a node that formed a cluster alone because none
	 * of them answered (a partition at start) still asks them next time. */
	for (size_t k = 0; k < m->cfg.nremembered && out->n < CLUSTER_MEMBERS_MAX; k++) {
		if (membership_find(m, m->cfg.remembered[k]) == NULL) /* never this node: it is listed */
			strlcpy(out->nodes[out->n++], m->cfg.remembered[k], sizeof out->nodes[0]);
	}
}
