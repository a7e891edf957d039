/*
 * entity_type.h — what the node asks of an entity type, whatever API
 * version it was written for.
 *
 * entity.h is the plugins' header; this one is the node's. A v1 type's
 * struct ends at `stop`, so its v2 fields must never be read: every
 * question about them goes through here.
 */
#ifndef SN_ENTITY_TYPE_H
#define SN_ENTITY_TYPE_H

#include <stdbool.h>

#include "entity/entity.h"

/* NULL if `t` is a type the node can host, else why not (a short phrase
 * for a log line): an unknown api_version, a name that is no
 * [a-z][a-z0-9_]* atom of at most 255 characters, no handle, or (v2) only
 * one of encode_state and decode_state. */
const char *entity_type_invalid(const struct entity_type *t);

/* True if the type's state travels with its shard and survives in a
 * store: API v2 with encode_state and decode_state. */
static inline bool entity_type_keeps_state(const struct entity_type *t)
{
	return t->api_version >= 2 && t->encode_state != NULL && t->decode_state != NULL;
}

/* The message changed the state (only a v2 type says so). */
static inline bool entity_after_changed(const struct entity_type *t, enum entity_after a)
{
	return t->api_version >= 2 && (a & ENTITY_CHANGED) != 0;
}

/* The type asked to stop the entity after this message. */
static inline bool entity_after_stops(enum entity_after a) { return (a & ENTITY_STOP) != 0; }

#endif
