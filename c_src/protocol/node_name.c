/* node_name.c — see node_name.h. */
#include "protocol/node_name.h"

#include <errno.h>
#include <string.h>

#include "etf/term.h"

bool node_name_valid(const char *name, size_t len)
{
	if (len == 0 || len >= NODE_NAME_BUF)
		return false;
	const char *at = memchr(name, '@', len);
	if (at == NULL || at == name || at == name + len - 1)
		return false;
	if (memchr(at + 1, '@', len - (size_t)(at + 1 - name)) != NULL)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];
		if (c < 0x20 || c == 0x7f)
			return false;
	}
	return true;
}

int node_name_decode(const char *buf, size_t *idx, char *out)
{
	size_t i = *idx;
	if (term_get_atom_sized(buf, &i, out, NODE_NAME_BUF) || !node_name_valid(out, strlen(out)))
		return -EPROTO;
	*idx = i;
	return 0;
}
