/*
 * test_entity_table.c — the open-addressing table of live entities: lookups,
 * backward-shift deletion (including probe runs that wrap past the end of
 * the array and ids whose hashes share their low bits), growth and shrink,
 * predicate removal, the layout of each entity block, and a long randomized
 * run checked against a simple model.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "entity/entity_table.h"
#include "unit_helpers.h"

/* ---- helpers ---- */

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64: a fixed seed gives the same run every time. */
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static size_t rng_below(uint64_t *s, size_t n)
{
	return (size_t)(rng_next(s) % n);
}

static size_t pad8(size_t n)
{
	return (n + 7u) & ~(size_t)7u;
}

static struct entity *put(struct entity_table *t, const char *id, size_t len, size_t state_size)
{
	struct entity *e = entity_table_insert(t, id, len, entity_table_hash(id, len), state_size);
	cr_assert_not_null(e, "insert");
	return e;
}

static struct entity *get(const struct entity_table *t, const char *id, size_t len)
{
	return entity_table_find(t, id, len, entity_table_hash(id, len));
}

/* Structural invariants the header promises. */
static void check_shape(const struct entity_table *t)
{
	if (t->count == 0) {
		cr_assert_eq(t->cap, 0, "an empty table holds no array (cap %zu)", t->cap);
		cr_assert_null(t->slots);
		return;
	}
	cr_assert(t->cap >= 8 && (t->cap & (t->cap - 1)) == 0, "cap %zu is a power of two >= 8", t->cap);
	cr_assert(t->count * 4 <= t->cap * 3, "load %zu/%zu above 3/4", t->count, t->cap);
	if (t->cap > 8)
		cr_assert(t->count * 8 >= t->cap, "load %zu/%zu below 1/8", t->count, t->cap);
	size_t n = 0;
	for (size_t i = 0; i < t->cap; i++)
		if (entity_table_at(t, i) != NULL)
			n++;
	cr_assert_eq(n, t->count, "%zu occupied slots, count %zu", n, t->count);
}

/* Every live entity must be reachable from its home slot without crossing
 * an empty slot; find() relies on it. */
static void check_runs(const struct entity_table *t)
{
	size_t mask = t->cap - 1;
	for (size_t i = 0; i < t->cap; i++) {
		const struct entity *e = entity_table_at(t, i);
		if (e == NULL)
			continue;
		for (size_t j = e->hash & mask; j != i; j = (j + 1) & mask)
			cr_assert_not_null(entity_table_at(t, j), "hole at %zu between home %zu and slot %zu", j,
					   (size_t)(e->hash & mask), i);
	}
}

/* Finds `want` ids, written into ids[k] (IDBUF bytes each, lengths in
 * lens[k]), whose hash has (hash & mask) == bits. */
#define IDBUF 16
static void find_colliding(char ids[][IDBUF], size_t lens[], size_t want, uint32_t mask, uint32_t bits)
{
	size_t found = 0;
	for (uint32_t n = 0; found < want; n++) {
		cr_assert(n < 100000000u, "search for colliding ids ran away");
		char buf[IDBUF];
		size_t len = (size_t)snprintf(buf, sizeof buf, "c%u", n);
		if ((entity_table_hash(buf, len) & mask) == bits) {
			memcpy(ids[found], buf, len);
			lens[found++] = len;
		}
	}
}

static void drain(struct entity_table *t)
{
	while (t->count > 0) {
		struct entity *e = NULL;
		for (size_t i = 0; i < t->cap && e == NULL; i++)
			e = entity_table_at(t, i);
		entity_table_remove(t, e);
	}
	entity_table_free(t);
}

/* ---- basics ---- */

Test(entity_table, empty_table)
{
	struct entity_table t = {0};
	cr_assert_null(get(&t, "x", 1));
	cr_assert_null(get(&t, "", 0));
	cr_assert_eq(entity_table_bytes(&t), 0);
	check_shape(&t);
	entity_table_free(&t);
	entity_table_free(&t); /* twice is harmless */
}

