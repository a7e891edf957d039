/* membership_list.c — the member list's look-up and the messages built
 * from it (membership_internal.h), for membership.c and
 * membership_health.c alike. Calls neither. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fnv1a.h"
#include "cluster/member_protocol.h"
#include "cluster/membership_internal.h"
#include "distribution/dist_node.h"
#include "etf/shardnode_msg.h"
#include "etf/term_digest.h"
#include "etf/term_encode.h"

const char *const membership_status_names[] = {
	[MEMBER_JOINING] = "joining", [MEMBER_UP] = "up", [MEMBER_LEAVING] = "leaving",
	[MEMBER_EXITING] = "exiting", [MEMBER_DOWN] = "down", [MEMBER_REMOVED] = "removed",
};

static size_t index_slot(const char *node, size_t cap)
{
	return (size_t)fnv1a64(node, strlen(node)) & (cap - 1);
}

static void index_put(struct membership *m, size_t k)
{
	size_t s = index_slot(m->members[k].node, m->index_cap);
	while (m->index[s] != 0)
		s = (s + 1) & (m->index_cap - 1);
	m->index[s] = (uint32_t)k + 1;
}

void membership_index_added(struct membership *m)
{
	if (m->index != NULL && 2 * m->n <= m->index_cap) {
		index_put(m, m->n - 1);
		return;
	}
	size_t cap = m->index_cap ? m->index_cap : 16;
	while (cap < 2 * m->n)
		cap *= 2;
	free(m->index);
	m->index_cap = cap;
	if ((m->index = calloc(cap, sizeof *m->index)) == NULL)
		return;
	for (size_t k = 0; k < m->n; k++)
		index_put(m, k);
}

const struct member *membership_find(const struct membership *m, const char *node)
{
	if (m->index == NULL) {
		for (size_t k = 0; k < m->n; k++)
			if (strcmp(m->members[k].node, node) == 0)
				return &m->members[k];
		return NULL;
	}
	for (size_t s = index_slot(node, m->index_cap); m->index[s] != 0; s = (s + 1) & (m->index_cap - 1))
		if (strcmp(m->members[m->index[s] - 1].node, node) == 0)
			return &m->members[m->index[s] - 1];
	return NULL;
}

struct member *membership_member(struct membership *m, const char *node)
{
	return (struct member *)membership_find(m, node); /* m's own entries: they may change */
}

struct member_facts membership_facts_of(const struct member *e)
{
	return (struct member_facts){
		.node = e->node,
		.up_number = e->up_number,
		.status = e->status,
		.version = e->version,
		.unreachable = e->unreachable,
		.last_heard = e->last_heard,
		.joining_since = e->joining_since,
		.lease_until = e->lease_until,
	};
}

void membership_send_join(struct membership *m, const char *to, const ei_x_buff *x)
{
	dist_node_reg_send(m->cfg.node, &m->cfg.from, "shardnode", to, x->buff, (size_t)x->index);
}

void membership_send_admin(struct membership *m, const char *to, const ei_x_buff *x)
{
	if (!membership_quiet(m))
		membership_send_join(m, to, x);
}

int membership_begin_msg(const struct membership *m, ei_x_buff *x, const char *kind)
{
	if (ei_x_new_with_version(x) < 0)
		return -ENOMEM;
	if (shardnode_msg_begin(x, 4, kind) < 0 || term_x_encode_atom(x, m->our_node) < 0) {
		ei_x_free(x);
		return -ENOMEM;
	}
	return 0;
}

/* [Type] of a member, and its protocol's marker last (member_protocol.h)
 * unless it stated none. Returns 0 or -ENOMEM (ei refuses only for want
 * of memory: names fit their buffers by construction). */
int membership_encode_types(ei_x_buff *x, const struct member *e)
{
	size_t n = e->ntypes + (e->protocol > MEMBER_PROTOCOL_OLDEST);
	if (n && ei_x_encode_list_header(x, (long)n) < 0)
		return -ENOMEM;
	for (size_t t = 0; t < e->ntypes; t++)
		if (term_x_encode_atom(x, e->types[t]) < 0)
			return -ENOMEM;
	if (e->protocol > MEMBER_PROTOCOL_OLDEST) {
		char marker[sizeof MEMBER_PROTOCOL_MARKER + 10];
		snprintf(marker, sizeof marker, "%s%u", MEMBER_PROTOCOL_MARKER, e->protocol);
		if (term_x_encode_atom(x, marker) < 0)
			return -ENOMEM;
	}
	return ei_x_encode_empty_list(x) < 0 ? -ENOMEM : 0;
}

