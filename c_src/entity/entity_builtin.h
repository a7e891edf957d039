/*
 * entity_builtin.h — the entity types compiled into the node: counter, kv,
 * echo (docs/contract.md, "Entities (one node)").
 */
#ifndef SN_ENTITY_BUILTIN_H
#define SN_ENTITY_BUILTIN_H

#include <stdbool.h>

#include "entity/entity.h"

/* The built-in types, NULL-terminated. Static storage; never freed. */
const struct entity_type *const *entity_builtin_types(void);

#endif
