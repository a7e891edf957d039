/*
 * phash2_driver.c — port program for phash2_SUITE: hashes terms with the C
 * phash2 so the suite can compare against erlang:phash2 on the live BEAM.
 *
 * Protocol ({packet, 4} on both sides), one reply per request:
 *   request:  4-byte big-endian length, then term_to_binary(T) (with 131)
 *   reply:    4-byte big-endian length 12, then three 4-byte big-endian words:
 *             phash2(T), phash2(T, 100), phash2(T, 1 bsl 32)
 *             or, if the C side refused the term: 0xFFFFFFFF, -errno, 0
 *
 * Built by the suite itself; not part of the node.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "etf/phash2.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "port_driver.h"

static int answer(const char *buf, size_t len, uint32_t words[3])
{
	size_t idx = 0;
	int rc;
	if (len < 1 || (unsigned char)buf[0] != TERM_VERSION_MAGIC)
		return -EPROTO;
	buf++;
	len--;
	if (term_validate(buf, len, &idx) || idx != len)
		return -EPROTO;
	if ((rc = phash2_term(buf, len, &words[0])) ||
	    (rc = phash2_range(buf, len, 100, &words[1])) ||
	    (rc = phash2_range(buf, len, UINT64_C(1) << 32, &words[2])))
		return rc;
	return 0;
}

int main(void)
{
	for (;;) {
		unsigned char hdr[4], out[16];
		uint32_t words[3] = {0, 0, 0};
		if (read_exact(hdr, 4))
			return 0; /* the port was closed */
		size_t len = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
		char *buf = malloc(len ? len : 1);
		if (!buf || read_exact(buf, len))
			return 1;
		int rc = answer(buf, len, words);
		free(buf);
		if (rc) {
			words[0] = UINT32_MAX;
			words[1] = (uint32_t)-rc;
			words[2] = 0;
		}
		put32(out, 12);
		put32(out + 4, words[0]);
		put32(out + 8, words[1]);
		put32(out + 12, words[2]);
		if (fwrite(out, 1, sizeof out, stdout) != sizeof out || fflush(stdout))
			return 1;
	}
}
