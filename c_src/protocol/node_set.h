/*
 * node_set.h — a small set of node names, in insertion order.
 *
 * The members a coordinator treats as owners or downed, the nodes a region
 * must not route to, the members a replica has synced: sets of at most a
 * few hundred names, read far more often than changed. A linear array of
 * NODE_NAME_BUF-byte entries is the simplest thing that is fast enough, and
 * it has one owner and no internal pointers, so a set can be replaced whole.
 *
 * A struct node_set is owned by its holder, initialised with
 * node_set_init() (or zeroed) and released with node_set_free().
 */
#ifndef SN_NODE_SET_H
#define SN_NODE_SET_H

#include <stdbool.h>
#include <stddef.h>

#include "protocol/node_name.h"

struct node_set {
	char (*names)[NODE_NAME_BUF]; /* owned; NULL while empty and never grown */
	size_t n;
	size_t cap;
};

/* An empty set; allocates nothing. */
void node_set_init(struct node_set *s);

/* Frees the names; the set is empty (and usable) afterwards. */
void node_set_free(struct node_set *s);

/* Removes every name, keeping the memory for reuse. */
static inline void node_set_clear(struct node_set *s) { s->n = 0; }

/* Number of names. */
static inline size_t node_set_count(const struct node_set *s) { return s->n; }

/* The k-th name (k < node_set_count), in insertion order. Valid until the set
 * next changes. */
static inline const char *node_set_at(const struct node_set *s, size_t k) { return s->names[k]; }

/* True if `name` is in the set. */
bool node_set_contains(const struct node_set *s, const char *name);

/* Adds `name` (NUL-terminated) if absent. Returns 1 if added, 0 if it was
 * there already, -ENAMETOOLONG if it does not fit NODE_NAME_BUF, -ENOMEM.
 * The set is unchanged on error. */
int node_set_add(struct node_set *s, const char *name);

/* Removes `name`. Returns true if it was there. The order of the others is
 * kept. */
bool node_set_remove(struct node_set *s, const char *name);

/* Replaces the contents with names[0..n), duplicates dropped. Returns 0,
 * -ENAMETOOLONG (a name too long) or -ENOMEM; on error the set keeps its
 * old contents. */
int node_set_assign(struct node_set *s, const char *const *names, size_t n);

#endif
