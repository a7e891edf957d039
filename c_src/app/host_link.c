/* host_link.c — see host_link.h. */
#include "app/host_link.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/node_name.h"
#include "protocol/proc.h"
#include "etf/term.h"
#include "hosting/host_batch.h"
#include "hosting/host_msg.h"

#define HOST_REGISTERED_NAME "shardnode_entity_host"
/* A lease renewal when the node holds no lease limit (no quorum rule
 * applies): long enough for several ticks to renew it. */
#define UNLIMITED_LEASE_TICKS 4
/* A batch this large leaves at once rather than at the end of the turn:
 * one distribution message stays well under what a connection queues. */
#define HOST_BATCH_SEND_BYTES (256 * 1024)

struct host_link {
	struct host_link_config cfg;
	char host[NODE_NAME_BUF];
	struct proc *proc;
	struct evloop_timer timer;
	struct evloop_timer drop_timer; /* losing: the connection is dropped when it fires */
	bool welcomed;
	bool losing; /* a batch was lost: batches are thrown away until the nodedown */
	erlang_pid dispatcher; /* welcomed: where leases go */
	bool batching;         /* the dispatcher takes batches (it offered them) */
	struct host_batch batch; /* batching: this turn's items, sent by host_link_batch_send */
	char types[HOST_LINK_TYPES_MAX][HOST_LINK_TYPE_BUF]; /* the last welcome's */
	size_t ntypes;
};

/* Keeps the type names of a welcome's list (term_validate'd by the
 * decoder: a proper list); an element that is no atom, or one past
 * HOST_LINK_TYPES_MAX, is left out. */
static void keep_types(struct host_link *h, const char *list, size_t len)
{
	(void)len;
	int i = 0, arity = 0;
	h->ntypes = 0;
	if (ei_decode_list_header(list, &i, &arity) < 0)
		return;
	for (int k = 0; k < arity; k++) {
		char atom[MAXATOMLEN_UTF8];
		int before = i;
		if (ei_decode_atom(list, &i, atom) == 0 && strlen(atom) < HOST_LINK_TYPE_BUF &&
		    h->ntypes < HOST_LINK_TYPES_MAX) {
			memcpy(h->types[h->ntypes++], atom, strlen(atom) + 1);
			continue;
		}
		i = before;
		if (ei_skip_term(list, &i) < 0)
			return;
	}
}

static void send_hello(struct host_link *h)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	if (host_msg_encode_hello(&x, dist_node_name(h->cfg.node), &h->proc->pid) == 0)
		(void)dist_node_reg_send(h->cfg.node, &h->proc->pid, HOST_REGISTERED_NAME, h->host, x.buff,
					 (size_t)x.index);
	ei_x_free(&x);
}

/* How long the host may run this node's entities from now: what is left
 * of the lease less the margin, 0 once that is nothing. */
static uint32_t lease_left_ms(const struct host_link *h)
{
	uint64_t until = h->cfg.lease_until ? h->cfg.lease_until(h->cfg.lease_arg) : UINT64_MAX;
	if (until == UINT64_MAX)
		return h->cfg.tick_ms * UNLIMITED_LEASE_TICKS;
	uint64_t now = evloop_clock_ms();
	if (until <= now + h->cfg.margin_ms)
		return 0;
	uint64_t left = until - now - h->cfg.margin_ms;
	return left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;
}

static void send_lease(struct host_link *h)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	if (host_msg_encode_lease(&x, lease_left_ms(h)) == 0)
		(void)dist_node_send(h->cfg.node, &h->dispatcher, x.buff, (size_t)x.index);
	ei_x_free(&x);
}

/* A batch that could not leave holds entity messages the regions count
 * as at their processes: dropping it silently would leave their callers
 * waiting with nothing to time them out. From then on every batch is
 * thrown away too (one message sent after the lost ones would overtake
 * them), and a timer — never inside the region whose message was being
 * sent — drops the connection, so every region answers the messages at
 * the host as at its nodedown, and the link says hello again. */