Test(entity_table, insert_find_remove)
{
	struct entity_table t = {0};
	struct entity *a = put(&t, "alpha", 5, 8);
	struct entity *b = put(&t, "beta", 4, 8);
	struct entity *empty = put(&t, "", 0, 8);
	cr_assert_eq(t.count, 3);
	cr_assert_eq(get(&t, "alpha", 5), a);
	cr_assert_eq(get(&t, "beta", 4), b);
	cr_assert_eq(get(&t, "", 0), empty);
	cr_assert_null(get(&t, "alph", 4), "a prefix is another id");
	cr_assert_null(get(&t, "alphaa", 6));
	cr_assert_null(get(&t, "gamma", 5));
	cr_assert_eq(a->hash, entity_table_hash("alpha", 5));
	cr_assert_eq(a->id_len, 5);
	cr_assert_eq(a->last_active, 0);

	entity_table_remove(&t, a);
	cr_assert_null(get(&t, "alpha", 5));
	cr_assert_eq(get(&t, "beta", 4), b);
	cr_assert_eq(get(&t, "", 0), empty);
	cr_assert_eq(t.count, 2);

	/* Re-inserting a removed id gives a fresh entity with zeroed state. */
	*(long long *)entity_state(b) = 42;
	entity_table_remove(&t, b);
	b = put(&t, "beta", 4, 8);
	cr_assert_eq(*(long long *)entity_state(b), 0);
	cr_assert_eq(get(&t, "beta", 4), b);

	entity_table_remove(&t, b);
	entity_table_remove(&t, empty);
	check_shape(&t);
	entity_table_free(&t);
}

Test(entity_table, hash_is_deterministic_and_uses_every_byte)
{
	char a[64];
	memset(a, 'q', sizeof a);
	uint32_t h = entity_table_hash(a, sizeof a);
	cr_assert_eq(h, entity_table_hash(a, sizeof a));
	for (size_t i = 0; i < sizeof a; i++) {
		a[i] = 'r';
		cr_assert_neq(entity_table_hash(a, sizeof a), h, "byte %zu changes the hash", i);
		a[i] = 'q';
	}
	cr_assert_neq(entity_table_hash(a, 3), entity_table_hash(a, 4), "length matters");
}

Test(entity_table, ids_with_equal_hashes)
{
	/* The caller supplies the hash; entities with the same full hash are
	 * told apart by their bytes. */
	struct entity_table t = {0};
	char ids[20][4];
	struct entity *es[20];
	for (int k = 0; k < 20; k++) {
		ids[k][0] = '0';
		ids[k][1] = (char)('0' + k / 10);
		ids[k][2] = (char)('0' + k % 10);
		es[k] = entity_table_insert(&t, ids[k], 3, 0xdeadbeefu, 0);
		cr_assert_not_null(es[k]);
	}
	for (int k = 0; k < 20; k++)
		cr_assert_eq(entity_table_find(&t, ids[k], 3, 0xdeadbeefu), es[k]);
	cr_assert_null(entity_table_find(&t, "020", 3, 0xdeadbeefu));
	cr_assert_null(entity_table_find(&t, "000", 3, 0xdeadbeeeu), "a different hash is a different id");
	check_runs(&t);
	for (int k = 0; k < 20; k += 2)
		entity_table_remove(&t, es[k]);
	for (int k = 0; k < 20; k++)
		cr_assert_eq(entity_table_find(&t, ids[k], 3, 0xdeadbeefu), k % 2 ? es[k] : NULL);
	check_runs(&t);
	drain(&t);
}

/* ---- collisions in the low bits, probe runs that wrap ---- */

