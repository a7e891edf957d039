/* membership.c — see membership.h: joins, gossip merged into the member
 * list, downs and leaves. Failure detection, downing decisions and the
 * lease are in membership_health.c (indirect probes in
 * membership_probe.c), the list's answers to the other
 * modules in membership_view.c, the list's look-up and the messages it
 * sends in membership_list.c; they are called from here and call nothing
 * here. */
#include "cluster/membership.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

#include "cluster/member_protocol.h"
#include "cluster/membership_internal.h"
#include "protocol/node_set.h"
#include "etf/shardnode_msg.h"
#include "protocol/node_name.h"
#include "etf/term.h"
#include "etf/term_digest.h"

static struct member *add(struct membership *m, const char *node)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 8;
		struct member *p = realloc(m->members, cap * sizeof *p);
		if (p == NULL)
			return NULL;
		m->members = p;
		m->cap = cap;
	}
	struct member *e = &m->members[m->n++];
	memset(e, 0, sizeof *e);
	strlcpy(e->node, node, sizeof e->node);
	e->self = strcmp(node, m->our_node) == 0;
	e->last_heard = now_ms(m);
	membership_index_added(m);
	return e;
}

static void admit_joiners(struct membership *m);

/* A new up-number is a new incarnation (or its admission): the lease
 * reports about an earlier one do not count for it. */
static void set_up_number(struct member *e, uint32_t up)
{
	if (e->up_number != up)
		memset(e->lapsed_from, 0, sizeof e->lapsed_from);
	e->up_number = up;
}

/* We learned that e is down: when (its shards wait from then at most,
 * membership.h), and the others hear at once whether our lease to it has
 * lapsed. */
static void mark_down_locally(struct membership *m, struct member *e)
{
	if (e->down_at != 0)
		return;
	e->down_at = now_ms(m) ? now_ms(m) : 1;
	membership_tell_lapsed_leases(m);
}

/* ---- sending ---- */

static void gossip_all(struct membership *m)
{
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		if (!is_us(m, e) && e->status < MEMBER_DOWN && !e->unreachable && membership_tells_directly(m, e))
			membership_gossip_to(m, e->node);
	}
}

static void on_gossip_soon(struct evloop *loop, void *arg)
{
	(void)loop;
	gossip_all(arg);
}

/* gossip_all within a tenth of a heartbeat interval, once for every call
 * meanwhile: for the changes that come in bursts, joins and admissions. A
 * seed that 255 nodes join at once sent each member a list per join, up
 * to 256 entries long. */
static void gossip_all_soon(struct membership *m)
{
	if (!evloop_timer_armed(&m->gossip_soon_timer) &&
	    evloop_timer_start(m->cfg.loop, &m->gossip_soon_timer, m->cfg.heartbeat_interval_ms / 10) != 0)
		gossip_all(m); /* no timer: at once */
}

static void send_join(struct membership *m, const char *seed)
{
	ei_x_buff x;
	if (membership_begin_msg(m, &x, "join") != 0)
		return;
	if (membership_encode_types(&x, membership_member(m, m->our_node)) == 0)
		membership_send_join(m, seed, &x); /* else the join is sent again */
	ei_x_free(&x);
}

static bool is_seed(const struct membership *m, const char *node)
{
	for (size_t k = 0; k < m->cfg.nseeds; k++)
		if (strcmp(m->cfg.seeds[k], node) == 0)
			return true;
	return false;
}

/* While this node is joining: a join to every seed but itself (a name's
 * seeds, dns_seeds.h, list it too; so may a seed list every member is
 * given), and to every member it remembers that is no seed. */
static void send_joins(struct membership *m)
{
	if (membership_member(m, m->our_node)->status != MEMBER_JOINING)
		return;
	for (size_t k = 0; k < m->cfg.nseeds; k++)
		if (strcmp(m->cfg.seeds[k], m->our_node) != 0)
			send_join(m, m->cfg.seeds[k]);
	for (size_t k = 0; k < m->cfg.nremembered; k++)
		if (strcmp(m->cfg.remembered[k], m->our_node) != 0 && !is_seed(m, m->cfg.remembered[k]))
			send_join(m, m->cfg.remembered[k]);
}

