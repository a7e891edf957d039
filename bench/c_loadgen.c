/*
 * c_loadgen.c — a load generator that is itself an Erlang node written in C,
 * built on shardnode's own runtime (event loop, distribution, procs).
 *
 * The BEAM load generator of `make bench` shares two cores with the system
 * it measures and is near its own limit at the rates the C node reaches, so
 * its figures say as much about the client as about the server. This one
 * costs a few microseconds of CPU per message, which leaves most of the
 * machine to the system under test and shows that system's ceiling.
 *
 *   ask:  K client procs each keep W gen_server calls in flight to
 *         {Type, Target}: {'$gen_call', {ClientPid, Tag}, {EntityId, incr}},
 *         answered with {Tag, Reply}. Tag is the small integer index of the
 *         call's slot in the client's window; both shardnode and gen:reply/2
 *         echo it unchanged.
 *   tell: K client procs each keep W tells unanswered: {Type, Target} !
 *         {EntityId, incr}, answered with {Type, EntityId, N} sent to the
 *         client (shardnode reads the sender from the distribution header).
 *         With --reply-to-in-msg the tell is {EntityId, incr, ClientPid}, the
 *         form the BEAM baseline's region needs.
 *
 * With --rate R, neither mode sends on replies: every millisecond the
 * requests due by then (R a second in all) go out round robin to the
 * clients with room in their windows. Two systems, or one with and without
 * TLS, then get the same load, and their CPU per message compares the
 * same batching rather than each one's maximum.
 *
 * A BEAM gen_server:call to a remote name also sends MONITOR_P before and
 * DEMONITOR_P after the call. This generator sends no monitors: the runtime
 * has no public call for them, and leaving them out measures the server's
 * message path alone. Its ask figures are therefore not the cost of a
 * gen_server:call from BEAM, which carries two more control messages.
 *
 * Each client starts at its own offset in the ids 1..N and cycles through
 * them; with --keys uniform each request picks an id at random, with
 * --keys zipf:S id k with a weight of 1/k^S (Zipf: a few ids hot, a long
 * tail cold), from a table of the cumulative weights searched by halving. Timing starts when one untimed probe has been answered (so the
 * connection is up and the target's region is ready) and ends with the last
 * reply after the clients stop sending at the deadline. The result is one
 * line of key=value pairs on stdout; the exit status is 0 only if every
 * request was answered with the expected kind of reply.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <ei.h>

#include "distribution/dist_node.h"
#include "protocol/dist_tls.h"
#include "base/evloop.h"
#include "base/log.h"
#include "protocol/proc.h"
#include "etf/term.h"

/* Latency histogram: one bucket per microsecond up to this bound; slower
 * calls land in one overflow bucket and are reported as the bound. */
#define HIST_US (1u << 20)
/* How long the probe (connection set-up) and the final replies may take. */
#define CONNECT_MS 20000u
#define DRAIN_MS 15000u

enum mode { MODE_ASK, MODE_TELL };
enum keys { KEYS_CYCLE, KEYS_UNIFORM, KEYS_ZIPF };
enum phase { PH_CONNECT, PH_RUN, PH_DRAIN, PH_DONE };

struct opts {
	const char *target;
	const char *cookie;
	const char *type;
	const char *msg; /* the atom sent to each entity */
	unsigned seconds;
	unsigned clients;
	unsigned window;
	long entities;
	enum mode mode;
	bool reply_to_in_msg;
	long rate;           /* --rate: requests per second in all, paced each ms; 0: as fast as replies come */
	enum keys keys;
	double zipf_s;       /* KEYS_ZIPF's exponent */
	const char *tls_dir; /* TLS with DIR/node.pem, node.key, ca.pem (scripts/tls-certs.sh); NULL: plain */
};

struct loadgen;

struct client {
	struct loadgen *lg;
	struct proc *proc;
	long next;         /* index of the next entity, 0-based, before wrapping */
	uint64_t rng;      /* KEYS_UNIFORM, KEYS_ZIPF: splitmix64 state */
	uint64_t *sent_ns; /* ask: send time per window slot, 0 when the slot is free */
	unsigned out;      /* requests not yet answered */
};