Test(entity_table, runs_wrapping_past_the_end)
{
	/* Six ids whose home, in the initial 8-slot array, is the last slot:
	 * they fill slots 7, 0, 1, 2, 3, 4 (six is the most an 8-slot array
	 * holds at 3/4 load). Every removal order must keep the rest
	 * findable. */
	enum { N = 6 };
	char ids[N][IDBUF];
	size_t lens[N];
	find_colliding(ids, lens, N, 7, 7);

	size_t order[N];
	for (size_t k = 0; k < N; k++)
		order[k] = k;
	size_t perms = 0;
	for (;;) {
		struct entity_table t = {0};
		struct entity *es[N];
		for (size_t k = 0; k < N; k++)
			es[k] = put(&t, ids[k], lens[k], 0);
		cr_assert_eq(t.cap, 8);
		cr_assert_eq(entity_table_at(&t, 7), es[0]);
		cr_assert_eq(entity_table_at(&t, 4), es[N - 1], "the run wrapped to slot 4");
		for (size_t r = 0; r < N; r++) {
			entity_table_remove(&t, es[order[r]]);
			es[order[r]] = NULL;
			if (t.count > 0)
				check_runs(&t);
			for (size_t k = 0; k < N; k++)
				cr_assert_eq(get(&t, ids[k], lens[k]), es[k]);
		}
		check_shape(&t);
		perms++;

		/* Next permutation (lexicographic). */
		size_t i = N - 1;
		while (i > 0 && order[i - 1] >= order[i])
			i--;
		if (i == 0)
			break;
		size_t j = N - 1;
		while (order[j] <= order[i - 1])
			j--;
		size_t tmp = order[i - 1];
		order[i - 1] = order[j];
		order[j] = tmp;
		for (size_t a = i, b = N - 1; a < b; a++, b--) {
			tmp = order[a];
			order[a] = order[b];
			order[b] = tmp;
		}
	}
	cr_assert_eq(perms, 720);
}

Test(entity_table, mixed_homes_near_the_wrap)
{
	/* Ids homed at slots 6, 7 and 0 interleave in one run across the end
	 * of the array; backward shift must move an entry into a hole only
	 * when that does not put it before its home. Random operations on a
	 * table that stays at 8 slots, checked after every step. */
	enum { PER = 3, N = 3 * PER };
	char ids[N][IDBUF];
	size_t lens[N];
	find_colliding(ids, lens, PER, 7, 6);
	find_colliding(ids + PER, lens + PER, PER, 7, 7);
	find_colliding(ids + 2 * PER, lens + 2 * PER, PER, 7, 0);

	uint64_t seed = 0x5eed0001;
	struct entity_table t = {0};
	struct entity *es[N] = {0};
	for (int step = 0; step < 20000; step++) {
		size_t k = rng_below(&seed, N);
		if (es[k] != NULL) {
			entity_table_remove(&t, es[k]);
			es[k] = NULL;
		} else if (t.count < 6) {
			es[k] = put(&t, ids[k], lens[k], 0);
		}
		if (t.count > 0) {
			cr_assert_eq(t.cap, 8);
			check_runs(&t);
		}
		check_shape(&t);
		for (size_t q = 0; q < N; q++)
			cr_assert_eq(get(&t, ids[q], lens[q]), es[q], "step %d id %zu", step, q);
	}
	drain(&t);
}

/* ---- randomized run against a model ---- */

#define KEYS 5000
#define MAXID 48

struct keyspace {
	char id[KEYS][MAXID];
	size_t len[KEYS];
};

/* Ids of lengths 0..MAXID-1. Key 0 is the empty id; the others start with
 * their number in two bytes, so they are distinct, followed by filler. The
 * last 256 keys are crafted to share the low 3 bits of their hash, and the
 * 256 before them the low 10 bits, so they pile into shared probe runs at
 * every table size up to 8 and 1024 slots. */
static void make_keys(struct keyspace *ks)
{
	uint64_t seed = 0x1d5;
	ks->len[0] = 0;
	for (size_t k = 1; k < KEYS - 512; k++) {
		size_t len = 2 + rng_below(&seed, MAXID - 2);
		ks->id[k][0] = (char)(k >> 8);
		ks->id[k][1] = (char)k;
		for (size_t i = 2; i < len; i++)
			ks->id[k][i] = (char)rng_next(&seed);
		ks->len[k] = len;
	}
	char ids[256][IDBUF];
	size_t lens[256];
	find_colliding(ids, lens, 256, 0x3ff, 0x155);
	for (size_t k = 0; k < 256; k++) {
		memcpy(ks->id[KEYS - 512 + k], ids[k], lens[k]);
		ks->len[KEYS - 512 + k] = lens[k];
	}
	find_colliding(ids, lens, 256, 7, 3);
	for (size_t k = 0; k < 256; k++) {
		memcpy(ks->id[KEYS - 256 + k], ids[k], lens[k]);
		ks->len[KEYS - 256 + k] = lens[k];
	}
	/* The crafted ids are "c<number>"; no numbered key starts with 'c'
	 * (that would take a number of 0x6300 or more), but check anyway. */
	for (size_t a = KEYS - 512; a < KEYS; a++)
		for (size_t b = 0; b < KEYS - 512; b++)
			cr_assert(ks->len[a] != ks->len[b] || memcmp(ks->id[a], ks->id[b], ks->len[a]) != 0);
}