/* Whether anyone but this node is there to ask for a cluster. */
static bool anyone_to_ask(const struct membership *m)
{
	for (size_t k = 0; k < m->cfg.nseeds; k++)
		if (strcmp(m->cfg.seeds[k], m->our_node) != 0)
			return true;
	for (size_t k = 0; k < m->cfg.nremembered; k++)
		if (strcmp(m->cfg.remembered[k], m->our_node) != 0)
			return true;
	return false;
}

/* The first seed's wait (Akka's first-seed-node process): once nobody
 * answered as a member for seed_timeout_ms, no cluster is there, and this
 * node forms one. Every other node keeps joining. */
static void form_if_nobody_answered(struct membership *m)
{
	if (m->cfg.may_form && now_ms(m) - m->started_ms >= m->cfg.seed_timeout_ms)
		membership_form_cluster(m);
}

static void on_gossip_timer(struct evloop *loop, void *arg)
{
	struct membership *m = arg;
	form_if_nobody_answered(m);
	send_joins(m);
	membership_gossip_tick(m);
	if (membership_plan_watching(m))
		membership_changed(m); /* the health tick publishes our record */
	membership_heartbeat_all(m);
	/* The downing decided on the way: applied here, where the list is
	 * changed, before anything else reads it. */
	struct node_set downs;
	node_set_init(&downs);
	if (membership_health_tick(m, &downs) == DOWNING_SELF)
		membership_down(m, m->our_node);
	for (size_t k = 0; k < node_set_count(&downs); k++)
		membership_down(m, node_set_at(&downs, k));
	node_set_free(&downs);
	admit_joiners(m);
	membership_refresh_lease(m, true);
	/* On whole multiples of the interval (evloop.h): members whose clocks
	 * agree exchange a tick's heartbeats, acks and digests in a burst. */
	evloop_timer_start(loop, &m->gossip_timer,
			   evloop_delay_to_multiple_ms(evloop_wall_us(), m->cfg.heartbeat_interval_ms));
}

/* ---- receiving ---- */

static int status_of(const char *name)
{
	for (int s = 0; s <= MEMBER_REMOVED; s++)
		if (strcmp(membership_status_names[s], name) == 0)
			return s;
	return -1;
}

/* Reads [Type] into e, and the protocol it states there (member_protocol.h;
 * none: the oldest). Returns 0 or -EPROTO. */
static int read_types(const char *t, size_t *i, struct member *e)
{
	int ii = (int)*i, arity;
	if (ei_decode_list_header(t, &ii, &arity) < 0)
		return -EPROTO;
	*i = (size_t)ii;
	e->ntypes = 0;
	e->protocol = MEMBER_PROTOCOL_OLDEST;
	for (int k = 0; k < arity; k++) {
		char atom[TERM_ATOM_BUF];
		if (term_get_atom(t, i, atom))
			return -EPROTO;
		if (member_protocol_parse(atom, &e->protocol))
			continue;
		/* A member hosts at most NODE_TYPES_MAX types with names of
		 * [a-z0-9_]; anything beyond is no type we could share with it. */
		if (e->ntypes < NODE_TYPES_MAX && strlen(atom) < sizeof e->types[0])
			memcpy(e->types[e->ntypes++], atom, strlen(atom) + 1);
	}
	if (arity > 0) {
		ii = (int)*i;
		if (ei_decode_list_header(t, &ii, &arity) < 0 || arity != 0)
			return -EPROTO;
		*i = (size_t)ii;
	}
	return 0;
}

/* Remembers the highest up-number seen, even after the entry that had it
 * is reset for a rejoin: a new incarnation must get a higher one. */
static void note_up_number(struct membership *m, uint32_t up)
{
	if (up > m->top_up_number)
		m->top_up_number = up;
}

/* The leader marks joiners up, each with the next up-number, once a
 * majority has answered heartbeats sent since it heard of the joiner
 * (membership_rules_admit says who and why). */
