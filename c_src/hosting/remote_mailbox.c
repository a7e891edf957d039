/* remote_mailbox.c — see remote_mailbox.h. */
#include "hosting/remote_mailbox.h"

/* The next queued item goes in flight, numbered; NULL if none waits. */
static struct remote_mailbox_item *advance(struct remote_mailbox *mb)
{
	struct remote_mailbox_item *it = mb->head;
	if (it != NULL) {
		mb->head = it->next;
		if (mb->head == NULL)
			mb->tail = NULL;
		mb->queued--;
		it->next = NULL;
		it->seq = ++mb->last_seq;
	}
	mb->in_flight = it;
	return it;
}

bool remote_mailbox_offer(struct remote_mailbox *mb, struct remote_mailbox_item *item)
{
	item->next = NULL;
	if (mb->in_flight == NULL) {
		item->seq = ++mb->last_seq;
		mb->in_flight = item;
		return true;
	}
	item->seq = 0;
	if (mb->tail)
		mb->tail->next = item;
	else
		mb->head = item;
	mb->tail = item;
	mb->queued++;
	return false;
}

struct remote_mailbox_item *remote_mailbox_complete(struct remote_mailbox *mb, uint64_t seq,
						    struct remote_mailbox_item **next)
{
	*next = NULL;
	struct remote_mailbox_item *done = mb->in_flight;
	if (done == NULL || done->seq != seq)
		return NULL;
	*next = advance(mb);
	return done;
}

struct remote_mailbox_item *remote_mailbox_fail(struct remote_mailbox *mb, struct remote_mailbox_item **next)
{
	*next = NULL;
	struct remote_mailbox_item *done = mb->in_flight;
	if (done == NULL)
		return NULL;
	*next = advance(mb);
	return done;
}

struct remote_mailbox_item *remote_mailbox_drain(struct remote_mailbox *mb)
{
	struct remote_mailbox_item *all = mb->in_flight;
	if (all != NULL)
		all->next = mb->head;
	else
		all = mb->head;
	mb->in_flight = mb->head = mb->tail = NULL;
	mb->queued = 0;
	return all;
}
