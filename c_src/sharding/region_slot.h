/*
 * region_slot.h — the states a shard goes through in one region, and the
 * transitions between them. Pure: no I/O, no clock (the caller passes the
 * time), no allocation. The region keeps one slot per shard and does what a
 * step tells it (ask the coordinator, send on buffered messages, stop the
 * shard); the messages themselves and the shard's entities are its own.
 *
 *   UNKNOWN      nobody asked where the shard lives, or its home was lost
 *                (the node went down, or was downed)
 *   ASKED        the coordinator was asked; messages wait in the buffer
 *   LOCAL        hosted here; messages go to its entities
 *   HANDING_OFF  hosted here, and being handed off: messages still go to its
 *                entities until every region has acknowledged (or the
 *                deadline passed) and the buffer is flushed
 *   SENDING_STATE handed off, its entities frozen: their states stream to
 *                the new home (region_handoff_state.c) while messages wait;
 *                once the new home has acknowledged the last chunk, the
 *                shard stops
 *   REMOTE       hosted by another region; messages are forwarded there
 *                while a connection to its node is up, and wait in the
 *                buffer while one is being set up
 *   MOVING       being moved between regions (another region hands it off,
 *                or this one did): messages wait for the new home
 *
 *   UNKNOWN      -need_home / registered with remembered entities-> ASKED
 *   ASKED        -registered / tick after retry_ms-> ASKED (asks again)
 *   any          -home_here-> LOCAL     -home_there-> REMOTE (a hosted
 *                shard stops: another region's claim is newer)
 *   REMOTE       -home_lost-> UNKNOWN, or ASKED (asks) when messages
 *                wait in the buffer
 *   REMOTE       -home_unreachable-> ASKED (asks after retry_ms)
 *   not hosted, not SENDING_STATE -begin_handoff-> MOVING
 *   LOCAL, HANDING_OFF -handoff-> HANDING_OFF (with every ack in: hand off)
 *   LOCAL, HANDING_OFF -handoff_ack-> counted (the last one: hand off)
 *   not hosted, not SENDING_STATE -handoff-> unchanged: shard_stopped,
 *                nothing to stop
 *   HANDING_OFF  -handed_off / tick past its deadline-> MOVING (stop it),
 *                or, when the event says the shard carries state,
 *                SENDING_STATE (send it)
 *   SENDING_STATE -state_sent / tick past its deadline-> MOVING (stop it)
 *   MOVING       -state_chunk-> MOVING (a chunk of the shard's state came:
 *                the move is alive, its clock starts again)
 *   MOVING       -tick after handoff_timeout_ms-> ASKED (the move was
 *                abandoned: ask where it lives)
 *   LOCAL, HANDING_OFF -fenced-> ASKED (stop it, tell the coordinator
 *                shard_stopped, ask where it lives)
 *
 * Anything else is refused: the slot is left as it was, nothing to do.
 * See docs/contract.md ("A cluster") for what handoff promises.
 */
#ifndef SN_REGION_SLOT_H
#define SN_REGION_SLOT_H

#include <stdbool.h>
#include <stdint.h>

enum region_slot_state {
	SLOT_UNKNOWN, /* zero: a fresh slot */
	SLOT_ASKED,
	SLOT_LOCAL,
	SLOT_HANDING_OFF,
	SLOT_REMOTE,
	SLOT_MOVING,
	SLOT_SENDING_STATE,
};

/* Zero-initialised is a valid slot: UNKNOWN, nothing held. */
struct region_slot {
	enum region_slot_state state;
	/* What holds the shard's messages back besides its state
	 * (region_slot_hold, below): */
	uint32_t buffered;       /* messages waiting in its buffer, in order */
	uint32_t claims_waiting; /* hosted, shared store: claims not yet committed */
	uint32_t loads;          /* hosted, with a store: entity loads under way */
	uint64_t load_after;     /* hosted: a load waits for the store's commits
				  * up to this write (0: none) */
	uint32_t in_flight;      /* hosted, a type run on a host: entities with
				  * a message at their process */
	uint64_t since;       /* ASKED: when asked; MOVING: when the move began
			       * (or its last state chunk came) */
	uint64_t deadline;    /* HANDING_OFF: when to stop waiting for acks;
			       * SENDING_STATE: for the new home's last ack */
	uint32_t acks;        /* LOCAL, HANDING_OFF: handoff acks received */
	uint32_t acks_needed; /* HANDING_OFF: how many the coordinator said */
};