struct model {
	const struct keyspace *ks;
	struct entity *live[KEYS];
	size_t seen;
	bool ok;
};

static void visit(struct entity *e, void *arg)
{
	struct model *m = arg;
	uint64_t k = *(uint64_t *)entity_state(e);
	if (k >= KEYS || m->live[k] != e || e->id_len != m->ks->len[k] ||
	    memcmp(entity_id(e), m->ks->id[k], e->id_len) != 0)
		m->ok = false;
	m->seen++;
}

static void check_model(const struct entity_table *t, struct model *m, const struct keyspace *ks)
{
	size_t live = 0;
	for (size_t k = 0; k < KEYS; k++) {
		cr_assert_eq(get(t, ks->id[k], ks->len[k]), m->live[k], "key %zu", k);
		live += m->live[k] != NULL;
	}
	cr_assert_eq(t->count, live);
	m->seen = 0;
	m->ok = true;
	entity_table_each(t, visit, m);
	cr_assert(m->ok, "each() saw an entity the model does not hold");
	cr_assert_eq(m->seen, live);
	check_shape(t);
	if (t->count)
		check_runs(t);
}

/* The randomized run, on a table that starts untagged, or is untagged
 * half way through (populated), or keeps its tags. */
enum tag_mode { TAGS_KEPT, TAGS_NEVER, TAGS_DROPPED_MIDWAY };

static void randomized_run(enum tag_mode mode)
{
	struct keyspace *ks = malloc(sizeof *ks);
	struct model *m = calloc(1, sizeof *m);
	cr_assert(ks && m);
	make_keys(ks);
	m->ks = ks;

	uint64_t seed = 20240601;
	struct entity_table t = {0};
	if (mode == TAGS_NEVER)
		entity_table_untag(&t);
	size_t inserts = 0, removes = 0, hits = 0, max_count = 0, empties = 0;
	for (long op = 0; op < 200000; op++) {
		if (mode == TAGS_DROPPED_MIDWAY && op == 10000) {
			cr_assert_gt(t.count, 1000, "untagged while populated");
			entity_table_untag(&t);
			check_model(&t, m, ks);
		}
		/* Phases of 25000 operations: grow (mostly inserts), mixed,
		 * drain (removes only, of the next live key), mixed. The table
		 * repeatedly grows towards KEYS entries and empties. */
		long phase = (op / 25000) % 4;
		unsigned insert_pct = phase == 0 ? 90 : phase == 2 ? 0 : 50;
		size_t k = rng_below(&seed, KEYS);
		unsigned r = (unsigned)rng_below(&seed, 100);
		struct entity *e = get(&t, ks->id[k], ks->len[k]);
		cr_assert_eq(e, m->live[k], "op %ld: find(%zu)", op, k);
		if (r < 50) {
			hits += e != NULL;
			continue; /* a lookup only */
		}
		if ((unsigned)rng_below(&seed, 100) < insert_pct) {
			if (e == NULL) {
				e = put(&t, ks->id[k], ks->len[k], sizeof(uint64_t));
				cr_assert_eq(*(uint64_t *)entity_state(e), 0);
				*(uint64_t *)entity_state(e) = k;
				m->live[k] = e;
				inserts++;
			}
		} else {
			if (e == NULL && phase == 2 && t.count > 0) {
				while (m->live[k] == NULL)
					k = (k + 1) % KEYS;
				e = get(&t, ks->id[k], ks->len[k]);
				cr_assert_eq(e, m->live[k]);
			}
			if (e != NULL) {
				cr_assert_eq(*(uint64_t *)entity_state(e), k, "state survived moves");
				entity_table_remove(&t, e);
				m->live[k] = NULL;
				removes++;
				if (t.count == 0) {
					empties++;
					check_model(&t, m, ks);
				}
			}
		}
		if (t.count > max_count)
			max_count = t.count;
		if (op % 5000 == 4999)
			check_model(&t, m, ks);
	}
	check_model(&t, m, ks);
	cr_assert(inserts > 15000 && removes > 15000 && hits > 10000, "%zu inserts, %zu removes, %zu hits",
		  inserts, removes, hits);
	cr_assert(max_count > KEYS * 3 / 4, "the table grew (max %zu)", max_count);
	cr_assert(empties >= 2, "the table emptied %zu times", empties);

	cr_assert_eq(t.untagged, mode != TAGS_KEPT);
	drain(&t);
	check_shape(&t);
	free(m);
	free(ks);
}

