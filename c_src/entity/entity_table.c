/* entity_table.c — see entity_table.h. */
#include "entity/entity_table.h"

#include <stdlib.h>
#include <string.h>

uint32_t entity_table_hash(const char *id, size_t len)
{
	/* FNV-1a, then a final avalanche so the low bits used for the slot
	 * index depend on every byte. */
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)id[i];
		h *= 16777619u;
	}
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

/* The slot bits that carry a hash tag: the top 16 of a 64-bit address,
 * none where addresses are narrower (the tag would not fit). */
#if UINTPTR_MAX > 0xFFFFFFFFu
#define TAG_SHIFT 48
#define TAG_BITS (~(uintptr_t)0 << TAG_SHIFT)
#else
#define TAG_SHIFT 0
#define TAG_BITS ((uintptr_t)0)
#endif

/* The tag bits in use by this table: none once it is untagged. */
static uintptr_t tag_mask(const struct entity_table *t) { return t->untagged ? 0 : TAG_BITS; }

/* The high half of the hash, where the slot's tag bits are (its low bits
 * pick the home slot, so every entity of a probe run shares them). */
static uintptr_t tag_of(const struct entity_table *t, uint32_t hash)
{
	return ((uintptr_t)(hash >> 16) << TAG_SHIFT) & tag_mask(t);
}

static struct entity *entity_of(const struct entity_table *t, uintptr_t slot)
{
	return (struct entity *)(slot & ~tag_mask(t));
}

struct entity *entity_table_at(const struct entity_table *t, size_t i)
{
	return entity_of(t, t->slots[i]);
}

static bool same_id(const struct entity *e, const char *id, size_t len, uint32_t hash)
{
	return e->hash == hash && e->id_len == len && memcmp(entity_id(e), id, len) == 0;
}

struct entity *entity_table_find(const struct entity_table *t, const char *id, size_t len, uint32_t hash)
{
	if (t->cap == 0)
		return NULL;
	size_t mask = t->cap - 1;
	const uintptr_t *slots = t->slots;
	uintptr_t tags = tag_mask(t), tag = tag_of(t, hash);
	for (size_t i = hash & mask;; i = (i + 1) & mask) {
		uintptr_t slot = slots[i];
		if (slot == 0)
			return NULL;
		/* Only a slot whose tag matches is worth reading the entity of. */
		if ((slot & tags) == tag) {
			struct entity *e = (struct entity *)(slot & ~tags);
			if (same_id(e, id, len, hash))
				return e;
		}
	}
}

void entity_table_prefetch_slot(const struct entity_table *t, uint32_t hash)
{
	if (t->cap != 0)
		__builtin_prefetch(&t->slots[hash & (t->cap - 1)]);
}

/* The cache line size of every x86-64 and most ARM64 cores: a longer one
 * only makes some hints redundant. */
#define PREFETCH_LINE 64

void entity_table_prefetch_entity(const struct entity_table *t, uint32_t hash, size_t bytes)
{
	if (t->cap == 0)
		return;
	uintptr_t slot = t->slots[hash & (t->cap - 1)];
	if (slot == 0 || (slot & tag_mask(t)) != tag_of(t, hash))
		return;
	/* Every line the bytes touch, from the one the block starts in. */
	uintptr_t first = (uintptr_t)entity_of(t, slot);
	for (uintptr_t line = first & ~(uintptr_t)(PREFETCH_LINE - 1); line < first + bytes; line += PREFETCH_LINE)
		__builtin_prefetch((const void *)line);
}

static void place(const struct entity_table *t, uintptr_t *slots, size_t cap, struct entity *e)
{
	size_t mask = cap - 1;
	size_t i = e->hash & mask;
	while (slots[i] != 0)
		i = (i + 1) & mask;
	slots[i] = (uintptr_t)e | tag_of(t, e->hash);
}

static bool resize(struct entity_table *t, size_t cap)
{
	uintptr_t *slots = calloc(cap, sizeof *slots);
	if (slots == NULL)
		return false;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i] != 0)
			place(t, slots, cap, entity_of(t, t->slots[i]));
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return true;
}

void entity_table_untag(struct entity_table *t)
{
	if (t->untagged)
		return;
	for (size_t i = 0; i < t->cap; i++)
		t->slots[i] &= ~TAG_BITS;
	t->untagged = true;
}

/* ---- recency ---- */

static struct entity_lru_link *link_of(struct entity *e) { return (struct entity_lru_link *)(void *)e - 1; }

static struct entity *entity_of_link(struct entity_lru_link *l) { return (struct entity *)(void *)(l + 1); }

static void link_unlink(struct entity_lru *lru, struct entity_lru_link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	lru->count--;
}

static void link_push_front(struct entity_lru *lru, struct entity_lru_link *l)
{
	l->prev = &lru->head;
	l->next = lru->head.next;
	lru->head.next->prev = l;
	lru->head.next = l;
	lru->count++;
}

void entity_lru_init(struct entity_lru *l)
{
	l->head.prev = l->head.next = &l->head;
	l->head.owner = NULL;
	l->count = 0;
}

struct entity *entity_lru_oldest(const struct entity_lru *l, void **owner)
{
	if (l->count == 0)
		return NULL;
	*owner = l->head.prev->owner;
	return entity_of_link(l->head.prev);
}