enum region_slot_event_kind {
	/* A message had to wait for the shard's home. */
	SLOT_NEED_HOME,
	/* The coordinator acknowledged the region's registration. */
	SLOT_REGISTERED,
	/* The coordinator named this region the home; the caller has the
	 * shard (created it if it had none). */
	SLOT_HOME_HERE,
	/* The coordinator named another region the home. */
	SLOT_HOME_THERE,
	/* The home's node went down, or was downed. */
	SLOT_HOME_LOST,
	/* A message for the home could not be written to its node: no
	 * connection is up, and an attempt to open one failed (or failed a
	 * moment ago, and the node is backed off). The message waits in the
	 * buffer; the coordinator is asked again after retry_ms — sooner, it
	 * would only name the same home until that node is downed. */
	SLOT_HOME_UNREACHABLE,
	/* Another region is handing the shard off. */
	SLOT_BEGIN_HANDOFF,
	/* The coordinator orders this region to hand the shard off. */
	SLOT_HANDOFF,
	/* A region acknowledged our begin_handoff. */
	SLOT_HANDOFF_ACK,
	/* Every ack is in and nothing waits in the buffer: the shard goes. */
	SLOT_HANDED_OFF,
	/* The region's retry timer. */
	SLOT_TICK,
	/* A chunk of the shard's state came from the region handing it off. */
	SLOT_STATE_CHUNK,
	/* The new home acknowledged the last chunk of the shard's state, or
	 * will never (its node went down): the shard goes. */
	SLOT_STATE_SENT,
	/* The shared store refused the shard's writes: another member claimed
	 * it since (state_store.h, fencing). It goes, and the coordinator is
	 * asked where it lives now. */
	SLOT_FENCED,
};

struct region_slot_event {
	enum region_slot_event_kind kind;
	uint64_t now;          /* the loop's clock, ms */
	uint32_t acks_needed;  /* SLOT_HANDOFF */
	bool remembered;       /* SLOT_REGISTERED: the shard has remembered
				* entities, so it wants a home at once */
	bool carry_state;      /* SLOT_HANDED_OFF, SLOT_TICK: the shard has
				* entity states to send to its new home */
};

/* The region's settings a step reads. */
struct region_slot_timing {
	uint32_t retry_ms;           /* an unanswered request is repeated after this */
	uint32_t handoff_timeout_ms; /* a handoff gives up waiting after this */
};

/* What the region must do after a step, in this order. */
enum {
	/* Ask the coordinator for the shard's home (get_shard_home). */
	SLOT_DO_ASK = 1u << 0,
	/* The home is known: deliver or forward what waits, in order. */
	SLOT_DO_FLUSH = 1u << 1,
	/* Every ack is in: flush what waits here, then, once nothing does,
	 * step SLOT_HANDED_OFF. */
	SLOT_DO_HAND_OFF = 1u << 2,
	/* Stop the shard's entities and tell the coordinator shard_stopped. */
	SLOT_DO_STOP = 1u << 3,
	/* Tell the coordinator shard_stopped: there was nothing here to stop. */
	SLOT_DO_REPORT_STOPPED = 1u << 4,
	/* Start streaming the entities' states to the new home; step
	 * SLOT_STATE_SENT once it has acknowledged the last chunk. */
	SLOT_DO_SEND_STATE = 1u << 5,
};

/* Applies one event. Returns 0 with *todo the SLOT_DO_ bits (maybe none: an
 * ack counted, a tick with nothing due), -EPERM if the slot's state refuses
 * the event (the slot is unchanged, *todo is 0), or -EINVAL for an unknown
 * event kind (likewise). */
int region_slot_step(struct region_slot *s, const struct region_slot_timing *t, const struct region_slot_event *ev,
		     unsigned *todo);

/* Whether the shard is hosted here: LOCAL or HANDING_OFF. */
bool region_slot_hosted(const struct region_slot *s);