static void admit_joiners(struct membership *m)
{
	struct member_facts *facts = malloc((m->n ? m->n : 1) * sizeof *facts);
	struct quorum_member *scratch = malloc((m->n ? 2 * m->n : 1) * sizeof *scratch);
	uint32_t *up = malloc((m->n ? m->n : 1) * sizeof *up);
	size_t admitted = 0;
	if (facts == NULL || scratch == NULL || up == NULL)
		goto done; /* the next gossip tick tries again */
	struct membership_admission a = {
		.top_up_number = m->top_up_number,
		.now_ms = now_ms(m),
		.clock_ms = evloop_clock_ms(),
		.failure_timeout_ms = m->cfg.failure_timeout_ms,
	};
	for (size_t k = 0; k < m->n; k++) {
		facts[k] = membership_facts_of(&m->members[k]);
		if (is_us(m, &m->members[k]))
			a.self = k;
	}
	admitted = membership_rules_admit(facts, m->n, &a, scratch, up);
	for (size_t k = 0; k < m->n && admitted; k++) {
		struct member *e = &m->members[k];
		if (up[k] == 0)
			continue;
		note_up_number(m, up[k]);
		set_up_number(e, up[k]);
		e->status = MEMBER_UP;
		e->version++;
		e->last_heard = now_ms(m);
		log_info(m->cfg.log, "member %s joined (up-number %u)", e->node, e->up_number);
		membership_send_heartbeat(m, e->node, "heartbeat", now_ms(m)); /* its lease, soon */
	}
done:
	free(facts);
	free(scratch);
	free(up);
	if (admitted) {
		gossip_all_soon(m);
		membership_changed(m);
	}
}

static void reset_local(struct membership *m, struct member *e);

/* The types and the protocol `from` states (a join's or a gossiped
 * entry's) become e's. */
static void take_types(struct member *e, const struct member *from)
{
	memcpy(e->types, from->types, sizeof e->types);
	e->ntypes = from->ntypes;
	e->protocol = from->protocol;
}

/* Lists e joining as a new incarnation at `version`, with the types it
 * gave (NULL: the ones it had), heard from now with creation `creation`:
 * nothing seen of an old incarnation counts, and its up-number is never
 * given again. */
static void list_joining(struct membership *m, struct member *e, const struct member *joiner, uint32_t version,
			 uint32_t creation)
{
	note_up_number(m, e->up_number);
	if (joiner != NULL)
		take_types(e, joiner);
	reset_local(m, e);
	e->status = MEMBER_JOINING;
	e->up_number = 0;
	e->version = version;
	e->joining_since = now_ms(m);
	e->creation = creation;
	gossip_all_soon(m);
	membership_changed(m);
	admit_joiners(m);
}

/* A seed hears `join`: the joiner is listed as joining (a new incarnation
 * if it was down, or restarted while still listed), for the leader to
 * admit. */
static void on_join(struct membership *m, const char *t, size_t i, uint32_t creation)
{
	struct member joiner = {0};
	if (node_name_decode(t, &i, joiner.node) || read_types(t, &i, &joiner))
		return;
	struct member *e = membership_member(m, joiner.node);
	struct member_facts have = e != NULL ? membership_facts_of(e) : (struct member_facts){0};
	uint32_t version = 0;
	if (membership_rules_join(e != NULL ? &have : NULL, &version) == MEMBER_JOIN_TELL_AGAIN) {
		if (e != NULL && e->status == MEMBER_JOINING) /* the types it hosts now (e: a listed node) */
			take_types(e, &joiner);
		membership_gossip_to(m, joiner.node); /* it missed our gossip: tell it again */
		admit_joiners(m);
		return;
	}
	if (e == NULL && (e = add(m, joiner.node)) == NULL)
		return;
	log_info(m->cfg.log, "member %s is joining", e->node);
	list_joining(m, e, &joiner, version, creation);
}

/* A message of `via`'s with creation `creation`: a member we list that
 * is not down and was heard from with another creation was started again
 * (see membership_handle). Its old incarnation is gone, so it is listed
 * joining at once: its shards go to their replicas or the store, and the
 * new incarnation is admitted with a new up-number. */
static void note_incarnation(struct membership *m, const char *via, uint32_t creation)
{
	struct member *e = membership_member(m, via);
	if (e == NULL || creation == 0 || is_us(m, e) || e->creation == creation)
		return;
	if (e->creation == 0 || e->status >= MEMBER_DOWN) {
		e->creation = creation; /* first heard, or a down the rules handle */
		return;
	}
	uint32_t version = 0;
	struct member_facts gone = membership_facts_of(e);
	gone.status = MEMBER_DOWN; /* the rules list a downed member anew */
	(void)membership_rules_join(&gone, &version);
	log_info(m->cfg.log, "member %s started again (a new incarnation): its old one is gone, and its shards go "
		 "elsewhere at once", e->node);
	list_joining(m, e, NULL, version, creation);
}