static void lose_batch(struct host_link *h, int rc)
{
	log_error(h->cfg.log, "a batch of entity messages for the host %s could not be sent (%s): dropping the "
		  "connection, so its messages fail as at a nodedown", h->host, strerror(-rc));
	h->losing = true;
	/* Memory is short: if even the timer cannot be armed, the next tick
	 * drops the connection (on_tick). */
	(void)evloop_timer_start(h->cfg.loop, &h->drop_timer, 0);
}

/* Drops the connection to the host: every region answers the messages at
 * its processes as at the host's nodedown, and so does on_nodedown here.
 * From a timer or the tick only. */
static void drop_connection(struct host_link *h)
{
	(void)dist_node_disconnect(h->cfg.node, h->host, "a batch of entity messages could not be sent");
	/* Its nodedown (always told) reset the link: on_nodedown. */
}

static void on_drop_timer(struct evloop *loop, void *arg)
{
	(void)loop;
	drop_connection(arg);
}

/* Sends the batch gathered so far, if any. */
static void send_batch(struct host_link *h)
{
	const char *buf;
	size_t len;
	int rc = host_batch_take(&h->batch, &buf, &len);
	if (rc == 1 && h->losing)
		return; /* thrown away: the nodedown to come fails its messages */
	if (rc == 1)
		rc = dist_node_send(h->cfg.node, &h->dispatcher, buf, len);
	/* -ENOBUFS: the connection is closed already, its nodedown told. */
	if (rc < 0 && rc != -ENOBUFS)
		lose_batch(h, rc);
}

static void send_batches_ack(struct host_link *h)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	if (host_msg_encode_batches(&x) == 0)
		(void)dist_node_send(h->cfg.node, &h->dispatcher, x.buff, (size_t)x.index);
	ei_x_free(&x);
}

static void on_tick(struct evloop *loop, void *arg)
{
	struct host_link *h = arg;
	if (h->losing && !evloop_timer_armed(&h->drop_timer))
		drop_connection(h); /* its timer could not be armed */
	if (h->welcomed)
		send_lease(h);
	else
		send_hello(h);
	evloop_timer_start(loop, &h->timer, h->cfg.tick_ms);
}

static void handle(void *ctx, struct proc *self, const struct proc_msg *m)
{
	(void)self;
	struct host_link *h = ctx;
	struct host_msg hm;
	int rc = host_msg_decode(m->term, m->len, &hm);
	/* Only the host speaks to this process: anything else is dropped. */
	if (rc != 1 || strcmp(m->via, h->host) != 0 ||
	    (hm.kind != HOST_MSG_WELCOME && hm.kind != HOST_MSG_TYPES && hm.kind != HOST_MSG_BATCHES)) {
		log_debug(h->cfg.log, "host link: a message that is no welcome or types from %s dropped", h->host);
		return;
	}
	if (hm.kind == HOST_MSG_BATCHES) {
		/* The dispatcher welcomed takes batches: so does this node. */
		if (h->welcomed && term_pid_equal(&hm.pid, &h->dispatcher) && !h->batching) {
			h->batching = true;
			send_batches_ack(h);
		}
		return;
	}
	keep_types(h, hm.types, hm.types_len);
	if (hm.kind == HOST_MSG_WELCOME) {
		bool first = !h->welcomed;
		if (h->welcomed && !term_pid_equal(&hm.pid, &h->dispatcher))
			h->batching = false; /* a new dispatcher: until it offers them */
		h->welcomed = true;
		term_pid_copy(&h->dispatcher, &hm.pid);
		send_lease(h);
		if (first) {
			log_info(h->cfg.log, "host %s answered: it runs this node's entities written in Erlang", h->host);
			if (h->cfg.on_welcome)
				h->cfg.on_welcome(h->cfg.on_welcome_arg);
		}
	}
	if (h->cfg.on_types)
		h->cfg.on_types(h->cfg.on_types_arg);
}

static void on_nodedown(void *arg, const char *peer)
{
	struct host_link *h = arg;
	if (strcmp(peer, h->host) != 0 || !h->welcomed)
		return;
	h->welcomed = false;
	h->batching = false;
	h->losing = false;
	evloop_timer_stop(h->cfg.loop, &h->drop_timer);
	host_batch_free(&h->batch); /* for processes that are gone */
	log_warn(h->cfg.log, "host %s is gone: saying hello until it is back", h->host);
}