/* Whether a handing-off slot has every ack it waits for, so it goes as soon
 * as its buffer is flushed. */
bool region_slot_handoff_ready(const struct region_slot *s);

/* ---- what holds a shard's messages back ----
 *
 * A message for a shard goes on (delivered here, forwarded to its home)
 * only when nothing holds it; otherwise it waits at the end of the
 * shard's buffer, so the order of one sender's messages holds. Besides the
 * slot's state (ASKED, MOVING, SENDING_STATE, UNKNOWN hold everything)
 * and the region's quorum lease (region_config.may_deliver):
 *
 *   BUFFERED  earlier messages wait in the buffer: a new one goes behind
 *   CLAIMING  hosted, a shared store: the shard's claim is not committed
 *             (nothing of it is read or written before, fencing)
 *   LOADING   hosted: an entity's stored state is being loaded
 *   COMMITS   hosted: a load waits for writes queued before it to commit
 *             (one may be the entity's last change before it stopped)
 *   IN_FLIGHT handing off with every ack in, a type run on a host: its
 *             entities' processes still have messages to complete, and
 *             the shard goes once they have (new ones follow it)
 *
 * The functions below keep the counts; the region asks region_slot_hold
 * before each message and each buffered one it flushes, and flushes the
 * buffer when a function says the last hold went. */
enum region_slot_hold {
	SLOT_HOLD_NONE,
	SLOT_HOLD_BUFFERED,
	SLOT_HOLD_CLAIMING,
	SLOT_HOLD_LOADING,
	SLOT_HOLD_COMMITS,
	SLOT_HOLD_IN_FLIGHT,
};

/* What holds the hosted shard's messages back now, `written_upto` being
 * the store's commits reported so far: the first of CLAIMING, LOADING,
 * COMMITS that applies, else NONE. The buffer is not asked: a message
 * flushed from it is its head. */
enum region_slot_hold region_slot_store_hold(const struct region_slot *s, uint64_t written_upto);

/* What holds a new message for the shard back: BUFFERED when messages
 * wait, else IN_FLIGHT (region_slot_hand_off_waits), else, hosted,
 * region_slot_store_hold's answer; NONE for a slot not hosted with an
 * empty buffer (its state decides). */
enum region_slot_hold region_slot_hold(const struct region_slot *s, uint64_t written_upto);

/* A message joined the buffer / left it (delivered, forwarded, refused). */
void region_slot_buffered(struct region_slot *s);
void region_slot_unbuffered(struct region_slot *s, uint32_t n);

/* An entity of a type run on a host got a message at its process, with
 * none there before / has none there any more (completed, failed, taken
 * back). region_slot_came_back returns true when it was the last. */
void region_slot_sent_away(struct region_slot *s);
bool region_slot_came_back(struct region_slot *s);

/* Whether the hand-off of a slot with every ack in waits for messages at
 * its entities' processes (IN_FLIGHT): it goes once they complete. */
bool region_slot_hand_off_waits(const struct region_slot *s);

/* A claim of the shard was sent; one committed. region_slot_claimed
 * returns true when it was the last, so what waited may go on (the claim
 * of a shard that left, or one never sent, counts for nothing: false). */
void region_slot_claim_sent(struct region_slot *s);
bool region_slot_claimed(struct region_slot *s);

/* A load started; one was answered. region_slot_loaded returns true when
 * none is left under way, so what waited may go on. */
void region_slot_load_started(struct region_slot *s);
bool region_slot_loaded(struct region_slot *s);

/* A load must wait for the store's commits up to `seq` first. */
void region_slot_wait_for_commits(struct region_slot *s, uint64_t seq);

/* The store reports commits up to `written_upto`. True if the slot waited
 * for them and need not any more (its wait is cleared): its load may
 * start. */
bool region_slot_commits_done(struct region_slot *s, uint64_t written_upto);

/* The shard left: its loads and their waits are forgotten (their answers
 * are ignored); claims in flight still count until committed. */
void region_slot_loads_dropped(struct region_slot *s);

/* The state's name, for logs and test messages. */
const char *region_slot_state_name(enum region_slot_state state);

#endif
