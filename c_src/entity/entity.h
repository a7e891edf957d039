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

#define ENTITY_API_VERSION 1

/* What handle() asks of the node after its reply is sent. */
enum entity_after {
	ENTITY_CONTINUE = 0, /* keep the entity */
	ENTITY_STOP = 1,     /* stop it now (passivate); its next message starts it afresh */
};

struct entity_type {
	uint32_t api_version;   /* ENTITY_API_VERSION */
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
};

/* Encodes {error, {unknown_message, Msg}} into reply; for handle(). */
int entity_reply_unknown(ei_x_buff *reply, const char *msg, size_t msg_len);

#endif
