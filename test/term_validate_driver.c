/*
 * term_validate_driver.c — port program for term_validate_SUITE: checks
 * external terms with c_src/etf/term.c's term_validate, as binary_to_term/1
 * reads them (the first term after the version byte; bytes after it are
 * ignored, as binary_to_term/1 ignores them), and hashes the accepted ones
 * with c_src/etf/phash2.c, so the suite can compare both with the BEAM.
 *
 * Protocol ({packet, 4} on both sides), one reply per request:
 *   request:  4-byte big-endian length, then the bytes (version byte first)
 *   reply:    4-byte big-endian length 13, then a verdict byte — 0 accepted,
 *             1 refused — and three 4-byte big-endian words: phash2(T),
 *             phash2(T, 100), phash2(T, 1 bsl 32) of the accepted term, or
 *             0xFFFFFFFF, -errno, 0 if phash2 refused it (a pid, port,
 *             reference or fun) or the term was refused
 *
 * A request may instead ask whether a node could read a term back
 * (c_src/etf/term_readable.c):
 *   request:  'R', the node's creation (4 bytes, big-endian), its name's
 *             length (1 byte), its name, then the term (version byte first)
 *   reply:    as above, the verdict byte 0 readable, 1 not readable, 2 the
 *             term is refused by term_validate; the words 0
 *
 * Built by the suite itself; not part of the node.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etf/phash2.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "etf/term_readable.h"
#include "port_driver.h"

/* 0 accepted (words set, or words[0] UINT32_MAX if not hashed), 1 refused. */
static int answer(const char *buf, size_t len, uint32_t words[3])
{
	size_t end = 0;
	if (len < 1 || (unsigned char)buf[0] != TERM_VERSION_MAGIC)
		return 1;
	buf++;
	len--;
	if (term_validate(buf, len, &end))
		return 1;
	int rc;
	if ((rc = phash2_term(buf, end, &words[0])) || (rc = phash2_range(buf, end, 100, &words[1])) ||
	    (rc = phash2_range(buf, end, UINT64_C(1) << 32, &words[2]))) {
		words[0] = UINT32_MAX;
		words[1] = (uint32_t)-rc;
		words[2] = 0;
	}
	return 0;
}

/* The 'R' request: 0 readable by the node named, 1 not, 2 no valid term. */
static int readable_answer(const char *buf, size_t len)
{
	if (len < 6 || len - 6 < (unsigned char)buf[5])
		return 2;
	uint32_t creation = (uint32_t)(unsigned char)buf[1] << 24 | (uint32_t)(unsigned char)buf[2] << 16 |
			    (uint32_t)(unsigned char)buf[3] << 8 | (unsigned char)buf[4];
	size_t name_len = (unsigned char)buf[5];
	char name[256];
	memcpy(name, buf + 6, name_len);
	name[name_len] = '\0';
	const char *term = buf + 6 + name_len;
	size_t n = len - 6 - name_len, end = 0;
	if (n < 1 || (unsigned char)term[0] != TERM_VERSION_MAGIC || term_validate(term + 1, n - 1, &end))
		return 2;
	return term_readable_by(term + 1, end, name, creation) ? 0 : 1;
}

int main(void)
{
	for (;;) {
		unsigned char hdr[4], out[17];
		uint32_t words[3] = {UINT32_MAX, 0, 0};
		if (read_exact(hdr, 4))
			return 0; /* the port was closed */
		size_t len = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
		char *buf = malloc(len ? len : 1);
		if (!buf || read_exact(buf, len))
			return 1;
		int verdict = len > 0 && buf[0] == 'R' ? readable_answer(buf, len) : answer(buf, len, words);
		if (len > 0 && buf[0] == 'R')
			words[0] = 0;
		free(buf);
		put32(out, 13);
		out[4] = (unsigned char)verdict;
		put32(out + 5, words[0]);
		put32(out + 9, words[1]);
		put32(out + 13, words[2]);
		if (fwrite(out, 1, sizeof out, stdout) != sizeof out || fflush(stdout))
			return 1;
	}
}
