/* host_batch.c — see host_batch.h. */
#include "hosting/host_batch.h"

#include <errno.h>

#include "hosting/host_msg.h"

void host_batch_init(struct host_batch *b)
{
	b->x.buff = NULL;
	b->x.buffsz = 0;
	b->x.index = 0;
	b->n = 0;
	b->mark = 0;
}

void host_batch_free(struct host_batch *b)
{
	if (b->x.buff != NULL)
		ei_x_free(&b->x);
	host_batch_init(b);
}

ei_x_buff *host_batch_item_begin(struct host_batch *b)
{
	if (b->x.buff == NULL && ei_x_new(&b->x) < 0) {
		host_batch_init(b);
		return NULL;
	}
	if (b->n == 0) {
		b->x.index = 0;
		if (host_msg_batch_open(&b->x) != 0)
			return NULL;
	}
	b->mark = b->x.index;
	return &b->x;
}

void host_batch_item_end(struct host_batch *b, bool ok)
{
	if (ok)
		b->n++;
	else
		b->x.index = b->mark;
}

size_t host_batch_size(const struct host_batch *b) { return b->n > 0 ? (size_t)b->x.index : 0; }

int host_batch_take(struct host_batch *b, const char **buf, size_t *len)
{
	uint32_t n = b->n;
	b->n = 0;
	if (n == 0)
		return 0;
	if (host_msg_batch_close(&b->x, n) != 0)
		return -ENOMEM;
	*buf = b->x.buff;
	*len = (size_t)b->x.index;
	return 1;
}
