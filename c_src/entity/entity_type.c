/* entity_type.c — see entity_type.h. */
#include "entity/entity_type.h"

#include <ctype.h>
#include <string.h>

static bool valid_name(const char *s)
{
	if (s == NULL || !islower((unsigned char)s[0]) || strlen(s) > 255)
		return false;
	for (; *s; s++)
		if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

const char *entity_type_invalid(const struct entity_type *t)
{
	if (t == NULL || t->api_version < ENTITY_API_VERSION_1 || t->api_version > ENTITY_API_VERSION)
		return "entity API version mismatch";
	if (!valid_name(t->name) || t->handle == NULL)
		return "invalid name or no handle callback";
	if (t->api_version >= 2 && (t->encode_state == NULL) != (t->decode_state == NULL))
		return "encode_state without decode_state, or the other way round";
	return NULL;
}