/* Forgets what this node saw of an earlier incarnation of the member. */
static void reset_local(struct membership *m, struct member *e)
{
	e->unreachable = false;
	e->connection_lost = false;
	e->last_heard = now_ms(m);
	e->lease_until = 0;
	e->granted_until = 0;
	e->acked_us_at = 0;
	e->answered_gossip_at = 0;
	e->down_at = 0;
	e->released = false;
	e->last_acked = 0;
	e->creation = 0;
	memset(e->lapsed_from, 0, sizeof e->lapsed_from);
	/* What its earlier incarnation reported of others' leases is its no
	 * more. */
	size_t k = (size_t)(e - m->members);
	for (size_t j = 0; k < CLUSTER_MEMBERS_MAX && j < m->n; j++)
		m->members[j].lapsed_from[k / 64] &= ~(UINT64_C(1) << (k % 64));
}

static void on_gossip(struct membership *m, const char *t, size_t i)
{
	char from[NODE_NAME_BUF];
	if (node_name_decode(t, &i, from))
		return;
	uint64_t in_digest = term_digest_of_list(t, i); /* as membership_digest digests ours */
	int ii = (int)i, count;
	if (ei_decode_list_header(t, &ii, &count) < 0)
		return;
	i = (size_t)ii;
	bool any = false, refuted = false, greet = false;
	for (int k = 0; k < count; k++) {
		struct member in = {0};
		char status[TERM_ATOM_BUF];
		long up, version;
		if (term_get_tuple(t, &i) != 5 || node_name_decode(t, &i, in.node) || term_get_long(t, &i, &up) ||
		    term_get_atom(t, &i, status) || term_get_long(t, &i, &version) || read_types(t, &i, &in))
			return;
		int s = status_of(status);
		if (s < 0)
			return;
		in.up_number = (uint32_t)up;
		in.status = (enum member_status)s;
		in.version = (uint32_t)version;
		struct member *e = membership_member(m, in.node);
		bool ours = strcmp(in.node, m->our_node) == 0;
		if (ours && in.status == MEMBER_JOINING && !m->listed) {
			m->listed = true; /* this incarnation, listed: see membership_internal.h */
			log_debug(m->cfg.log, "listed joining by %s", from);
		}
		/* A member's own word on the protocol it speaks, for the same
		 * incarnation, even when its entry is not taken: a relay may
		 * have dropped the marker (membership.h). */
		if (e != NULL && !ours && strcmp(in.node, from) == 0 && in.up_number == e->up_number)
			e->protocol = in.protocol;
		struct member_facts in_facts = membership_facts_of(&in);
		struct member_facts have = e != NULL ? membership_facts_of(e) : (struct member_facts){0};
		if (e != NULL && ours && membership_quiet(m))
			have.old_up_number = m->cfg.last_up_number;
		struct member_merge d =
			membership_rules_merge(&in_facts, e != NULL ? &have : NULL, ours);
		if (d.verdict == MEMBER_MERGE_KEEP) {
			if (e != NULL) /* always: an entry we lack is taken */
				note_up_number(m, e->up_number);
			if (d.refute && e != NULL) { /* e: refute is only of our own entry */
				e->version = in.version + 1;
				refuted = true;
			}
			continue;
		}
		if (e == NULL && (e = add(m, in.node)) == NULL)
			return;
		if (d.forget_seen)
			reset_local(m, e);
		if (d.joining_now)
			e->joining_since = now_ms(m);
		/* A joiner admitted: watched from now on. While it joined, nothing
		 * of it was expected (a node started again sends nothing but
		 * joins), so its silence until now says nothing; without this a
		 * tick on the instant of the admission called it unreachable. */
		if (e->status == MEMBER_JOINING && in.status == MEMBER_UP)
			e->last_heard = now_ms(m);
		/* Another up-number is another admission, maybe of an incarnation
		 * we have not heard from: its creation is learned anew. */
		if (e->up_number != in.up_number)
			e->creation = 0;
		note_up_number(m, e->up_number);
		note_up_number(m, in.up_number);
		set_up_number(e, in.up_number);
		e->status = in.status;
		e->version = in.version;
		take_types(e, &in);
		if (ours) /* relays may have dropped our marker: we know what we speak */
			e->protocol = MEMBER_PROTOCOL;
		if (d.note_down)
			mark_down_locally(m, e);
		e->to_greet = d.greet;
		greet |= d.greet;
		any = true;
	}
	if (greet)
		membership_greet_new_members(m);
	struct member *sender = membership_member(m, from);
	if (sender != NULL && sender->status >= MEMBER_DOWN) {
		membership_gossip_to(m, from); /* it has not heard it was downed */
	} else if (sender != NULL) {
		membership_heard(m, sender);
		if (membership_rules_may_answer_gossip(in_digest, sender->protocol >= MEMBER_PROTOCOL_DIGESTS, now_ms(m),
						       sender->answered_gossip_at, m->cfg.heartbeat_interval_ms) &&
		    in_digest != membership_digest(m)) {
			sender->answered_gossip_at = now_ms(m);
			membership_gossip_to(m, from); /* what it lacked, in one round trip */
		}
	}
	if (refuted) /* our entry, at its new version, everywhere at once */
		gossip_all(m);
	if (any || refuted) {
		log_debug(m->cfg.log, "member list changed by gossip from %s", from);
		membership_changed(m);
	}
}

