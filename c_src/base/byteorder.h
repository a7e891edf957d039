/*
 * byteorder.h — big-endian (network order) integers in byte buffers.
 *
 * The distribution protocol, epmd, the external term format and the
 * remembered-entity log all store integers big-endian at any alignment.
 * These helpers read and write them byte by byte, so they never make an
 * unaligned access and compile to a load and a byte swap.
 *
 * Contract, for all of them: p points at enough bytes (2, 4 or 8), which the
 * caller has bounds-checked. The writers return p advanced past what they
 * wrote, so a sequence of fields reads as a sequence of calls.
 */
#ifndef SN_BYTEORDER_H
#define SN_BYTEORDER_H

#include <stdint.h>

static inline uint16_t be16_read(const void *p)
{
	const unsigned char *b = p;
	return (uint16_t)(b[0] << 8 | b[1]);
}

static inline uint32_t be32_read(const void *p)
{
	const unsigned char *b = p;
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static inline uint64_t be64_read(const void *p)
{
	const unsigned char *b = p;
	return (uint64_t)be32_read(b) << 32 | be32_read(b + 4);
}

static inline void *be16_write(void *p, uint16_t v)
{
	unsigned char *b = p;
	b[0] = (unsigned char)(v >> 8);
	b[1] = (unsigned char)v;
	return b + 2;
}

static inline void *be32_write(void *p, uint32_t v)
{
	unsigned char *b = p;
	b[0] = (unsigned char)(v >> 24);
	b[1] = (unsigned char)(v >> 16);
	b[2] = (unsigned char)(v >> 8);
	b[3] = (unsigned char)v;
	return b + 4;
}

static inline void *be64_write(void *p, uint64_t v)
{
	return be32_write(be32_write(p, (uint32_t)(v >> 32)), (uint32_t)v);
}

#endif
