/*
 * region_hosting.c — what a region does for its entities run on a host
 * (region_hosting.h): the struct host_region_ops of hosting/
 * host_entities.h — answers, the store, the slots' in-flight counts, the
 * buffers, the coordinator — and delivery and wakes into it. The entities'
 * processes, mailboxes and the host's health are host_entities.h's; this
 * file only speaks for the region. Below delivery, above the store part
 * in the region's order of calls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sharding/region_internal.h"
#include "sharding/region_buffer.h"
#include "sharding/region_hosting.h"
#include "sharding/region_send.h"
#include "sharding/region_store.h"
#include "etf/term.h"
#include "etf/term_encode.h"

/* SN_ATOM_WAKE as a term without version byte (SMALL_ATOM_UTF8_EXT, its
 * length, its text): the region's own message that starts an entity's
 * process. WAKE_LEN leaves out the literal's NUL. */
static const char WAKE[] = "\x77\x0f" SN_ATOM_WAKE;
#define WAKE_LEN (sizeof WAKE - 1)
_Static_assert(sizeof SN_ATOM_WAKE - 1 == 0x0f, "WAKE's length byte is its text's length");

/* The queued message a mailbox item is part of. */
static struct pending *pending_of(struct remote_mailbox_item *it)
{
	return (struct pending *)((char *)it - offsetof(struct pending, in_mailbox));
}

/* ---- host_region_ops ---- */

static void answer(void *arg, uint32_t shard, struct remote_mailbox_item *it, const ei_x_buff *reply)
{
	struct region *r = arg;
	if (it->kind == HOSTED_WAKE)
		return; /* nobody asked */
	struct envelope e;
	erlang_pid from;
	region_envelope_of(pending_of(it), &e, &from);
	region_count_handled(r, e.is_call);
	if (region_store_active(r))
		region_store_answer(r, shard, &e, reply);
	else
		region_answer(r, &e, reply);
}

static void release(void *arg, struct remote_mailbox_item *it)
{
	(void)arg;
	free(pending_of(it));
}

static bool stored(void *arg) { return region_store_active(arg); }

static int keep(void *arg, uint32_t shard, const char *id, size_t id_len, const char *state, size_t len)
{
	struct region *r = arg;
	if (!region_store_active(r))
		return 0;
	if (state == NULL)
		return region_store_write(r, shard, id, id_len, NULL);
	ei_x_buff spare, *x = scratch_get(&r->bufs.state, &spare);
	if (x == NULL)
		return -ENOMEM;
	int rc = ei_x_encode_version(x) < 0 ? -ENOMEM : term_x_append_raw(x, state, len);
	if (rc == 0)
		rc = region_store_write(r, shard, id, id_len, x);
	scratch_put(&r->bufs.state, x);
	return rc;
}

static void in_flight(void *arg, uint32_t shard, enum host_flight what)
{
	struct region *r = arg;
	struct region_slot *st = &r->slots[shard].st;
	switch (what) {
	case HOST_FLIGHT_SENT: region_slot_sent_away(st); break;
	case HOST_FLIGHT_BACK: (void)region_slot_came_back(st); break;
	case HOST_FLIGHT_ALL_BACK: st->in_flight = 0; break;
	}
}

static void give_back(void *arg, uint32_t shard, struct remote_mailbox_item *items, uint32_t n)
{
	struct region *r = arg;
	struct shard_slot *slot = &r->slots[shard];
	struct pending *head = NULL, *tail = NULL;
	for (struct remote_mailbox_item *it = items; it != NULL; it = it->next) {
		struct pending *p = pending_of(it);
		p->next = NULL;
		if (tail)
			tail->next = p;
		else
			head = p;
		tail = p;
	}
	region_buffer_push_front(r, slot, head, tail, n);
	if (r->stopped)
		region_refuse_buffered(r, slot, "shutting_down");
}

static struct shard *shard_at(void *arg, uint32_t shard)
{
	struct region *r = arg;
	return shard < r->cfg.number_of_shards ? r->slots[shard].shard : NULL;
}