/* Whether the sender a message names first (at t[i]) is the node it came
 * from. */
static bool sent_by(struct membership *m, const char *t, size_t i, const char *via, const char *kind)
{
	char claimed[NODE_NAME_BUF];
	bool named = node_name_decode(t, &i, claimed) == 0;
	if (named && strcmp(claimed, via) == 0)
		return true;
	if (m->impostors++ < IMPOSTORS_LOGGED)
		log_warn(m->cfg.log, "a %s from %s naming %s as its sender ignored", kind, via,
			 named ? claimed : "no valid node name");
	return false;
}

int membership_handle(struct membership *m, const char *t, size_t len, const char *via, uint32_t creation)
{
	(void)len;
	size_t i;
	long arity;
	if (!shardnode_msg_head(t, &i, &arity) || arity != 4)
		return 0;
	static const char *const kinds[] = {"join", "gossip", "reachability", "heartbeat", "heartbeat_ack",
					    "lease_lapsed", "probe", "probe_answer"};
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		if (!term_is_atom(t, i, kinds[k]))
			continue;
		size_t after = i;
		term_skip(t, &after);
		if (!sent_by(m, t, after, via, kinds[k]))
			return 1;
		note_incarnation(m, via, creation);
		break;
	}
	if (term_is_atom(t, i, "join")) {
		term_skip(t, &i);
		on_join(m, t, i, creation);
		return 1;
	}
	if (term_is_atom(t, i, "gossip")) {
		term_skip(t, &i);
		on_gossip(m, t, i);
		return 1;
	}
	bool lapsed = term_is_atom(t, i, "lease_lapsed");
	if (lapsed || term_is_atom(t, i, "reachability")) {
		term_skip(t, &i);
		(lapsed ? membership_on_lease_lapsed : membership_on_reachability)(m, t, i);
		return 1;
	}
	bool answer = term_is_atom(t, i, "probe_answer");
	if (answer || term_is_atom(t, i, "probe")) {
		term_skip(t, &i);
		(answer ? membership_on_probe_answer : membership_on_probe)(m, t, i);
		return 1;
	}
	bool ack = term_is_atom(t, i, "heartbeat_ack");
	if (ack || term_is_atom(t, i, "heartbeat")) {
		term_skip(t, &i);
		membership_on_heartbeat(m, t, i, ack);
		return 1;
	}
	return 0;
}

static void on_nodedown(void *arg, const char *peer)
{
	struct membership *m = arg;
	struct member *e = membership_member(m, peer);
	if (e == NULL || e->status == MEMBER_REMOVED)
		return;
	if (e->status == MEMBER_EXITING || e->status == MEMBER_DOWN) {
		e->status = MEMBER_REMOVED;
		e->version++;
		log_info(m->cfg.log, "member %s removed (it %s)", peer, e->down_at ? "was downed" : "left");
		membership_changed(m);
	} else {
		/* The failure detector decides: the connection may come back. */
		log_info(m->cfg.log, "connection to member %s lost", peer);
		e->connection_lost = true;
	}
}

static void set_own_status(struct membership *m, enum member_status status)
{
	struct member *me = membership_member(m, m->our_node);
	if (me->status >= status)
		return;
	me->status = status;
	me->version++;
	gossip_all(m);
	membership_changed(m);
}

void membership_leave(struct membership *m) { set_own_status(m, MEMBER_LEAVING); }

void membership_exit(struct membership *m) { set_own_status(m, MEMBER_EXITING); }