struct loadgen {
	struct opts o;
	char name[64];     /* our node name; the logger points at it */
	struct evloop *loop;
	struct logger log;
	struct dist_node *node;
	struct dist_tls_ctx *tls; /* --tls-dir; NULL: plain */
	struct client *clients;
	enum phase phase;
	struct evloop_timer deadline;
	struct evloop_timer watchdog;
	struct evloop_timer pace;  /* --rate: sends what is due, every ms */
	uint64_t sent;             /* requests sent in the timed part */
	unsigned pace_next;        /* the client the pacing looks at first */
	ei_x_buff x;       /* reused for every request */
	uint64_t start_ns, last_ns;
	uint64_t replies;  /* answered during the timed part */
	uint64_t bad;      /* replies of the wrong shape, or unexpected messages */
	uint64_t outstanding;
	uint32_t *hist;
	uint64_t hist_over;
	double *zipf_cdf;  /* KEYS_ZIPF: cumulative weight of ids 1..k, at k-1, the last 1.0 */
	struct rusage ru_start;
	const char *failure; /* set when the run cannot finish; NULL on success */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	/* CLOCK_MONOTONIC cannot fail with a valid pointer on Linux. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fail(struct loadgen *lg, const char *why)
{
	if (lg->failure == NULL)
		lg->failure = why;
	lg->phase = PH_DONE;
	evloop_stop(lg->loop);
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* The first id whose cumulative weight reaches u (in [0, 1)). */
static long zipf_pick(const double *cdf, long n, double u)
{
	long lo = 0, hi = n - 1;
	while (lo < hi) {
		long mid = lo + (hi - lo) / 2;
		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo + 1;
}

/* The entity id of the client's next request (1..entities), advancing it. */
static long next_id(struct client *c)
{
	const struct opts *o = &c->lg->o;
	if (o->keys == KEYS_UNIFORM)
		return (long)(rng_next(&c->rng) % (uint64_t)o->entities) + 1;
	if (o->keys == KEYS_ZIPF)
		return zipf_pick(c->lg->zipf_cdf, o->entities, (double)(rng_next(&c->rng) >> 11) * 0x1.0p-53);
	long id = c->next % o->entities + 1;
	c->next++;
	return id;
}

/* KEYS_ZIPF's table. Returns 0 or -ENOMEM. */
static int zipf_table(struct loadgen *lg)
{
	long n = lg->o.entities;
	lg->zipf_cdf = malloc((size_t)n * sizeof *lg->zipf_cdf);
	if (lg->zipf_cdf == NULL)
		return -ENOMEM;
	double sum = 0;
	for (long k = 0; k < n; k++)
		lg->zipf_cdf[k] = (sum += pow((double)(k + 1), -lg->o.zipf_s));
	for (long k = 0; k < n; k++)
		lg->zipf_cdf[k] /= sum;
	lg->zipf_cdf[n - 1] = 1.0;
	return 0;
}

/* Encodes and sends one request from client c; `slot` is the ask tag. */
static int send_request(struct client *c, unsigned slot)
{
	struct loadgen *lg = c->lg;
	ei_x_buff *x = &lg->x;
	const erlang_pid *self = &c->proc->pid;
	long id = next_id(c);
	x->index = 0;
	int bad = ei_x_encode_version(x);
	if (lg->o.mode == MODE_ASK) {
		bad = bad || ei_x_encode_tuple_header(x, 3) || ei_x_encode_atom(x, "$gen_call") ||
		      ei_x_encode_tuple_header(x, 2) || ei_x_encode_pid(x, self) ||
		      ei_x_encode_long(x, (long)slot) || ei_x_encode_tuple_header(x, 2) ||
		      ei_x_encode_long(x, id) || ei_x_encode_atom(x, lg->o.msg);
	} else {
		bad = bad || ei_x_encode_tuple_header(x, lg->o.reply_to_in_msg ? 3 : 2) ||
		      ei_x_encode_long(x, id) || ei_x_encode_atom(x, lg->o.msg) ||
		      (lg->o.reply_to_in_msg && ei_x_encode_pid(x, self));
	}
	if (bad)
		return -ENOMEM;
	int rc = dist_node_reg_send(lg->node, self, lg->o.type, lg->o.target, x->buff, (size_t)x->index);
	if (rc)
		return rc;
	if (lg->o.mode == MODE_ASK)
		c->sent_ns[slot] = now_ns();
	c->out++;
	lg->outstanding++;
	return 0;
}

static void finish(struct loadgen *lg)
{
	lg->phase = PH_DONE;
	evloop_stop(lg->loop);
}

/* --rate: a free window slot of client c (ask: its tag), or -1. */
static long free_slot(const struct client *c)
{
	unsigned window = c->lg->o.window;
	if (c->out >= window)
		return -1;
	if (c->lg->o.mode == MODE_TELL)
		return 0;
	for (unsigned s = 0; s < window; s++)
		if (c->sent_ns[s] == 0)
			return (long)s;
	return -1;
}

/* --rate: sends the requests due by now (rate x time since the start),
 * round robin over the clients with room in their windows; what finds no
 * room waits for the next tick. */
static void on_pace(struct evloop *loop, void *arg)
{
	struct loadgen *lg = arg;
	if (lg->phase != PH_RUN)
		return;
	uint64_t due = (now_ns() - lg->start_ns) * (uint64_t)lg->o.rate / 1000000000u;
	unsigned idle = 0;
	while (lg->sent < due && idle < lg->o.clients) {
		struct client *c = &lg->clients[lg->pace_next];
		lg->pace_next = (lg->pace_next + 1) % lg->o.clients;
		long slot = free_slot(c);
		if (slot < 0) {
			idle++;
			continue;
		}
		idle = 0;
		if (send_request(c, (unsigned)slot) != 0) {
			fail(lg, "cannot send a request");
			return;
		}
		lg->sent++;
	}
	if (evloop_timer_start(loop, &lg->pace, 1) != 0)
		fail(lg, "cannot arm the pace timer");
}

/* The clients' full windows go out at once; replies keep them full. With
 * --rate, the pacing sends instead, from the first tick on. */
static void start_timed(struct loadgen *lg)
{
	if (getrusage(RUSAGE_SELF, &lg->ru_start) != 0) {
		fail(lg, "getrusage failed");
		return;
	}
	lg->phase = PH_RUN;
	lg->start_ns = lg->last_ns = now_ns();
	evloop_timer_stop(lg->loop, &lg->watchdog);
	if (evloop_timer_start(lg->loop, &lg->deadline, (uint64_t)lg->o.seconds * 1000u) != 0) {
		fail(lg, "cannot arm the deadline timer");
		return;
	}
	if (lg->o.rate > 0) {
		on_pace(lg->loop, lg);
		return;
	}
	for (unsigned k = 0; k < lg->o.clients; k++) {
		for (unsigned s = 0; s < lg->o.window; s++) {
			if (send_request(&lg->clients[k], s) != 0) {
				fail(lg, "cannot send a request");
				return;
			}
		}
	}
}

static void on_deadline(struct evloop *loop, void *arg)
{
	struct loadgen *lg = arg;
	if (lg->phase != PH_RUN)
		return;
	lg->phase = PH_DRAIN;
	if (lg->outstanding == 0) {
		finish(lg);
		return;
	}
	if (evloop_timer_start(loop, &lg->watchdog, DRAIN_MS) != 0)
		fail(lg, "cannot arm the drain timer");
}

static void on_watchdog(struct evloop *loop, void *arg)
{
	(void)loop;
	struct loadgen *lg = arg;
	fail(lg, lg->phase == PH_CONNECT ? "no answer to the probe (is the target up, the cookie right?)"
					 : "replies missing after the deadline");
}

static bool is_integer_term(const char *buf, int idx)
{
	int type, size;
	if (ei_get_type(buf, &idx, &type, &size) != 0)
		return false;
	return type == ERL_SMALL_INTEGER_EXT || type == ERL_INTEGER_EXT || type == ERL_SMALL_BIG_EXT ||
	       type == ERL_LARGE_BIG_EXT;
}

/* {Tag, Reply}: returns the slot, or -1 if the message is not a reply to an
 * outstanding call of this client. A Reply that is not an integer counts as
 * bad but still frees its slot. */
static long ask_reply_slot(struct client *c, const struct proc_msg *m, bool *reply_ok)
{
	int idx = 0, arity;
	long tag;
	if (ei_decode_tuple_header(m->term, &idx, &arity) != 0 || arity != 2 ||
	    ei_decode_long(m->term, &idx, &tag) != 0)
		return -1;
	if (tag < 0 || tag >= (long)c->lg->o.window || c->sent_ns[tag] == 0)
		return -1;
	*reply_ok = is_integer_term(m->term, idx);
	return tag;
}

/* {Type, EntityId, N} */
static bool tell_reply_ok(const struct loadgen *lg, const struct proc_msg *m)
{
	int idx = 0, arity;
	char atom[MAXATOMLEN_UTF8];
	long id;
	if (ei_decode_tuple_header(m->term, &idx, &arity) != 0 || arity != 3 ||
	    ei_decode_atom(m->term, &idx, atom) != 0 || strcmp(atom, lg->o.type) != 0 ||
	    ei_decode_long(m->term, &idx, &id) != 0)
		return false;
	return id >= 1 && id <= lg->o.entities && is_integer_term(m->term, idx);
}

static void record_latency(struct loadgen *lg, uint64_t ns)
{
	uint64_t us = ns / 1000u;
	if (us < HIST_US)
		lg->hist[us]++;
	else
		lg->hist_over++;
}

static void on_client_msg(void *ctx, struct proc *self, const struct proc_msg *m)
{
	(void)self;
	struct client *c = ctx;
	struct loadgen *lg = c->lg;
	if (lg->phase == PH_DONE)
		return;
	uint64_t t = now_ns();
	long slot = 0;
	bool ok;
	if (lg->o.mode == MODE_ASK) {
		ok = false;
		slot = ask_reply_slot(c, m, &ok);
		if (slot < 0) {
			lg->bad++;
			return;
		}
		if (lg->phase != PH_CONNECT)
			record_latency(lg, t - c->sent_ns[slot]);
		c->sent_ns[slot] = 0;
	} else {
		ok = tell_reply_ok(lg, m);
		if (c->out == 0) {
			lg->bad++; /* nothing was due: not ours */
			return;
		}
	}
	if (!ok)
		lg->bad++;
	c->out--;
	lg->outstanding--;
	if (lg->phase == PH_CONNECT) {
		/* The probe is answered: the connection is up and the target's
		 * region registered; from here on everything is timed. */
		start_timed(lg);
		return;
	}
	lg->replies++;
	lg->last_ns = t;
	if (lg->phase == PH_RUN) {
		if (lg->o.rate == 0 && send_request(c, (unsigned)slot) != 0)
			fail(lg, "cannot send a request");
	} else if (lg->outstanding == 0) {
		finish(lg);
	}
}

static uint64_t percentile_us(const struct loadgen *lg, double q)
{
	uint64_t total = lg->hist_over;
	for (uint32_t k = 0; k < HIST_US; k++)
		total += lg->hist[k];
	if (total == 0)
		return 0;
	/* The smallest value with at least q of all samples at or below it. */
	uint64_t want = (uint64_t)(q * (double)total + 0.999999);
	if (want < 1)
		want = 1;
	uint64_t seen = 0;
	for (uint32_t k = 0; k < HIST_US; k++) {
		seen += lg->hist[k];
		if (seen >= want)
			return k;
	}
	return HIST_US;
}

static double tv_us(const struct timeval *tv)
{
	return (double)tv->tv_sec * 1e6 + (double)tv->tv_usec;
}

/* Prints the result line; returns 0, or -1 if stdout could not take it. */
static int report(const struct loadgen *lg)
{
	double secs = (double)(lg->last_ns - lg->start_ns) / 1e9;
	if (secs <= 0)
		secs = 1e-9;
	struct rusage ru;
	double cpu_us = 0;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		cpu_us = tv_us(&ru.ru_utime) + tv_us(&ru.ru_stime) - tv_us(&lg->ru_start.ru_utime) -
			 tv_us(&lg->ru_start.ru_stime);
	double rate = (double)lg->replies / secs;
	/* The generator's own CPU, to show it was not the bottleneck. */
	double gen_cpu_pct = cpu_us / (secs * 1e6) * 100.0;
	if (lg->o.mode == MODE_ASK)
		printf("mode=ask clients=%u window=%u calls=%llu seconds=%.3f calls_per_s=%.0f p50_us=%llu "
		       "p99_us=%llu bad=%llu loadgen_cpu_pct=%.1f\n",
		       lg->o.clients, lg->o.window, (unsigned long long)lg->replies, secs, rate,
		       (unsigned long long)percentile_us(lg, 0.50), (unsigned long long)percentile_us(lg, 0.99),
		       (unsigned long long)lg->bad, gen_cpu_pct);
	else
		printf("mode=tell clients=%u window=%u tells=%llu seconds=%.3f tells_per_s=%.0f bad=%llu "
		       "loadgen_cpu_pct=%.1f\n",
		       lg->o.clients, lg->o.window, (unsigned long long)lg->replies, secs, rate,
		       (unsigned long long)lg->bad, gen_cpu_pct);
	/* The controller reads this line; losing it must fail the run. */
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : -1;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: c_loadgen --target NODE [--cookie C] [--seconds S] [--clients K] [--window W]\n"
		"                 [--entities N] [--mode ask|tell] [--type T] [--msg ATOM] [--reply-to-in-msg]\n"
		"                 [--tls-dir DIR] [--rate R] [--keys cycle|uniform|zipf:S]\n"
		"  ask:  K procs each keep W gen_server calls {Id, Msg} in flight to {T, NODE}\n"
		"  tell: K procs each keep W tells {Id, Msg} unanswered (--reply-to-in-msg:\n"
		"        {Id, Msg, Pid}, for a BEAM region that cannot see the sender)\n"
		"  --target and --cookie are required; defaults: seconds 2, clients 16, window 10,\n"
		"  entities 10000, mode ask, type counter, msg incr\n"
		"  --tls-dir: TLS distribution with DIR/node.pem, node.key and ca.pem (scripts/tls-certs.sh)\n"
		"  --rate: R requests per second in all, sent every millisecond as they fall due\n"
		"          (each still needs room in its client's window); without it, a reply\n"
		"          sends the next request at once\n"
		"  --keys: which id each request goes to: each client cycles through them (the\n"
		"          default), a random one, or one drawn from Zipf(S) (id k weighs 1/k^S)\n");
}

static int parse_uint(const char *flag, const char *text, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "c_loadgen: %s wants an integer from %ld to %ld, not '%s'\n", flag, min, max, text);
		return -1;
	}
	*out = v;
	return 0;
}

