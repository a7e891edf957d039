/*
 * member_protocol.h — the version of the conversation between members, so
 * that two consecutive releases run side by side in one cluster during a
 * rolling upgrade (docs/contract.md "Rolling upgrades").
 *
 * Each member states the protocol it speaks in its join and in every
 * gossiped entry of it. A member that states none runs a release from
 * before the version was stated (v0.1.0): it speaks protocol 1. A new
 * message kind or field between members is sent to a member only if its
 * protocol knows it (membership_protocol_of), and a feature every member
 * hosting a type must take part in (a new message of the hand-off,
 * replication or hosting protocols) is used only once every such member
 * has it (membership_lowest_protocol).
 *
 * On the wire the version rides as one more atom at the end of the
 * member's type list, '$shardnode_protocol_N': the list of atoms is what
 * every earlier release reads without complaint and gossips on unchanged
 * (it is no type anyone hosts: a type's name starts with a lowercase
 * letter), so the statement reaches new members even through old ones.
 *
 * The versions, each with what it added:
 *   1  v0.1.0: states nothing
 *   2  v0.2.0: states its version; regions state the epoch of each shard
 *      they claim (`hosting` with epochs, to a coordinator of 2 or later;
 *      `shard_home` with the epoch, to a region whose report had them);
 *      the tick's heartbeat to a member of 2 or later carries digests of
 *      the member list and of the reachability table instead of the
 *      whole list and table, each answered whole when the receiver's
 *      differs; a region's `replicas_held` to a coordinator
 *      of 2 or later names the home of the set of each filling or absent
 *      copy (replica_msg.h); a heartbeat_ack to a member of 2 or later
 *      carries what is left of the acker's lease, {SentAt, LeaseLeftMs},
 *      and once every member speaks 2, a cluster of more than
 *      `watchers` + 1 voting members watches on a ring (watch_ring.h);
 *      a member silent to another for half of failure_timeout_ms is
 *      asked about (probe, probe_answer: membership_probe.c) of members
 *      of 2 or later
 */
#ifndef SN_MEMBER_PROTOCOL_H
#define SN_MEMBER_PROTOCOL_H

#include <stdbool.h>
#include <stdint.h>

#include "etf/shardnode_msg.h"

/* The protocol this build speaks, and as text (for labels). */
#define MEMBER_PROTOCOL 2
#define MEMBER_PROTOCOL_TEXT "2"
/* What a member that states none speaks. */
#define MEMBER_PROTOCOL_OLDEST 1
/* The first protocol whose members take a digest for the tick's gossip. */
#define MEMBER_PROTOCOL_DIGESTS 2
/* The first protocol whose members watch on a ring and pass leases on in
 * their acks (membership_internal.h, membership_plan_watching). */
#define MEMBER_PROTOCOL_WATCH_RING 2
/* The first protocol whose members answer indirect probes. */
#define MEMBER_PROTOCOL_PROBES 2

/* The marker's prefix; the decimal version follows. */
#define MEMBER_PROTOCOL_MARKER SN_ATOM_PROTOCOL_PREFIX

/* Whether `atom` is a protocol marker; if so *version gets its number
 * (a marker with a number that does not fit, or none, is the oldest).
 * Pure. */
bool member_protocol_parse(const char *atom, uint32_t *version);

#endif