Test(entity_table, randomized_against_model, .timeout = 120)
{
	randomized_run(TAGS_KEPT);
}

Test(entity_table, randomized_against_model_untagged, .timeout = 120)
{
	randomized_run(TAGS_NEVER);
}

Test(entity_table, randomized_against_model_untagged_midway, .timeout = 120)
{
	randomized_run(TAGS_DROPPED_MIDWAY);
}

/* ---- hash tags in the slots ---- */

Test(entity_table, slots_carry_the_hash_tag_until_untagged)
{
	struct entity_table t = {0};
	char id[16];
	for (unsigned k = 0; k < 500; k++) {
		size_t len = (size_t)snprintf(id, sizeof id, "t%u", k);
		put(&t, id, len, 8);
	}
	size_t seen = 0;
	for (size_t i = 0; i < t.cap; i++) {
		struct entity *e = entity_table_at(&t, i);
		if (e == NULL) {
			cr_assert_eq(t.slots[i], 0, "an empty slot is 0");
			continue;
		}
		seen++;
		if (UINTPTR_MAX > 0xFFFFFFFFu)
			cr_assert_eq(t.slots[i], (uintptr_t)e | (uintptr_t)(e->hash >> 16) << (sizeof(uintptr_t) * 8 - 16),
				     "slot %zu: address and the hash's high 16 bits", i);
		else
			cr_assert_eq(t.slots[i], (uintptr_t)e);
	}
	cr_assert_eq(seen, 500);
	entity_table_untag(&t);
	entity_table_untag(&t); /* idempotent */
	for (size_t i = 0; i < t.cap; i++) {
		struct entity *e = entity_table_at(&t, i);
		cr_assert_eq(t.slots[i], (uintptr_t)e, "slot %zu: a plain address once untagged", i);
	}
	for (unsigned k = 0; k < 500; k++) {
		size_t len = (size_t)snprintf(id, sizeof id, "t%u", k);
		cr_assert_not_null(get(&t, id, len));
	}
	drain(&t);
}

Test(entity_table, ids_with_equal_tags_and_homes)
{
	/* Ids whose hashes differ but share the home slot's bits and the tag
	 * (the high 16 bits): the tag lets both through to the full compare,
	 * which tells them apart. Found by brute force among "e<n>". */
	enum { MAXN = 4096 };
	static uint32_t hashes[MAXN];
	char a[16], b[16];
	size_t alen = 0, blen = 0;
	bool found = false;
	for (unsigned n = 0; n < MAXN && !found; n++) {
		size_t len = (size_t)snprintf(a, sizeof a, "e%u", n);
		hashes[n] = entity_table_hash(a, len);
		for (unsigned m = 0; m < n && !found; m++) {
			if (hashes[m] != hashes[n] && (hashes[m] >> 16) == (hashes[n] >> 16) &&
			    (hashes[m] & 7) == (hashes[n] & 7)) {
				alen = len;
				blen = (size_t)snprintf(b, sizeof b, "e%u", m);
				found = true;
			}
		}
	}
	cr_assert(found, "no two ids share tag and home among %d", MAXN);
	struct entity_table t = {0};
	struct entity *ea = put(&t, a, alen, 0);
	cr_assert_null(get(&t, b, blen), "same tag and home, different id");
	struct entity *eb = put(&t, b, blen, 0);
	cr_assert_eq(t.cap, 8);
	cr_assert_eq(get(&t, a, alen), ea);
	cr_assert_eq(get(&t, b, blen), eb);
	entity_table_remove(&t, ea);
	cr_assert_null(get(&t, a, alen));
	cr_assert_eq(get(&t, b, blen), eb);
	drain(&t);
}

