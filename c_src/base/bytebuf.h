/*
 * bytebuf.h — a growable byte buffer with a read cursor.
 *
 * Used for socket input (append at the end, consume from the front) and for
 * output queues. Bytes live in data[off .. len). Memory is owned by the buffer
 * and released by bytebuf_free().
 */
#ifndef SN_BYTEBUF_H
#define SN_BYTEBUF_H

#include <stddef.h>
#include <stdint.h>

struct bytebuf {
	uint8_t *data;
	size_t off; /* first unread byte */
	size_t len; /* one past the last byte */
	size_t cap;
};

/* Bytes waiting to be read. */
static inline size_t bytebuf_size(const struct bytebuf *b) { return b->len - b->off; }
static inline const uint8_t *bytebuf_head(const struct bytebuf *b) { return b->data + b->off; }

/* Makes room for at least `extra` more bytes at the end; moves unread bytes to
 * the front first when that suffices. Returns 0 or -ENOMEM (buffer unchanged). */
int bytebuf_reserve(struct bytebuf *b, size_t extra);

/* Appends n bytes. Returns 0 or -ENOMEM (buffer unchanged). */
int bytebuf_append(struct bytebuf *b, const void *src, size_t n);

/* Drops n (<= size) bytes from the front. An emptied buffer resets to offset 0. */
void bytebuf_consume(struct bytebuf *b, size_t n);

/* Releases the memory if the buffer is empty and larger than keep_cap, so a
 * burst does not pin memory forever. */
void bytebuf_shrink_idle(struct bytebuf *b, size_t keep_cap);

void bytebuf_free(struct bytebuf *b);

#endif
