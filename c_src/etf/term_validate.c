/* term_validate.c — see term_validate.h. */
#include "etf/term_validate.h"

#include <stdbool.h>

#include "etf/term.h"
#include "etf/term_map_keys.h"

int term_validate(const char *buf, size_t len, size_t *idx)
{
	size_t start = *idx, end = start;
	bool maps = false;
	int rc = term_check_structure(buf, len, &end, &maps);
	if (rc)
		return rc;
	if (maps) {
		rc = term_map_keys_check(buf + start, end - start);
		if (rc)
			return rc;
	}
	*idx = end;
	return 0;
}