struct host_link *host_link_start(const struct host_link_config *cfg, int *err)
{
	if (!node_name_valid(cfg->host, strlen(cfg->host))) {
		*err = -EINVAL;
		return NULL;
	}
	struct host_link *h = calloc(1, sizeof *h);
	if (h == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	h->cfg = *cfg;
	memcpy(h->host, cfg->host, strlen(cfg->host) + 1);
	h->cfg.host = h->host;
	evloop_timer_init(&h->timer, on_tick, h);
	evloop_timer_init(&h->drop_timer, on_drop_timer, h);
	host_batch_init(&h->batch);
	h->proc = dist_node_spawn(cfg->node, NULL, handle, h, err);
	if (h->proc == NULL || (*err = dist_node_on_nodedown(cfg->node, on_nodedown, h)) != 0) {
		if (h->proc != NULL)
			dist_node_exit(cfg->node, h->proc, "normal");
		free(h);
		return NULL;
	}
	on_tick(cfg->loop, h);
	*err = 0;
	return h;
}

void host_link_free(struct host_link *h)
{
	if (h == NULL)
		return;
	evloop_timer_stop(h->cfg.loop, &h->timer);
	evloop_timer_stop(h->cfg.loop, &h->drop_timer);
	host_batch_free(&h->batch);
	dist_node_off_nodedown(h->cfg.node, on_nodedown, h);
	dist_node_exit(h->cfg.node, h->proc, "normal");
	free(h);
}

bool host_link_welcomed(const struct host_link *h) { return h->welcomed; }

size_t host_link_types(const struct host_link *h, const char **names, size_t max)
{
	size_t n = h->ntypes < max ? h->ntypes : max;
	for (size_t k = 0; k < n; k++)
		names[k] = h->types[k];
	return n;
}

bool host_link_dispatcher(const struct host_link *h, erlang_pid *out)
{
	/* Losing: nothing may go on its own past the batches thrown away (an
	 * 'end', a first message): it is answered as for no host. */
	if (!h->welcomed || h->losing)
		return false;
	term_pid_copy(out, &h->dispatcher);
	return true;
}

ei_x_buff *host_link_batch_begin(struct host_link *h)
{
	if (!h->welcomed || !h->batching)
		return NULL;
	if (host_batch_size(&h->batch) >= HOST_BATCH_SEND_BYTES)
		send_batch(h);
	ei_x_buff *b = host_batch_item_begin(&h->batch);
	if (b == NULL)
		send_batch(h); /* what is gathered leaves before the caller's message, sent on its own */
	return b;
}

void host_link_batch_end(struct host_link *h, bool ok) { host_batch_item_end(&h->batch, ok); }

void host_link_batch_send(struct host_link *h) { send_batch(h); }

/* ---- what the regions ask (struct region_host), of the link at *arg ---- */

static bool region_host_dispatcher(void *arg, erlang_pid *out)
{
	struct host_link *h = *(struct host_link *const *)arg;
	return h != NULL && host_link_dispatcher(h, out);
}

static bool region_host_ready(void *arg)
{
	struct host_link *h = *(struct host_link *const *)arg;
	return h != NULL && host_link_welcomed(h);
}

static ei_x_buff *region_host_batch_begin(void *arg)
{
	struct host_link *h = *(struct host_link *const *)arg;
	return h != NULL ? host_link_batch_begin(h) : NULL;
}

/* Only after a batch_begin that gave a buffer: the link is there. */
static void region_host_batch_end(void *arg, bool ok) { host_link_batch_end(*(struct host_link *const *)arg, ok); }

static void region_host_batch_send(void *arg)
{
	struct host_link *h = *(struct host_link *const *)arg;
	if (h != NULL)
		host_link_batch_send(h);
}

struct region_host host_link_region_host(struct host_link *const *link, const char *node)
{
	return (struct region_host){.dispatcher = region_host_dispatcher,
				    .ready = region_host_ready,
				    .batch_begin = region_host_batch_begin,
				    .batch_end = region_host_batch_end,
				    .batch_send = region_host_batch_send,
				    .arg = (void *)link,
				    .node = node};
}