/* ---- growth and shrink ---- */

Test(entity_table, grow_to_100000_and_shrink_to_nothing, .timeout = 120)
{
	enum { N = 100000 };
	struct entity_table t = {0};
	struct entity **es = malloc(N * sizeof *es);
	cr_assert_not_null(es);
	size_t grows = 0, last_cap = 0;
	for (uint32_t k = 0; k < N; k++) {
		char id[12];
		size_t len = (size_t)snprintf(id, sizeof id, "%u", k);
		es[k] = put(&t, id, len, 4);
		*(uint32_t *)entity_state(es[k]) = k;
		if (t.cap != last_cap) {
			cr_assert(t.cap > last_cap, "only grows while inserting");
			grows++;
			last_cap = t.cap;
			check_shape(&t);
		}
	}
	cr_assert_eq(t.count, N);
	cr_assert_eq(t.cap, 262144, "100000 entities at most 3/4 full: 2^18 slots, got %zu", t.cap);
	cr_assert_eq(grows, 16, "8, 16, ..., 2^18");
	check_shape(&t);
	for (uint32_t k = 0; k < N; k += 997) {
		char id[12];
		size_t len = (size_t)snprintf(id, sizeof id, "%u", k);
		cr_assert_eq(get(&t, id, len), es[k]);
	}

	/* Remove in a scrambled order (a step coprime with N). */
	size_t shrinks = 0;
	for (uint32_t n = 0; n < N; n++) {
		uint32_t k = (uint32_t)(((uint64_t)n * 7919u) % N);
		cr_assert_eq(*(uint32_t *)entity_state(es[k]), k);
		entity_table_remove(&t, es[k]);
		es[k] = NULL;
		if (t.cap != last_cap) {
			cr_assert(t.cap < last_cap, "only shrinks while removing");
			shrinks++;
			last_cap = t.cap;
			check_shape(&t);
		}
		if (n == N / 2 || n == N - 100) {
			check_shape(&t);
			check_runs(&t);
			for (uint32_t q = 0; q < N; q += 101) {
				char id[12];
				size_t len = (size_t)snprintf(id, sizeof id, "%u", q);
				cr_assert_eq(get(&t, id, len), es[q]);
			}
		}
	}
	cr_assert_eq(t.count, 0);
	cr_assert_eq(t.cap, 0, "the array is freed at zero");
	cr_assert_null(t.slots);
	cr_assert(shrinks >= 10, "shrank %zu times", shrinks);
	cr_assert_eq(entity_table_bytes(&t), 0);

	/* And it is usable again. */
	struct entity *e = put(&t, "again", 5, 0);
	cr_assert_eq(t.cap, 8);
	entity_table_remove(&t, e);
	cr_assert_null(t.slots);
	entity_table_free(&t);
	free(es);
}

/* ---- remove_if ---- */

struct every_third {
	size_t removed_calls;
	bool order_ok;
	struct entity_table *t;
};

static bool is_third(struct entity *e, void *arg)
{
	(void)arg;
	return *(uint32_t *)entity_state(e) % 3 == 0;
}

static void on_third(struct entity *e, void *arg)
{
	struct every_third *c = arg;
	/* Called before the entity is freed, while it is still findable. */
	if (entity_table_find(c->t, entity_id(e), e->id_len, e->hash) != e)
		c->order_ok = false;
	*(uint32_t *)entity_state(e) = 0xdead;
	c->removed_calls++;
}

static void fill(struct entity_table *t, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		char id[12];
		size_t len = (size_t)snprintf(id, sizeof id, "e%u", k);
		struct entity *e = put(t, id, len, sizeof(uint32_t));
		*(uint32_t *)entity_state(e) = k;
	}
}