/* Returns 0, 1 for --help, or -1 on a bad flag (already reported). */
static int parse_args(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){.cookie = NULL, .type = "counter", .msg = "incr", .seconds = 2, .clients = 16,
			   .window = 10, .entities = 10000, .mode = MODE_ASK};
	for (int k = 1; k < argc; k++) {
		const char *f = argv[k];
		if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
			usage(stdout);
			return 1;
		}
		if (strcmp(f, "--reply-to-in-msg") == 0) {
			o->reply_to_in_msg = true;
			continue;
		}
		if (k + 1 >= argc) {
			fprintf(stderr, "c_loadgen: %s needs a value\n", f);
			return -1;
		}
		const char *v = argv[++k];
		long n;
		if (strcmp(f, "--target") == 0) {
			o->target = v;
		} else if (strcmp(f, "--cookie") == 0) {
			o->cookie = v;
		} else if (strcmp(f, "--tls-dir") == 0) {
			o->tls_dir = v;
		} else if (strcmp(f, "--type") == 0) {
			o->type = v;
		} else if (strcmp(f, "--msg") == 0) {
			o->msg = v;
		} else if (strcmp(f, "--mode") == 0) {
			if (strcmp(v, "ask") == 0) {
				o->mode = MODE_ASK;
			} else if (strcmp(v, "tell") == 0) {
				o->mode = MODE_TELL;
			} else {
				fprintf(stderr, "c_loadgen: --mode is ask or tell, not '%s'\n", v);
				return -1;
			}
		} else if (strcmp(f, "--seconds") == 0) {
			if (parse_uint(f, v, 1, 3600, &n))
				return -1;
			o->seconds = (unsigned)n;
		} else if (strcmp(f, "--clients") == 0) {
			if (parse_uint(f, v, 1, 10000, &n))
				return -1;
			o->clients = (unsigned)n;
		} else if (strcmp(f, "--window") == 0) {
			if (parse_uint(f, v, 1, 100000, &n))
				return -1;
			o->window = (unsigned)n;
		} else if (strcmp(f, "--rate") == 0) {
			if (parse_uint(f, v, 1, 100000000, &n))
				return -1;
			o->rate = n;
		} else if (strcmp(f, "--keys") == 0) {
			char *end = NULL;
			if (strcmp(v, "cycle") == 0) {
				o->keys = KEYS_CYCLE;
			} else if (strcmp(v, "uniform") == 0) {
				o->keys = KEYS_UNIFORM;
			} else if (strncmp(v, "zipf:", 5) == 0 && (o->zipf_s = strtod(v + 5, &end)) > 0 &&
				   o->zipf_s <= 10 && *end == '\0') {
				o->keys = KEYS_ZIPF;
			} else {
				fprintf(stderr, "c_loadgen: --keys is cycle, uniform or zipf:S (0 < S <= 10), not '%s'\n", v);
				return -1;
			}
		} else if (strcmp(f, "--entities") == 0) {
			if (parse_uint(f, v, 1, INT32_MAX, &n))
				return -1;
			o->entities = n;
		} else {
			fprintf(stderr, "c_loadgen: unknown flag %s\n", f);
			usage(stderr);
			return -1;
		}
	}
	if (o->target == NULL || strchr(o->target, '@') == NULL || o->cookie == NULL) {
		fprintf(stderr, "c_loadgen: --target name@host and --cookie are required\n");
		return -1;
	}
	if (strlen(o->type) >= MAXATOMLEN || strlen(o->msg) >= MAXATOMLEN) {
		fprintf(stderr, "c_loadgen: --type and --msg must be atoms of fewer than %d bytes\n", MAXATOMLEN);
		return -1;
	}
	return 0;
}

