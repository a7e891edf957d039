/*
 * node_limits.h — limits that more than one layer must agree on.
 *
 * A limit that one layer enforces and another assumes must have one name,
 * or the two drift apart (the configuration once allowed 64 types while
 * membership gossiped 16). Limits that concern one layer only stay there
 * (a node name's length is protocol/node_name.h's).
 */
#ifndef SN_NODE_LIMITS_H
#define SN_NODE_LIMITS_H

/* Entity types one node hosts. The configuration refuses more (`types`,
 * --types); membership gossips each member's types in full; every hosted
 * type has a region and a coordinator. */
#define NODE_TYPES_MAX 16

/* Bytes of a type's name plus its NUL. A type name is an atom of
 * [a-z][a-z0-9_]* (docs/contract.md), so one byte per character. */
#define TYPE_NAME_BUF 256

/* Members a cluster may have that a node answers about: the members
 * hosting a type, as sharding asks the cluster layer (members_hosting
 * callbacks), are at most this many. */
#define CLUSTER_MEMBERS_MAX 256

#endif