Test(entity_table, remove_if_every_third)
{
	enum { N = 3000 };
	struct entity_table t = {0};
	fill(&t, N);
	struct every_third c = {.order_ok = true, .t = &t};
	size_t n = entity_table_remove_if(&t, is_third, on_third, &c);
	cr_assert_eq(n, N / 3);
	cr_assert_eq(c.removed_calls, N / 3);
	cr_assert(c.order_ok, "on_remove runs while the entity is still in the table");
	cr_assert_eq(t.count, N - N / 3);
	check_shape(&t);
	check_runs(&t);
	for (uint32_t k = 0; k < N; k++) {
		char id[12];
		size_t len = (size_t)snprintf(id, sizeof id, "e%u", k);
		struct entity *e = get(&t, id, len);
		if (k % 3 == 0) {
			cr_assert_null(e, "e%u removed", k);
		} else {
			cr_assert_not_null(e, "e%u kept", k);
			cr_assert_eq(*(uint32_t *)entity_state(e), k);
		}
	}
	/* Nothing left matches: a second pass removes nothing. */
	cr_assert_eq(entity_table_remove_if(&t, is_third, NULL, NULL), 0);
	drain(&t);
}

static bool keep_one(struct entity *e, void *arg)
{
	(void)arg;
	return *(uint32_t *)entity_state(e) != 1234;
}

static bool all(struct entity *e, void *arg)
{
	(void)e;
	(void)arg;
	return true;
}

static void count_call(struct entity *e, void *arg)
{
	(void)e;
	(*(size_t *)arg)++;
}

Test(entity_table, remove_if_shrinks_and_empties)
{
	struct entity_table t = {0};
	fill(&t, 5000);
	/* Removing all but one shrinks the array many times mid-sweep. */
	cr_assert_eq(entity_table_remove_if(&t, keep_one, NULL, NULL), 4999);
	cr_assert_eq(t.count, 1);
	cr_assert_eq(t.cap, 8);
	struct entity *e = get(&t, "e1234", 5);
	cr_assert_not_null(e);
	cr_assert_eq(*(uint32_t *)entity_state(e), 1234);

	fill(&t, 0);
	cr_assert_eq(entity_table_remove_if(&t, all, NULL, NULL), 1);
	cr_assert_null(t.slots);
	cr_assert_eq(t.cap, 0);

	/* On an empty table: nothing to do. */
	size_t calls = 0;
	cr_assert_eq(entity_table_remove_if(&t, all, count_call, &calls), 0);
	cr_assert_eq(calls, 0);

	fill(&t, 100);
	cr_assert_eq(entity_table_remove_if(&t, all, count_call, &calls), 100);
	cr_assert_eq(calls, 100);
	check_shape(&t);
	entity_table_free(&t);
}

/* ---- entity block layout ---- */

Test(entity_table, state_alignment_and_id_bytes)
{
	static const size_t sizes[] = {0, 1, 7, 8, 9, 24};
	for (size_t s = 0; s < SN_ARRAY_LEN(sizes); s++) {
		struct entity_table t = {0};
		size_t expect_blocks = 0;
		for (size_t len = 0; len < 20; len++) {
			/* Ids told apart by length, with bytes of every kind
			 * (NUL, 0xff, ...). */
			char id[20];
			for (size_t i = 0; i < len; i++)
				id[i] = (char)(s * 40 + len * 7 + i * 251);
			char *exact = sn_dup_exact(id, len);
			struct entity *e = put(&t, exact, len, sizes[s]);
			free(exact); /* the table keeps its own copy */

			unsigned char *st = entity_state(e);
			cr_assert_eq((uintptr_t)st % 8, 0, "state of size %zu is 8-aligned", sizes[s]);
			cr_assert_eq(e->state_size, sizes[s]);
			cr_assert_eq(e->id_len, len);
			for (size_t i = 0; i < sizes[s]; i++)
				cr_assert_eq(st[i], 0, "state zeroed");
			cr_assert_geq((const unsigned char *)entity_id(e), st + sizes[s], "id after state");
			/* Fill the whole state: the id must not change. */
			memset(st, 0xA5, sizes[s]);
			cr_assert_eq(memcmp(entity_id(e), id, len), 0, "id bytes preserved");
			expect_blocks += sizeof(struct entity) + pad8(sizes[s]) + len;
		}
		cr_assert_eq(t.count, 20);
		/* Every id still intact and findable after the table grew
		 * around them. */
		for (size_t len = 0; len < 20; len++) {
			char id[20];
			for (size_t i = 0; i < len; i++)
				id[i] = (char)(s * 40 + len * 7 + i * 251);
			struct entity *e = get(&t, id, len);
			cr_assert_not_null(e);
			cr_assert_eq(memcmp(entity_id(e), id, len), 0);
			const unsigned char *st = entity_state(e);
			for (size_t b = 0; b < e->state_size; b++)
				cr_assert_eq(st[b], 0xA5);
		}

		size_t bytes = entity_table_bytes(&t);
		cr_assert_eq(bytes, t.cap * sizeof(struct entity *) + expect_blocks, "bytes %zu", bytes);
		cr_assert_gt(bytes, t.count * sizeof(struct entity));
		drain(&t);
		cr_assert_eq(entity_table_bytes(&t), 0);
	}
}

