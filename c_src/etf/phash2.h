/*
 * phash2.h — erlang:phash2/1,2 computed in C from the external term format.
 *
 * Entities are routed with ShardId = erlang:phash2(EntityId, NumberOfShards),
 * and the node must reach the same shard as every BEAM in the cluster would.
 * So the hash here is the BEAM's own portable term hash (the one behind
 * phash2, stable across OTP releases and machine architectures), computed bit
 * for bit from the encoded term as it arrives from the wire, without building
 * the term in memory first.
 *
 * What the BEAM hashes is the term's value, not its encoding: 5 hashes the
 * same whether it came as SMALL_INTEGER_EXT, INTEGER_EXT or a (non-canonical)
 * SMALL_BIG_EXT; an atom hashes the same as ATOM_EXT (Latin-1) or as
 * ATOM_UTF8_EXT; a list hashes the same as STRING_EXT or as LIST_EXT; -0.0
 * hashes as 0.0 (as OTP 25 and 26 do); map hashes do not depend on key order.
 *
 * Input: buf[0..len) holds exactly one term, WITHOUT the version byte 131,
 * normally already checked by term_validate(). Bounds are still checked here:
 * nothing outside buf[0..len) is read. Nesting depth costs heap, not stack.
 */
#ifndef SN_PHASH2_H
#define SN_PHASH2_H

#include <stddef.h>
#include <stdint.h>

/* Hashes the term at buf[0..len) exactly as erlang:phash2/1 does (a value in
 * 0 .. 2^27-1). Returns 0 and sets *out, or
 *   -EINVAL  the term contains a pid, port, reference or fun (not hashed here:
 *            EntityIds may not be these),
 *   -EPROTO  the bytes are not one well-formed term filling buf[0..len),
 *   -ENOMEM  no memory for the traversal stack of a very deep term. */
int phash2_term(const char *buf, size_t len, uint32_t *out);

/* erlang:phash2(Term, Range), a value in 0 .. range-1, for 1 <= range <= 2^32.
 * Same errors as phash2_term, and -EINVAL for a range outside that interval. */
int phash2_range(const char *buf, size_t len, uint64_t range, uint32_t *out);

/* The full 32-bit hash both functions above reduce (erlang:phash2(T, 1 bsl 32)). */
int phash2_full(const char *buf, size_t len, uint32_t *out);

#endif