static int setup(struct loadgen *lg)
{
	int rc;
	/* The OS pid keeps concurrent runs apart in epmd. */
	if (snprintf(lg->name, sizeof lg->name, "loadgen%ld@127.0.0.1", (long)getpid()) >= (int)sizeof lg->name)
		return -ENAMETOOLONG;
	lg->log = (struct logger){.min_level = LOG_WARN, .out = stderr, .node = lg->name};
	lg->loop = evloop_new();
	if (lg->loop == NULL)
		return -errno;
	lg->hist = calloc(HIST_US, sizeof *lg->hist);
	lg->clients = calloc(lg->o.clients, sizeof *lg->clients);
	if (lg->hist == NULL || lg->clients == NULL || ei_x_new(&lg->x) != 0)
		return -ENOMEM;
	if (lg->o.keys == KEYS_ZIPF && zipf_table(lg) != 0)
		return -ENOMEM;
	evloop_timer_init(&lg->deadline, on_deadline, lg);
	evloop_timer_init(&lg->watchdog, on_watchdog, lg);
	evloop_timer_init(&lg->pace, on_pace, lg);
	if (lg->o.tls_dir != NULL) {
		char cert[PATH_MAX], key[PATH_MAX], ca[PATH_MAX], err[DIST_TLS_ERR_BUF];
		snprintf(cert, sizeof cert, "%s/node.pem", lg->o.tls_dir);
		snprintf(key, sizeof key, "%s/node.key", lg->o.tls_dir);
		snprintf(ca, sizeof ca, "%s/ca.pem", lg->o.tls_dir);
		struct dist_tls_config tcfg = {cert, key, ca, true};
		if ((lg->tls = dist_tls_ctx_new(&tcfg, err)) == NULL) {
			fprintf(stderr, "c_loadgen: %s\n", err);
			return -EINVAL;
		}
	}
	struct dist_node_config ncfg = {
		.loop = lg->loop, .tls = lg->tls,
		.log = &lg->log,
		.name = lg->name,
		.cookie = lg->o.cookie,
		.port = 0,
		.max_message_bytes = 64u << 20,
		/* The windows bound what is queued; these limits only have
		 * to stay out of the way. */
		.outq_pause = 64u << 20,
		.outq_max_bytes = 512u << 20,
		.setup_ms = 7000,
		.ticktime_ms = 60000,
		.max_connections = 16,
	};
	lg->node = dist_node_start(&ncfg, &rc);
	if (lg->node == NULL)
		return rc ? rc : -EIO;
	for (unsigned k = 0; k < lg->o.clients; k++) {
		struct client *c = &lg->clients[k];
		c->lg = lg;
		/* Each client starts at its own part of the id range, as the BEAM
		 * generator's clients do. */
		c->next = (long)((uint64_t)k * (uint64_t)lg->o.entities / lg->o.clients);
		c->rng = (uint64_t)k * 7919u + 1;
		if (lg->o.mode == MODE_ASK) {
			c->sent_ns = calloc(lg->o.window, sizeof *c->sent_ns);
			if (c->sent_ns == NULL)
				return -ENOMEM;
		}
		c->proc = dist_node_spawn(lg->node, NULL, on_client_msg, c, &rc);
		if (c->proc == NULL)
			return rc ? rc : -ENOMEM;
	}
	return 0;
}

