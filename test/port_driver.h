/*
 * port_driver.h — what the suites' port programs (test/NAME_driver.c, run by
 * c_driver.erl with {packet, 4}) share: reading a request's bytes from
 * stdin, and big-endian words for the replies (base/byteorder.h).
 * Static inline: each driver is one file.
 */
#ifndef SN_PORT_DRIVER_H
#define SN_PORT_DRIVER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/byteorder.h"

/* Reads exactly n bytes from stdin. Returns 0, or -1 when the port was
 * closed (end of file) or reading failed. */
static inline int read_exact(void *dst, size_t n)
{
	return fread(dst, 1, n, stdin) == n ? 0 : -1;
}

/* Writes v big-endian at p. */
static inline void put32(unsigned char *p, uint32_t v)
{
	be32_write(p, v);
}

#endif