static void ended(void *arg, uint32_t shard) { region_send_to_coordinator(arg, SMSG_SHARD_STOPPED, shard); }

static bool may_tell(void *arg)
{
	const struct region *r = arg;
	return !r->cfg.proxy_only && !r->stopped && !r->leave.under_way && r->coord.registered;
}

static void tell(void *arg, bool up)
{
	region_send_to_coordinator(arg, up ? SMSG_REGION_BACK : SMSG_REGION_LEAVING, 0);
}

static bool stopped(void *arg) { return ((const struct region *)arg)->stopped; }

int region_hosting_start(struct region *r)
{
	if (r->cfg.host == NULL)
		return 0;
	const struct host_entities_config cfg = {
		.host = r->cfg.host, .loop = r->cfg.loop, .log = r->cfg.log, .name = r->cfg.name,
		.type = r->cfg.type->name, .region = r->pid, .number_of_shards = r->cfg.number_of_shards,
		.handoff_timeout_ms = r->cfg.handoff_timeout_ms, .metrics = r->cfg.metrics,
		.ops = {.answer = answer, .release = release, .stored = stored, .keep = keep, .in_flight = in_flight,
			.give_back = give_back, .shard_at = shard_at, .serves = region_serves, .ended = ended,
			.may_tell = may_tell, .tell = tell, .stopped = stopped, .send = region_send_encoded, .arg = r},
	};
	int err = 0;
	r->hosting = host_entities_new(&cfg, &err);
	return r->hosting != NULL ? 0 : err;
}

/* ---- into the hosted entities ---- */

void region_hosting_deliver(struct region *r, struct shard *s, const struct envelope *e)
{
	struct pending *p = region_pending_new(e);
	if (p == NULL) {
		if (e->kind != ENVELOPE_WAKE)
			region_answer_error(r, e, "enomem");
		return;
	}
	/* The view of the copy the hosted entities read (host_entities.h). */
	static const uint8_t hosted_kind[] = {
		[ENVELOPE_ENTITY] = HOSTED_MSG, [ENVELOPE_PASSIVATE] = HOSTED_PASSIVATE,
		[ENVELOPE_DELETE] = HOSTED_DELETE, [ENVELOPE_PEEK] = HOSTED_MSG, [ENVELOPE_WAKE] = HOSTED_WAKE,
	};
	p->in_mailbox = (struct remote_mailbox_item){
		.id = p->data + p->tag_len, .id_len = p->id_len,
		.msg = p->data + p->tag_len + p->id_len, .msg_len = p->msg_len,
		.shard = s->id, .kind = hosted_kind[e->kind],
	};
	host_entities_deliver(r->hosting, s, &p->in_mailbox);
}

int region_hosting_wake(struct region *r, uint32_t shard, const char *id, size_t id_len)
{
	struct shard_slot *slot = &r->slots[shard];
	struct envelope e = {.kind = ENVELOPE_WAKE, .id = id, .id_len = id_len, .msg = WAKE, .msg_len = WAKE_LEN};
	/* With a store its state's load starts now, as a C type's remembered
	 * entities' loads do, all of a shard's at once; the wake waits for it
	 * in the buffer (a failed start is tried again when the wake comes). */
	if (region_store_active(r) && (slot->shard == NULL || !shard_entity_live(slot->shard, id, id_len)))
		(void)region_start_entity(r, shard, id, id_len);
	/* As route() does with a message for a shard hosted here. */
	if (slot->shard != NULL && region_slot_hold(&slot->st, r->held.written_upto) == SLOT_HOLD_NONE &&
	    region_slot_hosted(&slot->st) && region_may_deliver(r) &&
	    !region_entities_must_wait(r, shard, &e)) {
		region_hosting_deliver(r, slot->shard, &e);
		return 0;
	}
	return region_buffer_append(r, slot, &e) ? 0 : -ENOBUFS;
}