static void teardown(struct loadgen *lg)
{
	if (lg->node != NULL)
		dist_node_free(lg->node); /* frees the procs; closing epmd's socket unregisters us */
	dist_tls_ctx_free(lg->tls);
	if (lg->clients != NULL)
		for (unsigned k = 0; k < lg->o.clients; k++)
			free(lg->clients[k].sent_ns);
	free(lg->clients);
	free(lg->hist);
	free(lg->zipf_cdf);
	if (lg->x.buff != NULL)
		ei_x_free(&lg->x);
	if (lg->loop != NULL) {
		evloop_timer_stop(lg->loop, &lg->deadline);
		evloop_timer_stop(lg->loop, &lg->watchdog);
		evloop_timer_stop(lg->loop, &lg->pace);
		evloop_free(lg->loop);
	}
}

int main(int argc, char **argv)
{
	static struct loadgen lg;
	int rc = parse_args(argc, argv, &lg.o);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (ei_init() != 0) {
		fprintf(stderr, "c_loadgen: ei_init failed\n");
		return 1;
	}
	/* A peer that goes away must show up as a closed connection, not kill us. */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		fprintf(stderr, "c_loadgen: cannot ignore SIGPIPE: %s\n", strerror(errno));
		return 1;
	}
	rc = setup(&lg);
	if (rc) {
		fprintf(stderr, "c_loadgen: cannot start: %s\n",
			rc == -EADDRINUSE ? "node name taken in epmd, or port in use" : strerror(-rc));
		teardown(&lg);
		return 1;
	}
	/* The probe: one request from the first client, untimed. */
	if (evloop_timer_start(lg.loop, &lg.watchdog, CONNECT_MS) != 0 || send_request(&lg.clients[0], 0) != 0) {
		fprintf(stderr, "c_loadgen: cannot send the probe to %s\n", lg.o.target);
		teardown(&lg);
		return 1;
	}
	rc = evloop_run(lg.loop);
	if (rc != 0 && lg.failure == NULL)
		lg.failure = "event loop failed";
	int status = 0;
	if (lg.failure != NULL) {
		fprintf(stderr, "c_loadgen: %s (%llu replies, %llu outstanding)\n", lg.failure,
			(unsigned long long)lg.replies, (unsigned long long)lg.outstanding);
		status = 1;
	} else {
		if (report(&lg) != 0) {
			fprintf(stderr, "c_loadgen: cannot write the result: %s\n", strerror(errno));
			status = 1;
		}
		if (lg.bad != 0) {
			fprintf(stderr, "c_loadgen: %llu replies were not what the protocol says\n",
				(unsigned long long)lg.bad);
			status = 1;
		}
	}
	teardown(&lg);
	return status;
}
