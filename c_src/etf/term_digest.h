/*
 * term_digest.h — an order-free digest of a collection of terms: the XOR of
 * each element's FNV-1a over its encoding. Two members compare such a
 * digest of their member list, or of their reachability table, instead of
 * sending the collection itself; the elements' order, which differs
 * between members, does not count. Not for input an attacker picks to
 * collide (fnv1a.h).
 */
#ifndef SN_TERM_DIGEST_H
#define SN_TERM_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include <ei.h>

/* Appends element k of the caller's collection to x. Returns 0 or -ENOMEM. */
typedef int (*term_digest_encode_fn)(const void *collection, size_t k, ei_x_buff *x);

/* The digest of elements 0..n-1 of `collection`, each encoded by `encode`
 * into a scratch buffer: 0 for none, or when memory runs out (which no
 * digest of a non-empty collection is, so a peer takes it for "may
 * differ"); never 0 for a non-empty collection otherwise. */
uint64_t term_digest(const void *collection, size_t n, term_digest_encode_fn encode);

/* The parts of a digest, for a caller that keeps each element's part and
 * computes it again only when the element changed: element k's part is
 * written to *part (0 or -ENOMEM; x is scratch the caller owns and keeps
 * between calls), and the XOR of all n parts becomes the digest through
 * term_digest_of_parts — the same value term_digest gives. */
int term_digest_part(const void *collection, size_t k, term_digest_encode_fn encode, ei_x_buff *x,
		     uint64_t *part);
uint64_t term_digest_of_parts(uint64_t xor_of_parts, size_t n);

/* The digest term_digest gives of a collection whose elements came
 * encoded in a list: `buf` at `idx` is that list (validated, no version
 * byte), each element encoded as the sender's `encode` wrote it — a
 * member's gossiped list compared with its own. 0 when it is no list or
 * an empty one. Only reads. */
uint64_t term_digest_of_list(const char *buf, size_t idx);

#endif
