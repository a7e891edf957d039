/*
 * entity_table.h — a shard's live entities, keyed by the canonical encoding
 * of their ids.
 *
 * Open addressing with linear probing over an array of pointers, deletion
 * by backward shift (no tombstones), grown at 3/4 load and shrunk below 1/8.
 * Each entity is one allocation holding its header, its state and its id
 * bytes, so an idle counter entity costs one small block plus a slot or two.
 *
 * A slot also holds 16 bits of its entity's hash, in the pointer's top 16
 * bits, which user-space addresses on 64-bit Linux leave zero: a probe that
 * passes a slot of another id then reads only the slot, not that entity's
 * block (a cache miss, in a table of a million entities), at no memory
 * cost. Should an entity's address ever use those bits (another platform,
 * a tagging allocator), the table drops the tags and stores plain pointers
 * from then on (entity_table_untag).
 *
 * Recency: tables given an entity_lru (entity_table_set_lru, for a
 * region's max_active_entities) put a link in front of each entity's block
 * — 24 bytes, paid only with a limit — and keep every entity of all of
 * them on one list, most recently used first: moving one to the front
 * (entity_table_touch) and finding the least recently used
 * (entity_lru_oldest) take constant time, with no scan.
 */
#ifndef SN_ENTITY_TABLE_H
#define SN_ENTITY_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct entity {
	uint32_t hash;        /* of the id bytes */
	uint32_t last_active; /* loop clock in ms, wrapping; for idle passivation */
	uint32_t id_len;
	uint32_t state_size;
	/* state (state_size bytes, 8-aligned), then the id bytes */
	_Alignas(8) unsigned char data[];
};

static inline void *entity_state(struct entity *e) { return e->data; }
static inline const char *entity_id(const struct entity *e)
{
	return (const char *)e->data + ((e->state_size + 7u) & ~7u);
}

/* The link before an entity's block in a table with an entity_lru. */
struct entity_lru_link {
	struct entity_lru_link *prev, *next;
	void *owner; /* the table's owner (entity_table_set_lru) */
};

/* The entities of the tables that share it, most recently used first: a
 * circular list through `head`. Held by its owner (a region), which must
 * keep it until those tables are empty. */
struct entity_lru {
	struct entity_lru_link head;
	size_t count; /* entities on it */
};

/* An empty list. */
void entity_lru_init(struct entity_lru *l);

/* The least recently used entity and, in *owner, its table's owner; NULL
 * when the list is empty. */
struct entity *entity_lru_oldest(const struct entity_lru *l, void **owner);

/* The entity used next after e (on l), and its owner; NULL after the most
 * recent. */
struct entity *entity_lru_newer(const struct entity_lru *l, struct entity *e, void **owner);

struct entity_table {
	uintptr_t *slots; /* entity address | hash tag (see above); 0: empty */
	size_t cap;   /* a power of two, or 0 */
	size_t count;
	bool untagged; /* slots hold plain addresses */
	struct entity_lru *lru; /* NULL: no recency kept */
	void *lru_owner;
};

/* Keeps the table's entities on `lru` (not owned), naming `owner` as
 * theirs. Only on an empty table. */
void entity_table_set_lru(struct entity_table *t, struct entity_lru *lru, void *owner);

/* e was used: the most recent of its list (nothing without a list). */
void entity_table_touch(const struct entity_table *t, struct entity *e);

/* The entity in slot i (i < cap), or NULL if the slot is empty. */
struct entity *entity_table_at(const struct entity_table *t, size_t i);

/* The hash the table uses for id bytes. */
uint32_t entity_table_hash(const char *id, size_t len);

/* Finds the entity with these id bytes, or NULL. */
struct entity *entity_table_find(const struct entity_table *t, const char *id, size_t len, uint32_t hash);

/* Hints that the slot where an entity of `hash` is looked for first will
 * be read soon: memory is asked for it, nothing is read. For a caller
 * about to look up several ids, so that their cache misses overlap rather
 * than follow one another. */
void entity_table_prefetch_slot(const struct entity_table *t, uint32_t hash);

/* Reads the slot where an entity of `hash` is looked for first and, when
 * the entity there may be it (its tag matches), hints that the first
 * `bytes` of its block will be read soon. Dereferences nothing but the
 * slot; a hint that turns out wrong costs only the memory asked for. */
void entity_table_prefetch_entity(const struct entity_table *t, uint32_t hash, size_t bytes);

/* Allocates an entity with zeroed state and a copy of the id, and inserts it
 * (the id must not be present), the most recent of the table's list if it
 * has one. Returns it, or NULL (out of memory; the table is unchanged). */
struct entity *entity_table_insert(struct entity_table *t, const char *id, size_t len, uint32_t hash,
				   size_t state_size);

/* Removes e from the table and frees it (its state must be released first). */
void entity_table_remove(struct entity_table *t, struct entity *e);

/* Calls fn for each entity. fn must not insert or remove. */
void entity_table_each(const struct entity_table *t, void (*fn)(struct entity *e, void *arg), void *arg);

/* Removes every entity for which `pred` returns true, calling `on_remove`
 * (which releases state) before each is freed. Returns how many. */
size_t entity_table_remove_if(struct entity_table *t, bool (*pred)(struct entity *e, void *arg),
			      void (*on_remove)(struct entity *e, void *arg), void *arg);

/* Drops the hash tags from every slot and stores plain addresses from now
 * on, lookups comparing every entity they pass. Done by the table itself
 * when an entity's address uses the tag bits; idempotent. */
void entity_table_untag(struct entity_table *t);

/* Removes and frees every entity, calling `on_remove` (which releases
 * state; may be NULL) before each is freed, then frees the array: the table
 * is empty and can be used again. Allocates nothing, so it cannot fail. */
void entity_table_clear(struct entity_table *t, void (*on_remove)(struct entity *e, void *arg), void *arg);

/* Frees the table's array (entities must have been removed). */
void entity_table_free(struct entity_table *t);

/* Bytes the table itself holds (slots plus entity blocks, not counting
 * allocator overhead); for stats. */
size_t entity_table_bytes(const struct entity_table *t);

#endif
