/*
 * entity_kv.h — the built-in kv type, listed by entity_builtin.c.
 */
#ifndef SN_ENTITY_KV_H
#define SN_ENTITY_KV_H

#include "entity/entity.h"

/* The kv type: put, get, delete and keys on a small map of terms; its
 * state travels as the map #{K => V} (API v2). */
extern const struct entity_type entity_kv_type;

#endif
