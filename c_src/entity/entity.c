/* entity.c — the helpers entity.h promises every entity type: the node's
 * built-in types and plugins alike (the node exports them to plugins). */
#include "entity/entity.h"

#include "etf/term.h"

int entity_reply_unknown(ei_x_buff *reply, const char *msg, size_t msg_len)
{
	return term_x_error_tagged_raw(reply, "unknown_message", msg, msg_len);
}
