/*
 * entity_id_driver.c — port program for entity_id_SUITE: canonicalises
 * entity ids with c_src/etf/entity_id.c so the suite can check the result on
 * the live BEAM.
 *
 * Protocol ({packet, 4} on both sides), one reply per request:
 *   request:  4-byte big-endian length, then term_to_binary(T) (with 131)
 *             or any hand-made external-format bytes (with 131)
 *   reply:    4-byte big-endian length, then a status byte and, for status 0,
 *             the canonical bytes (no version byte):
 *               0 ok, 1 -EINVAL (pid, port, reference or fun),
 *               2 -EPROTO (malformed, or refused by term_validate), 3 other
 *
 * As on the node, the term passes term_validate() before it is
 * canonicalised. Built by the suite itself; not part of the node.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ei.h>

#include "etf/entity_id.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "port_driver.h"

static int answer(const char *buf, size_t len, ei_x_buff *out)
{
	size_t idx = 0;
	if (len < 1 || (unsigned char)buf[0] != TERM_VERSION_MAGIC)
		return -EPROTO;
	buf++;
	len--;
	if (term_validate(buf, len, &idx) || idx != len)
		return -EPROTO;
	return entity_id_canonical(buf, len, out);
}

int main(void)
{
	for (;;) {
		unsigned char hdr[5];
		if (read_exact(hdr, 4))
			return 0; /* the port was closed */
		size_t len = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
		char *buf = malloc(len ? len : 1);
		if (!buf || read_exact(buf, len))
			return 1;
		ei_x_buff out;
		if (ei_x_new(&out))
			return 1;
		int rc = answer(buf, len, &out);
		free(buf);
		unsigned char status = rc == 0 ? 0 : rc == -EINVAL ? 1 : rc == -EPROTO ? 2 : 3;
		size_t n = rc == 0 ? (size_t)out.index : 0;
		put32(hdr, (uint32_t)(1 + n));
		hdr[4] = status;
		if (fwrite(hdr, 1, 5, stdout) != 5 || (n && fwrite(out.buff, 1, n, stdout) != n) ||
		    fflush(stdout))
			return 1;
		ei_x_free(&out);
	}
}
