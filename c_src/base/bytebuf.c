/* bytebuf.c — see bytebuf.h. */
#include "base/bytebuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int bytebuf_reserve(struct bytebuf *b, size_t extra)
{
	size_t used = b->len - b->off;
	if (b->cap - b->len >= extra)
		return 0;
	if (b->off > 0 && b->cap - used >= extra) {
		memmove(b->data, b->data + b->off, used);
		b->off = 0;
		b->len = used;
		return 0;
	}
	if (extra > SIZE_MAX / 2 - used)
		return -ENOMEM;
	size_t want = used + extra;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < want)
		cap *= 2;
	uint8_t *p = malloc(cap);
	if (p == NULL)
		return -ENOMEM;
	if (used)
		memcpy(p, b->data + b->off, used);
	free(b->data);
	b->data = p;
	b->off = 0;
	b->len = used;
	b->cap = cap;
	return 0;
}

int bytebuf_append(struct bytebuf *b, const void *src, size_t n)
{
	if (n == 0)
		return 0;
	int rc = bytebuf_reserve(b, n);
	if (rc)
		return rc;
	memcpy(b->data + b->len, src, n);
	b->len += n;
	return 0;
}

void bytebuf_consume(struct bytebuf *b, size_t n)
{
	b->off += n;
	if (b->off >= b->len)
		b->off = b->len = 0;
}

void bytebuf_shrink_idle(struct bytebuf *b, size_t keep_cap)
{
	if (b->len == b->off && b->cap > keep_cap) {
		free(b->data);
		b->data = NULL;
		b->off = b->len = b->cap = 0;
	}
}

void bytebuf_free(struct bytebuf *b)
{
	free(b->data);
	b->data = NULL;
	b->off = b->len = b->cap = 0;
}