static int encode_member(ei_x_buff *x, const struct member *e)
{
	if (ei_x_encode_tuple_header(x, 5) < 0 || term_x_encode_atom(x, e->node) < 0 ||
	    term_x_encode_uint(x, e->up_number) < 0 || term_x_encode_atom(x, membership_status_names[e->status]) < 0 ||
	    term_x_encode_uint(x, e->version) < 0)
		return -ENOMEM;
	return membership_encode_types(x, e);
}

static int encode_member_at(const void *members, size_t k, ei_x_buff *x)
{
	return encode_member(x, &((const struct member *)members)[k]);
}

/* A hash of every field encode_member reads but the node's name, which an
 * entry keeps for good. */
static uint64_t encoded_fields_hash(const struct member *e)
{
	uint64_t h = FNV1A64_START;
	const uint32_t fields[5] = {e->up_number, (uint32_t)e->status, e->version, e->protocol, (uint32_t)e->ntypes};
	for (size_t f = 0; f < 5; f++)
		h = fnv1a64_more_u32(h, fields[f]);
	for (size_t t = 0; t < e->ntypes && t < NODE_TYPES_MAX; t++) {
		size_t len = strnlen(e->types[t], sizeof e->types[t]);
		h = fnv1a64_more(fnv1a64_more(h, e->types[t], len), "", 1); /* "a","b" is not "ab" */
	}
	return h;
}

/* Each entry hashed as gossip encodes it; the order of the entries, which
 * differs between members, does not count (term_digest). An entry's part
 * is kept and computed again only when a field it encodes changed. */
uint64_t membership_digest(struct membership *m)
{
	ei_x_buff x = {0};
	uint64_t digest = 0;
	for (size_t k = 0; k < m->n; k++) {
		struct member *e = &m->members[k];
		uint64_t of = encoded_fields_hash(e);
		if (e->digest_part == 0 || e->digest_part_of != of) {
			if ((x.buff == NULL && ei_x_new(&x) < 0) ||
			    term_digest_part(m->members, k, encode_member_at, &x, &e->digest_part) != 0) {
				if (x.buff != NULL)
					ei_x_free(&x);
				return 0; /* "may differ": the next tick tries again */
			}
			e->digest_part_of = of;
		}
		digest ^= e->digest_part;
	}
	if (x.buff != NULL)
		ei_x_free(&x);
	return term_digest_of_parts(digest, m->n);
}

/* The tick's gossip (membership_internal.h). A list of N entries to each of
 * N members every tick cost each member O(N^2); a digest in the heartbeat
 * is a few bytes. A change still goes whole to every member at once
 * (membership.c's gossip_all). */
void membership_gossip_tick(struct membership *m)
{
	m->tick_digest = membership_digest(m);
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		if (strcmp(e->node, m->our_node) == 0 || e->status >= MEMBER_DOWN || e->unreachable ||
		    e->protocol >= MEMBER_PROTOCOL_DIGESTS)
			continue;
		membership_gossip_to(m, e->node);
	}
}

int membership_encode_list(const struct membership *m, ei_x_buff *x)
{
	int rc = m->n && ei_x_encode_list_header(x, (long)m->n) < 0 ? -ENOMEM : 0;
	for (size_t k = 0; rc == 0 && k < m->n; k++)
		rc = encode_member(x, &m->members[k]);
	return rc == 0 && ei_x_encode_empty_list(x) < 0 ? -ENOMEM : rc;
}

void membership_gossip_to(struct membership *m, const char *to)
{
	ei_x_buff x;
	if (membership_begin_msg(m, &x, "gossip") != 0)
		return;
	int rc = membership_encode_list(m, &x);
	if (rc == 0)
		membership_send_admin(m, to, &x); /* else the next gossip tries again */
	ei_x_free(&x);
}

