/* region_buffer.c — the messages that wait in a shard's slot (its home
 * unknown, a load or a claim under way, a hand-off): appended in arrival
 * order, refused with an error where they cannot be delivered
 * (region_internal.h). Answers through region_send.c; calls no other
 * part. */
#include <stdlib.h>
#include <string.h>

#include "sharding/region_internal.h"
#include "sharding/region_buffer.h"
#include "sharding/region_send.h"

void region_envelope_of(const struct pending *p, struct envelope *e, erlang_pid *from)
{
	*e = (struct envelope){
		.t0_ns = p->t0_ns,
		.arrived_ns = p->arrived_ns,
		.is_call = p->is_call,
		.kind = p->kind,
		.from = kept_sender_pid(&p->from, p->data + p->tag_len + p->id_len + p->msg_len, from),
		.tag = p->data,
		.tag_len = p->tag_len,
		.id = p->data + p->tag_len,
		.id_len = p->id_len,
		.msg = p->data + p->tag_len + p->id_len,
		.msg_len = p->msg_len,
	};
}

struct pending *region_pending_new(const struct envelope *e)
{
	size_t n = e->tag_len + e->id_len + e->msg_len + kept_sender_size(e->from);
	struct pending *p = malloc(sizeof *p + n);
	if (p == NULL)
		return NULL;
	*p = (struct pending){
		.t0_ns = e->t0_ns,
		.arrived_ns = e->arrived_ns,
		.is_call = e->is_call,
		.kind = e->kind,
		.tag_len = (uint32_t)e->tag_len,
		.id_len = (uint32_t)e->id_len,
		.msg_len = (uint32_t)e->msg_len,
	};
	char *at = p->data;
	if (e->tag_len > 0) /* a tell has no tag, and e->tag may be NULL */
		memcpy(at, e->tag, e->tag_len);
	at += e->tag_len;
	memcpy(at, e->id, e->id_len);
	at += e->id_len;
	memcpy(at, e->msg, e->msg_len);
	kept_sender_keep(&p->from, at + e->msg_len, e->from);
	return p;
}

bool region_buffer_append(struct region *r, struct shard_slot *slot, const struct envelope *e)
{
	if (r->buffered >= r->cfg.buffer_size)
		return false;
	struct pending *p = region_pending_new(e);
	if (p == NULL)
		return false;
	if (slot->tail)
		slot->tail->next = p;
	else
		slot->head = p;
	slot->tail = p;
	region_slot_buffered(&slot->st);
	r->buffered++;
	return true;
}

void region_buffer_push_front(struct region *r, struct shard_slot *slot, struct pending *head, struct pending *tail,
			      uint32_t n)
{
	if (head == NULL)
		return;
	tail->next = slot->head;
	slot->head = head;
	if (slot->tail == NULL)
		slot->tail = tail;
	for (uint32_t k = 0; k < n; k++)
		region_slot_buffered(&slot->st);
	r->buffered += n;
}

void region_refuse_entity(struct region *r, struct shard_slot *slot, const char *id, size_t id_len,
			  const char *error)
{
	struct pending **at = &slot->head, *last = NULL;
	while (*at) {
		struct pending *p = *at;
		struct envelope e;
		erlang_pid from;
		region_envelope_of(p, &e, &from);
		if (e.id_len != id_len || memcmp(e.id, id, id_len) != 0) {
			last = p;
			at = &p->next;
			continue;
		}
		*at = p->next;
		region_answer_error(r, &e, error); /* a call, or a tell with a sender */
		free(p);
		region_slot_unbuffered(&slot->st, 1);
		r->buffered--;
	}
	slot->tail = last;
}

bool region_buffer_waited(const struct shard_slot *slot, uint64_t now_ns, uint64_t limit_ns)
{
	const struct pending *p = slot->head;
	return p != NULL && p->t0_ns != 0 && p->t0_ns <= now_ns && now_ns - p->t0_ns >= limit_ns;
}

void region_refuse_buffered(struct region *r, struct shard_slot *slot, const char *error)
{
	while (slot->head) {
		struct pending *p = slot->head;
		slot->head = p->next;
		struct envelope e;
		erlang_pid from;
		region_envelope_of(p, &e, &from);
		/* A call learns why it will get no entity reply. */
		if (e.is_call)
			region_answer_error(r, &e, error);
		free(p);
	}
	slot->tail = NULL;
	r->buffered -= slot->st.buffered;
	region_slot_unbuffered(&slot->st, slot->st.buffered);
}

