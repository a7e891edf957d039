/*
 * shardnode_msg.h — the head every message between shardnode nodes starts
 * with: {'$shardnode', Kind, ...}.
 *
 * Members, regions, coordinators and remembered-entity replicas talk in
 * tuples tagged '$shardnode' whose second element names the message
 * (docs/protocol.md lists them). The tag keeps them apart from anything a
 * user sends to the same registered names; the kind says what follows.
 * Each layer encodes and decodes its own messages' bodies; this is the one
 * place the head is written and recognised, every '$shardnode…' atom is
 * spelled (SN_ATOM_*), and a region's message is classified
 * (shardnode_msg_classify: one look at its head decides which part of the
 * region it is for).
 */
#ifndef SN_SHARDNODE_MSG_H
#define SN_SHARDNODE_MSG_H

#include <stdbool.h>
#include <stddef.h>

#include <ei.h>

#define SHARDNODE_MSG_TAG "$shardnode"

/* Every other atom of shardnode's own messages, here so that no file
 * spells one of its own (docs/protocol.md says what each carries):
 *   a client's calls in one message, their tags, and the replies */
#define SN_ATOM_CALLS "$shardnode_calls"
#define SN_ATOM_BATCHED "$shardnode_batched"
#define SN_ATOM_REPLIES "$shardnode_replies"
/*   a look at an entity (answered with its state), and the region's own
 *   message that starts an entity's process on its host */
#define SN_ATOM_STATE "$shardnode_state"
#define SN_ATOM_WAKE "$shardnode_wake"
/*   between a C node and the host of its types written in Erlang: to the
 *   host (and its dispatcher's answers), to an entity's process, and the
 *   process's completions, crashes and ends */
#define SN_ATOM_HOST "$shardnode_host"
#define SN_ATOM_ENTITY "$shardnode_entity"
#define SN_ATOM_STOP "$shardnode_stop"
#define SN_ATOM_DONE "$shardnode_done"
#define SN_ATOM_CRASHED "$shardnode_crashed"
#define SN_ATOM_STOPPED "$shardnode_stopped"
/*   the host's messages for one region, several in one: completions,
 *   crashes, ends */
#define SN_ATOM_BATCH "$shardnode_batch"
/*   the prefix of the atom a member's protocol version is announced in */
#define SN_ATOM_PROTOCOL_PREFIX "$shardnode_protocol_"

/* What a message to a region is, read from its head once: a tuple's arity
 * and its first element. */
enum shardnode_msg_class {
	SN_CLASS_PAIR,      /* {EntityId, Msg}: a 2-tuple under none of the tags below */
	SN_CLASS_GEN_CALL,  /* {'$gen_call', From, Request} */
	SN_CLASS_GEN_CAST,  /* {'$gen_cast', Request} */
	SN_CLASS_SYSTEM,    /* {system, From, Request}: sys's messages */
	SN_CLASS_CALLS,     /* {'$shardnode_calls', Client, Requests} */
	SN_CLASS_MEMBER,    /* {'$shardnode', Kind, ...}: from another member */
	SN_CLASS_FROM_HOST, /* a host's or an entity process's message (SN_ATOM_HOST, _DONE, _CRASHED, _STOPPED, _BATCH) */
	SN_CLASS_OTHER,     /* anything else: no tuple, or a tuple of another arity under no tag */
};

/* Classifies the validated term at buf[0..) by its head alone: nothing
 * past the first element is read. */
enum shardnode_msg_class shardnode_msg_classify(const char *buf);

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