Test(entity_table, bytes_track_inserts_and_removes)
{
	struct entity_table t = {0};
	struct entity *a = put(&t, "abc", 3, 100);
	size_t one = entity_table_bytes(&t);
	cr_assert_eq(one, 8 * sizeof(struct entity *) + sizeof(struct entity) + 104 + 3);
	struct entity *b = put(&t, "de", 2, 0);
	cr_assert_eq(entity_table_bytes(&t), one + sizeof(struct entity) + 2);
	entity_table_remove(&t, a);
	cr_assert_eq(entity_table_bytes(&t), 8 * sizeof(struct entity *) + sizeof(struct entity) + 2);
	entity_table_remove(&t, b);
	cr_assert_eq(entity_table_bytes(&t), 0);
}

static void count_removed(struct entity *e, void *arg)
{
	(void)e;
	(*(size_t *)arg)++;
}

Test(entity_table, clear_removes_every_entity_and_leaves_a_usable_table)
{
	struct entity_table t = {0};
	char id[16];
	for (int k = 0; k < 100; k++) {
		int len = snprintf(id, sizeof id, "e%d", k);
		cr_assert_not_null(entity_table_insert(&t, id, (size_t)len, entity_table_hash(id, (size_t)len), 8));
	}
	size_t removed = 0;
	entity_table_clear(&t, count_removed, &removed);
	cr_assert_eq(removed, 100, "on_remove once per entity");
	cr_assert_eq(t.count, 0);
	cr_assert_null(t.slots);
	cr_assert_eq(t.cap, 0);
	cr_assert_not_null(entity_table_insert(&t, "again", 5, entity_table_hash("again", 5), 0));
	entity_table_clear(&t, NULL, NULL); /* no callback: fine */
	cr_assert_eq(t.count, 0);
	entity_table_clear(&t, NULL, NULL); /* an empty table: fine */
}

/* The hints read a table's slot and nothing else of it: on an empty table,
 * on every id present or not, tagged and untagged, whatever byte count
 * they are given (AddressSanitizer would see a read past the slots), and
 * the table is the same afterwards. */
Test(entity_table, prefetch_hints_read_nothing_but_a_slot_and_change_nothing)
{
	struct entity_table t = {0};
	entity_table_prefetch_slot(&t, 7);
	entity_table_prefetch_entity(&t, 7, 256);
	char id[16];
	for (int k = 0; k < 300; k++) {
		int len = snprintf(id, sizeof id, "p%d", k);
		put(&t, id, (size_t)len, 24);
	}
	for (int pass = 0; pass < 2; pass++) {
		for (int k = 0; k < 600; k++) {
			int len = snprintf(id, sizeof id, "p%d", k);
			uint32_t hash = entity_table_hash(id, (size_t)len);
			entity_table_prefetch_slot(&t, hash);
			entity_table_prefetch_entity(&t, hash, 0);
			entity_table_prefetch_entity(&t, hash, sizeof(struct entity) + 24 + (size_t)len);
			struct entity *e = get(&t, id, (size_t)len);
			cr_assert_eq(e != NULL, k < 300, "%s", id);
		}
		check_shape(&t);
		entity_table_untag(&t);
	}
	cr_assert_eq(t.count, 300);
	entity_table_clear(&t, NULL, NULL);
}