struct entity *entity_lru_newer(const struct entity_lru *l, struct entity *e, void **owner)
{
	struct entity_lru_link *newer = link_of(e)->prev;
	if (newer == &l->head)
		return NULL;
	*owner = newer->owner;
	return entity_of_link(newer);
}

void entity_table_set_lru(struct entity_table *t, struct entity_lru *lru, void *owner)
{
	t->lru = lru;
	t->lru_owner = owner;
}

void entity_table_touch(const struct entity_table *t, struct entity *e)
{
	if (t->lru == NULL || t->lru->head.next == link_of(e))
		return;
	link_unlink(t->lru, link_of(e));
	link_push_front(t->lru, link_of(e));
}

/* Frees e's block (and its link, off the list). */
static void entity_free(const struct entity_table *t, struct entity *e)
{
	if (t->lru == NULL) {
		free(e);
		return;
	}
	link_unlink(t->lru, link_of(e));
	free(link_of(e));
}

/* ---- the table ---- */

struct entity *entity_table_insert(struct entity_table *t, const char *id, size_t len, uint32_t hash,
				   size_t state_size)
{
	if (len > UINT32_MAX || state_size > UINT32_MAX)
		return NULL;
	if ((t->count + 1) * 4 > t->cap * 3 && !resize(t, t->cap ? t->cap * 2 : 8))
		return NULL;
	size_t state_padded = (state_size + 7u) & ~(size_t)7u;
	size_t link = t->lru != NULL ? sizeof(struct entity_lru_link) : 0;
	unsigned char *block = malloc(link + sizeof(struct entity) + state_padded + len);
	if (block == NULL)
		return NULL;
	struct entity *e = (struct entity *)(void *)(block + link);
	if (t->lru != NULL) {
		link_of(e)->owner = t->lru_owner;
		link_push_front(t->lru, link_of(e));
	}
	e->hash = hash;
	e->last_active = 0;
	e->id_len = (uint32_t)len;
	e->state_size = (uint32_t)state_size;
	memset(e->data, 0, state_padded);
	memcpy(e->data + state_padded, id, len);
	if ((uintptr_t)e & tag_mask(t))
		entity_table_untag(t); /* this address needs the tag bits */
	place(t, t->slots, t->cap, e);
	t->count++;
	return e;
}

void entity_table_remove(struct entity_table *t, struct entity *e)
{
	size_t mask = t->cap - 1;
	size_t i = e->hash & mask;
	while (entity_table_at(t, i) != e)
		i = (i + 1) & mask;
	/* Backward-shift: pull later members of the probe run into the hole
	 * so lookups never stop early at it. */
	size_t hole = i;
	for (size_t j = (hole + 1) & mask; t->slots[j] != 0; j = (j + 1) & mask) {
		size_t home = entity_table_at(t, j)->hash & mask;
		/* Move j into the hole unless its home lies cyclically in (hole, j]. */
		bool home_after_hole = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
		if (!home_after_hole) {
			t->slots[hole] = t->slots[j];
			hole = j;
		}
	}
	t->slots[hole] = 0;
	t->count--;
	entity_free(t, e);
	if (t->cap > 8 && t->count * 8 < t->cap)
		resize(t, t->cap / 2); /* failure just keeps the larger array */
	if (t->count == 0) {
		free(t->slots);
		t->slots = NULL;
		t->cap = 0;
	}
}

void entity_table_each(const struct entity_table *t, void (*fn)(struct entity *e, void *arg), void *arg)
{
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i] != 0)
			fn(entity_table_at(t, i), arg);
}

size_t entity_table_remove_if(struct entity_table *t, bool (*pred)(struct entity *e, void *arg),
			      void (*on_remove)(struct entity *e, void *arg), void *arg)
{
	/* Collect first: removal shifts entries and may shrink the array. */
	size_t n = 0, cap = 0;
	struct entity **doomed = NULL;
	for (size_t i = 0; i < t->cap; i++) {
		struct entity *e = entity_table_at(t, i);
		if (e == NULL || !pred(e, arg))
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct entity **d = realloc(doomed, ncap * sizeof *d);
			if (d == NULL)
				break; /* the rest waits for the next sweep */
			doomed = d;
			cap = ncap;
		}
		doomed[n++] = e;
	}
	for (size_t k = 0; k < n; k++) {
		if (on_remove)
			on_remove(doomed[k], arg);
		entity_table_remove(t, doomed[k]);
	}
	free(doomed);
	return n;
}

void entity_table_clear(struct entity_table *t, void (*on_remove)(struct entity *e, void *arg), void *arg)
{
	for (size_t i = 0; i < t->cap; i++) {
		struct entity *e = entity_table_at(t, i);
		if (e == NULL)
			continue;
		if (on_remove)
			on_remove(e, arg);
		entity_free(t, e);
	}
	entity_table_free(t);
}

void entity_table_free(struct entity_table *t)
{
	free(t->slots);
	t->slots = NULL;
	t->cap = t->count = 0;
}

size_t entity_table_bytes(const struct entity_table *t)
{
	size_t bytes = t->cap * sizeof *t->slots;
	for (size_t i = 0; i < t->cap; i++) {
		const struct entity *e = entity_table_at(t, i);
		if (e != NULL)
			bytes += sizeof *e + ((e->state_size + 7u) & ~7u) + e->id_len +
				 (t->lru != NULL ? sizeof(struct entity_lru_link) : 0);
	}
	return bytes;
}
