/*
 * entity.h — the API for writing entity types in C.
 *
 * An entity type is a `struct entity_type`: a name, the size of the state
 * the node keeps for each live entity, and three callbacks. The node owns the
 * state memory (state_size bytes, zeroed before start) and the entity's
 * lifetime; the type owns whatever its state points to and releases it in
 * stop. All callbacks run on the node's event loop: they must not block.
 *
 * Messages and replies are Erlang terms in the external format without the
 * version byte, encoded and decoded with ei. The node handles `passivate`
 * for every type (reply `ok`, then stop); a type never sees it.
 *
 * A type can be compiled in (listed in entity_builtin.c) or built as a
 * shared object that exports
 *
 *     const struct entity_type *shardnode_entity_type(void);
 *
 * and placed in priv/ as <name>.so; a plugin is hosted when --types names it.
 * docs/entity-api.md has a worked example and the build command.
 */
#ifndef SN_ENTITY_H
#define SN_ENTITY_H

#include <stddef.h>
#include <stdint.h>

#include <ei.h>

/* The version this header describes. A type sets api_version to the
 * version it was written for: 1 (no state callbacks: the struct ends at
 * `stop`) or 2. The node reads the v2 fields only of a type that says 2, so
 * a v1 plugin built against the older, shorter struct still loads. */
#define ENTITY_API_VERSION 2
#define ENTITY_API_VERSION_1 1

/* What handle() asks of the node after its reply is sent: ENTITY_CONTINUE
 * or ENTITY_STOP, with ENTITY_CHANGED or-ed in (API v2) when the message
 * changed the state: `return ENTITY_CONTINUE | ENTITY_CHANGED;`. State a
 * message did not change is never encoded or written. */
enum entity_after {
	ENTITY_CONTINUE = 0, /* keep the entity */
	ENTITY_STOP = 1,     /* stop it now (passivate); its next message starts it afresh */
	ENTITY_CHANGED = 2,  /* v2: the message changed the state */
};

struct entity_type {
	uint32_t api_version;   /* ENTITY_API_VERSION (2), or 1 */
	const char *name;       /* the region's registered name: an atom, [a-z][a-z0-9_]* */
	size_t state_size;      /* bytes of state per live entity; may be 0 */

	/* Called before the first message of an incarnation. `id` is the
	 * entity id (canonical encoding, valid only during the call). Returns
	 * 0, or a negative errno: the message is then answered
	 * {error, {entity_start_failed, Errno}} and the entity is not created.
	 * May be NULL (nothing to do). */
	int (*start)(void *state, const char *id, size_t id_len);

	/* Handles one message: encodes exactly one reply term into `reply`
	 * (an empty ei_x_buff, no version byte) and returns an entity_after.
	 * Return the reply {error, {unknown_message, Msg}} for a message the
	 * type does not understand (entity_reply_unknown does that). */
	enum entity_after (*handle)(void *state, const char *msg, size_t msg_len, ei_x_buff *reply);

	/* Releases what the state points to. The node frees the state itself.
	 * May be NULL. */
	void (*stop)(void *state);

	/* ---- API v2: read only when api_version >= 2 ---- */

	/* Encodes the live state as one Erlang term (no version byte) into
	 * `out`, an initialised ei_x_buff to append to; binary_to_term/1 on a
	 * BEAM must read it. Returns 0, or -ENOMEM. Must not change the state.
	 * Both this and decode_state, or neither: a type without them keeps
	 * no state across moves and restarts (it starts fresh, as in v1). */
	int (*encode_state)(const void *state, ei_x_buff *out);

	/* Restores a state that encode_state wrote, here or on another node
	 * (of any shardnode version with this API). Called after start, on
	 * the zeroed state, before the incarnation's first message. `term`
	 * (no version byte, len bytes) has been validated: ei's decoders are
	 * safe on it. Returns 0; -EPROTO (or -EINVAL) when the term is not a
	 * state of this type: the entity then does not start, and the message
	 * is answered {error, {entity_start_failed, Errno}}; -ENOMEM. On
	 * error, stop is still called, so the state must stay releasable. */
	int (*decode_state)(void *state, const char *term, size_t len);
};

/* Encodes {error, {unknown_message, Msg}} into reply; for handle(). */
int entity_reply_unknown(ei_x_buff *reply, const char *msg, size_t msg_len);

/* ---- Integers of any size, as the BEAM's (entity_int.c) ----
 *
 * A BEAM integer never overflows; a C long long does at 2^63. A type that
 * counts or sums what callers send keeps a struct entity_int in its state
 * and does its arithmetic with these helpers: values that fit in 63 bits
 * live in the struct itself (8 bytes, no allocation), larger ones in
 * memory the helpers own. A zeroed struct is 0, so a state the node
 * zeroed is ready; release it in stop() with entity_int_free. Example, a
 * counter that never wraps (the built-in one, entity_builtin.c):
 *
 *     struct entity_int *v = state, n = {0};
 *     size_t i = ...;   // at N in {incr, N}
 *     if (entity_int_decode(msg, &i, &n) == 0 && i == len) {
 *         entity_int_add(v, &n);
 *         entity_int_free(&n);
 *         entity_int_encode(reply, v);
 *     }
 *
 * Every function is safe on any value the others made; none keeps a
 * pointer to its arguments. */
struct entity_int {
	uint64_t bits; /* opaque: a small value tagged in place, or the big one's memory */
};

/* Decodes the integer term at buf[*idx] (SMALL_INTEGER_EXT, INTEGER_EXT,
 * SMALL_BIG_EXT or LARGE_BIG_EXT, as validated terms hold them: messages
 * and states the node hands a type are) into *out, which the caller
 * releases with entity_int_free, and advances *idx past it. Returns 0;
 * -EPROTO when the term there is no integer (*idx and *out unchanged);
 * -ENOMEM. */
int entity_int_decode(const char *buf, size_t *idx, struct entity_int *out);

/* *acc += *x (x may be acc). Returns 0, or -ENOMEM with *acc unchanged. */
int entity_int_add(struct entity_int *acc, const struct entity_int *x);

/* *acc += x. Returns as entity_int_add. */
int entity_int_add_i64(struct entity_int *acc, int64_t x);

/* -1, 0 or 1 as *a is less than, equal to or greater than *b. */
int entity_int_compare(const struct entity_int *a, const struct entity_int *b);

/* Sets *v to x, releasing what it held. */
void entity_int_set_i64(struct entity_int *v, int64_t x);

/* Whether *v fits in an int64_t; if so, stores it in *out. */
int entity_int_get_i64(const struct entity_int *v, int64_t *out);

/* Appends *v to out as the BEAM encodes it (the shortest of the four
 * forms). Returns 0 or -ENOMEM. */
int entity_int_encode(ei_x_buff *out, const struct entity_int *v);

/* Releases what *v holds and sets it to 0. */
void entity_int_free(struct entity_int *v);

#endif
