/* byte_set.c — see byte_set.h. */
#include "base/byte_set.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/fnv1a.h"

struct byte_set_entry {
	size_t len;
	char bytes[];
};

void byte_set_init(struct byte_set *s) { *s = (struct byte_set){0}; }

/* FNV-1a: the keys are short (entity ids), and nobody chooses them to
 * collide a table that lives for one fill. */
static uint64_t hash(const char *key, size_t len) { return fnv1a64(key, len); }

static size_t find(const struct byte_set_entry *const *slots, size_t cap, const char *key, size_t len)
{
	size_t at = (size_t)hash(key, len) & (cap - 1);
	while (slots[at] != NULL && !(slots[at]->len == len && memcmp(slots[at]->bytes, key, len) == 0))
		at = (at + 1) & (cap - 1);
	return at;
}

/* Doubles the table (at least 16 slots), keeping it at most half full. */
static int grow(struct byte_set *s)
{
	size_t cap = s->cap ? s->cap * 2 : 16;
	struct byte_set_entry **slots = calloc(cap, sizeof *slots);
	if (slots == NULL)
		return -ENOMEM;
	for (size_t k = 0; k < s->cap; k++)
		if (s->slots[k] != NULL)
			slots[find((const struct byte_set_entry *const *)slots, cap, s->slots[k]->bytes, s->slots[k]->len)] =
				s->slots[k];
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

int byte_set_add(struct byte_set *s, const char *key, size_t len)
{
	if ((s->count + 1) * 2 > s->cap && grow(s) != 0)
		return -ENOMEM;
	size_t at = find((const struct byte_set_entry *const *)s->slots, s->cap, key, len);
	if (s->slots[at] != NULL)
		return 0;
	struct byte_set_entry *e = malloc(sizeof *e + (len ? len : 1));
	if (e == NULL)
		return -ENOMEM;
	e->len = len;
	if (len > 0)
		memcpy(e->bytes, key, len);
	s->slots[at] = e;
	s->count++;
	return 0;
}

bool byte_set_contains(const struct byte_set *s, const char *key, size_t len)
{
	if (s->count == 0)
		return false;
	return s->slots[find((const struct byte_set_entry *const *)s->slots, s->cap, key, len)] != NULL;
}

void byte_set_clear(struct byte_set *s)
{
	for (size_t k = 0; k < s->cap; k++)
		free(s->slots[k]);
	free(s->slots);
	*s = (struct byte_set){0};
}
