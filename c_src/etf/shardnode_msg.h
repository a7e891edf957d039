/*
 * shardnode_msg.h — the head every message between shardnode nodes starts
 * with: {'$shardnode', Kind, ...}.
 *
 * Members, regions, coordinators and remembered-entity replicas talk in
 * tuples tagged '$shardnode' whose second element names the message
 * (docs/protocol.md lists them). The tag keeps them apart from anything a
 * user sends to the same registered names; the kind says what follows.
 * Each layer encodes and decodes its own messages' bodies; this is the one
 * place the head is written and recognised.
 */
#ifndef SN_SHARDNODE_MSG_H
#define SN_SHARDNODE_MSG_H

#include <stdbool.h>
#include <stddef.h>

#include <ei.h>

#define SHARDNODE_MSG_TAG "$shardnode"

/* Appends the head of a message of `arity` elements (tag and kind
 * included, so arity >= 2): the tuple header, '$shardnode' and the atom
 * `kind`. x is an initialised ei_x_buff, positioned where the term starts
 * (after the version byte, if it carries one). Returns 0 or -ENOMEM. */
int shardnode_msg_begin(ei_x_buff *x, int arity, const char *kind);

/* Looks at the validated term at buf[0..): if it is a tuple whose first
 * element is '$shardnode', returns true with *arity the tuple's arity and
 * *idx at its second element (the kind, if arity >= 2). Otherwise false,
 * with *idx and *arity unspecified. */
bool shardnode_msg_head(const char *buf, size_t *idx, long *arity);

#endif
