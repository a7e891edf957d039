/*
 * epmd.h — our client of the Erlang Port Mapper Daemon.
 *
 * Registration (ALIVE2) happens once at start-up, before the event loop
 * serves anyone, and may wait (bounded) for epmd; the registration socket
 * stays open for the node's life, and closing it unregisters the name.
 * Look-ups of peers (PORT_PLEASE2) run on the event loop and never block.
 *
 * The port is 4369, or ERL_EPMD_PORT from the environment, as for erl.
 */
#ifndef SN_EPMD_H
#define SN_EPMD_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "base/bytebuf.h"
#include "base/evloop.h"
#include "base/log.h"

/* epmd's port for this process: ERL_EPMD_PORT or 4369. */
uint16_t epmd_port(void);

/* ---- pure message codecs (unit-tested) ---- */

/* Appends ALIVE2_REQ for a hidden node listening on `port`. Returns 0,
 * -EINVAL (alive name empty or longer than 255), or -ENOMEM. */
int epmd_encode_alive2_req(struct bytebuf *out, uint16_t port, const char *alive);
/* Parses ALIVE2_X_RESP (118) or ALIVE2_RESP (121). Returns 1 with *result and
 * *creation set, 0 if more bytes are needed, -EPROTO if not such a reply. */
int epmd_decode_alive2_resp(const uint8_t *buf, size_t len, uint8_t *result, uint32_t *creation);
/* Appends PORT_PLEASE2_REQ. Returns 0, -EINVAL or -ENOMEM. */
int epmd_encode_port_please2_req(struct bytebuf *out, const char *alive);
/* Parses PORT2_RESP (119). Returns 1 with *result (0 = found) and, when
 * found, *port and *high_version set; 0 if more bytes are needed; -EPROTO. */
int epmd_decode_port2_resp(const uint8_t *buf, size_t len, uint8_t *result, uint16_t *port,
			   uint16_t *high_version);

/* ---- registration ---- */

/* Registers `alive` (the part of the node name before '@') for `port` with
 * the local epmd, starting `epmd -daemon` first if none answers. Waits at most
 * timeout_ms in all. Returns the open registration socket (>= 0; the caller
 * owns it and closes it to unregister) and sets *creation, or returns
 * -EEXIST (name taken), -ETIMEDOUT, -ECONNREFUSED, or -errno. */
int epmd_register(const struct logger *log, const char *alive, uint16_t port, int timeout_ms,
		  uint32_t *creation);

/* ---- asynchronous look-up ---- */

/* Called once when a look-up ends: err is 0 with the peer's port, or
 * -ENOENT (not registered), -ETIMEDOUT, -ECONNREFUSED, -EPROTO, -errno. */
typedef void (*epmd_lookup_fn)(int err, uint16_t port, void *arg);

struct epmd_lookup {
	struct evloop *loop;
	int fd;
	struct bytebuf out, in;
	struct evloop_timer timer;
	epmd_lookup_fn done;
	void *arg;
};

/* Starts looking up `alive` at the epmd on `host` (IPv4). The struct is
 * caller-owned and must stay put until `done` runs or the look-up is
 * cancelled. Returns 0, or -errno (done will not be called). */
int epmd_lookup_start(struct epmd_lookup *l, struct evloop *loop, struct in_addr host,
		      const char *alive, int timeout_ms, epmd_lookup_fn done, void *arg);
/* Stops a running look-up; `done` is not called. Safe on a finished one. */
void epmd_lookup_cancel(struct epmd_lookup *l);

#endif
