/* member_protocol.c — see member_protocol.h. */
#include "cluster/member_protocol.h"

#include <string.h>

bool member_protocol_parse(const char *atom, uint32_t *version)
{
	size_t prefix = sizeof MEMBER_PROTOCOL_MARKER - 1;
	if (strncmp(atom, MEMBER_PROTOCOL_MARKER, prefix) != 0)
		return false;
	uint64_t v = 0;
	const char *p = atom + prefix;
	for (; *p >= '0' && *p <= '9' && v <= UINT32_MAX; p++)
		v = v * 10 + (uint64_t)(*p - '0');
	*version = *p == '\0' && p != atom + prefix && v <= UINT32_MAX && v >= MEMBER_PROTOCOL_OLDEST
			   ? (uint32_t)v
			   : MEMBER_PROTOCOL_OLDEST;
	return true;
}
