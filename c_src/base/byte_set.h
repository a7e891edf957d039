/*
 * byte_set.h — a set of byte strings (an open-addressing hash table of
 * copies), for remembering which keys were seen: a replica being filled
 * keeps the ids written live since the fill began, so the fill's older
 * copies of them are not applied over the newer ones.
 *
 * Not thread-safe; one owner.
 */
#ifndef SN_BYTE_SET_H
#define SN_BYTE_SET_H

#include <stdbool.h>
#include <stddef.h>

struct byte_set_entry;

struct byte_set {
	struct byte_set_entry **slots; /* cap of them; NULL: empty */
	size_t cap, count;
};

/* An empty set; nothing allocated until the first add. */
void byte_set_init(struct byte_set *s);

/* Adds a copy of key[0..len) (already in: nothing changes). Returns 0 or
 * -ENOMEM (the set as it was). */
int byte_set_add(struct byte_set *s, const char *key, size_t len);

/* Whether key[0..len) is in the set. */
bool byte_set_contains(const struct byte_set *s, const char *key, size_t len);

/* Frees every copy and the table; the set is empty and usable again. */
void byte_set_clear(struct byte_set *s);

#endif
