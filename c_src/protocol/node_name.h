/*
 * node_name.h — what a node name is, and the one limit on its length.
 *
 * A node name is "alive@host". Every buffer that holds one — a connection's
 * peer, a member, a set of nodes, a pid's node as we copy it — is
 * NODE_NAME_BUF bytes, and every name that arrives from outside (a
 * handshake, a gossip, a configuration) is checked with node_name_valid()
 * before it is copied into one, so a name fits its buffer by construction.
 */
#ifndef SN_NODE_NAME_H
#define SN_NODE_NAME_H

#include <stdbool.h>
#include <stddef.h>

/* Bytes of the longest node name accepted, plus its NUL. */
#define NODE_NAME_BUF 256

/* True if name[0..len) is "alive@host" with both parts non-empty, no second
 * '@', no control bytes (below 0x20, or 0x7f) and len < NODE_NAME_BUF. */
bool node_name_valid(const char *name, size_t len);

/* Decodes the (validated) atom at buf[*idx] as a node name into out
 * (NODE_NAME_BUF bytes, NUL-terminated) and advances *idx. Returns 0, or
 * -EPROTO (*idx unchanged, out unspecified) if it is not an atom or not a
 * valid node name — one too long for out among them: nothing is written
 * past out. Every node name read from a peer's message goes through
 * here. */
int node_name_decode(const char *buf, size_t *idx, char *out);

#endif