int membership_down(struct membership *m, const char *node)
{
	struct member *e = membership_member(m, node);
	if (e == NULL || e->status >= MEMBER_DOWN)
		return e == NULL ? -ENOENT : 0;
	e->status = MEMBER_DOWN;
	e->version++;
	mark_down_locally(m, e);
	log_warn(m->cfg.log, "member %s marked down", node);
	/* The downed node hears it too, if it can, and stops. */
	if (strcmp(node, m->our_node) != 0)
		membership_gossip_to(m, node);
	gossip_all(m);
	membership_changed(m);
	return 0;
}

void membership_set_types(struct membership *m, const char *const *types, size_t n)
{
	struct member *me = membership_member(m, m->our_node);
	me->ntypes = 0;
	for (size_t t = 0; t < n && t < NODE_TYPES_MAX; t++)
		strlcpy(me->types[me->ntypes++], types[t], sizeof me->types[0]);
	me->version++;
	gossip_all(m);
	membership_changed(m);
}

void membership_set_seeds(struct membership *m, const char *const *seeds, size_t n)
{
	m->cfg.seeds = seeds;
	m->cfg.nseeds = n;
	send_joins(m);
}

bool membership_knows_a_cluster(const struct membership *m)
{
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		if (!is_us(m, e) && (votes(e) || e->status == MEMBER_EXITING))
			return true;
	}
	return false;
}

bool membership_form_cluster(struct membership *m)
{
	struct member *me = membership_member(m, m->our_node);
	if (me->status != MEMBER_JOINING || membership_knows_a_cluster(m))
		return false;
	me->status = MEMBER_UP;
	me->up_number = m->top_up_number + 1;
	note_up_number(m, me->up_number);
	me->version = membership_rules_formed_version(me->version);
	log_info(m->cfg.log, "no cluster answered: forming a new one");
	gossip_all(m);
	membership_changed(m);
	admit_joiners(m);
	return true;
}

const char *membership_self_status(const struct membership *m)
{
	for (size_t k = 0; k < m->n; k++)
		if (strcmp(m->members[k].node, m->our_node) == 0)
			return membership_status_names[m->members[k].status];
	return membership_status_names[MEMBER_REMOVED];
}

bool membership_self_down(const struct membership *m)
{
	for (size_t k = 0; k < m->n; k++)
		if (strcmp(m->members[k].node, m->our_node) == 0)
			return m->members[k].status >= MEMBER_DOWN;
	return false;
}

/* ---- life ---- */

struct membership *membership_start(const struct membership_config *cfg, int *err)
{
	struct membership *m = calloc(1, sizeof *m);
	if (m == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	m->cfg = *cfg;
	strlcpy(m->our_node, dist_node_name(cfg->node), sizeof m->our_node);
	struct member *me = add(m, m->our_node);
	if (me == NULL || (*err = dist_node_on_nodedown(cfg->node, on_nodedown, m)) != 0) {
		free(m->members);
		free(m->index);
		free(m);
		if (me == NULL)
			*err = -ENOMEM;
		return NULL;
	}
	for (size_t t = 0; t < cfg->ntypes && t < NODE_TYPES_MAX; t++)
		strlcpy(me->types[me->ntypes++], cfg->types[t], sizeof me->types[0]);
	me->protocol = MEMBER_PROTOCOL;
	m->started_ms = now_ms(m);
	note_up_number(m, cfg->last_up_number); /* never given to us again */
	if (cfg->may_form && !cfg->seeds_later && !anyone_to_ask(m)) {
		me->status = MEMBER_UP;
		me->up_number = m->top_up_number + 1;
		me->version = 1;
		note_up_number(m, me->up_number);
	} else {
		me->status = MEMBER_JOINING;
	}
	m->quorum_until = UINT64_MAX;
	m->lease_holds = true;
	m->stable_since = now_ms(m);
	evloop_timer_init(&m->gossip_timer, on_gossip_timer, m);
	evloop_timer_init(&m->gossip_soon_timer, on_gossip_soon, m);
	on_gossip_timer(cfg->loop, m);
	*err = 0;
	return m;
}

void membership_free(struct membership *m)
{
	if (m == NULL)
		return;
	evloop_timer_stop(m->cfg.loop, &m->gossip_timer);
	evloop_timer_stop(m->cfg.loop, &m->gossip_soon_timer);
	dist_node_off_nodedown(m->cfg.node, on_nodedown, m);
	reachability_free(&m->reach);
	membership_forget_ring(m);
	free(m->members);
	free(m->index);
	free(m);
}
