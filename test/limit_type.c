/*
 * limit_type.c — an entity type whose name is given at compile time
 * (-DTYPE_NAME='"t01"'), so shardnode_limits_SUITE can load as many
 * distinct plugin types as a node may host. It answers every message with
 * {TypeName, Msg}. It is an API v1 type, as plugins written before v2 are:
 * the suite also shows that such plugins still load and serve.
 */
#include "entity.h"

#ifndef TYPE_NAME
#error "build with -DTYPE_NAME='\"name\"'"
#endif

static enum entity_after handle(void *state, const char *msg, size_t len, ei_x_buff *reply)
{
	(void)state;
	ei_x_encode_tuple_header(reply, 2);
	ei_x_encode_atom(reply, TYPE_NAME);
	ei_x_append_buf(reply, msg, (int)len);
	return ENTITY_CONTINUE;
}

static const struct entity_type type = {
	.api_version = ENTITY_API_VERSION_1, /* a v1 plugin: no state callbacks */
	.name = TYPE_NAME,
	.state_size = 0,
	.handle = handle,
};

const struct entity_type *shardnode_entity_type(void);
const struct entity_type *shardnode_entity_type(void) { return &type; }
