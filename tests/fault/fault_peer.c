/*
 * fault_peer: one side of a fault test (tests/fault/fault.sh).
 *
 *   fault_peer push  -e tcp://10.77.0.2:5601 -s push.state [options]
 *   fault_peer pull  -e tcp://10.77.0.2:5601 -s pull.state [options]
 *   fault_peer req   / rep    REQ with Lazy Pirate retries, idempotent REP
 *   fault_peer bpub  / bsub   broker queue: publisher (dials), subscription (binds)
 *   fault_peer report -S SENDER.state -R RECEIVER.state [bound options]
 *
 * Every message carries (epoch, seq): the epoch is the sender's incarnation
 * (a restarted sender is a new epoch; so is every FP_SEQ_MAX messages), seq
 * counts from 0 within it. Counts live
 * in a state file mapped MAP_SHARED, so they survive kill -9: a restarted
 * sender takes the next epoch, a restarted receiver goes on with the same
 * bitmaps, so a message delivered twice across a restart still counts as a
 * duplicate. The receiver keeps one bit per (epoch, seq): a bit already set is
 * a duplicate; a new message below the highest seq seen arrived out of order.
 *
 * Senders stop on SIGTERM/SIGINT (or after -n messages), flush for up to
 * LINGER and print a summary; SIGUSR1 first makes them stop sending but keep
 * their connections until SIGTERM; receivers print theirs on SIGTERM. `report`
 * merges a sender's and a receiver's state into the line the driver asserts
 * on. The connecting side records reconnects from its socket monitor:
 * DISCONNECTED to the next HANDSHAKE_SUCCEEDED (REQ: from the first send of
 * a request that had to be retried to its reply); the receiving side records the longest gap between
 * two arrivals.
 *
 * Exit: 0, 1 usage, 2 a zring call failed, 3 a check failed (report).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zring.h>

#define FP_MAGIC 0x7a726674u /* "zrft" */
#define FP_EPOCHS 32u
#define FP_SEQ_MAX (1u << 23) /* messages per epoch the bitmap can tell apart */
#define FP_PAYLOAD 16         /* epoch u32, seq u64, pad u32 */

struct fp_epoch {
	_Atomic uint64_t sending;     /* sender: a send of this seq count is under way */
	_Atomic uint64_t sent;        /* sender: handed over (zr_send / zr_publish returned 0) */
	_Atomic uint64_t disconnects; /* sender: connections lost while this epoch ran */
	_Atomic uint64_t received;    /* receiver: distinct messages; REQ client: replies */
	_Atomic uint64_t dups;        /* a (epoch, seq) seen before */
	_Atomic uint64_t reorders;    /* a new seq below the highest seen */
	_Atomic uint64_t high;        /* highest seq + 1 seen */
	_Atomic uint64_t repeats;     /* REP: requests executed again (retries: expected) */
	_Atomic uint64_t rolled;      /* sender: went on in the next epoch, FP_SEQ_MAX sent */
};

struct fp_state {
	uint32_t magic;
	_Atomic uint32_t epochs; /* sender incarnations started */
	_Atomic uint64_t reconnects;
	_Atomic uint64_t max_reconnect_ms;
	_Atomic uint64_t retries; /* REQ: requests resent after a timeout */
	_Atomic uint64_t bad;     /* malformed or out-of-range messages */
	_Atomic uint64_t last_rx_ns;
	_Atomic uint64_t max_gap_ms;
	_Atomic uint64_t starts; /* receiver incarnations */
	/* where the longest gap ended: wall clock (ms) and the message after it */
	_Atomic uint64_t gap_end_ms, gap_epoch, gap_seq;
	_Atomic uint64_t flush_ms; /* sender: the longest zr_ctx_free at exit (LINGER bounds it) */
	struct fp_epoch ep[FP_EPOCHS];
	uint8_t bits[FP_EPOCHS][FP_SEQ_MAX / 8];
};

struct fp_opts {
	const char *role, *endpoint, *state, *sstate, *rstate;
	double rate;    /* messages per second, 0: as fast as possible */
	uint64_t count; /* 0: until SIGTERM */
	int hb_ivl, hb_timeout;
	int hwm, kbuf;   /* SNDHWM/RCVHWM, SO_SNDBUF/SO_RCVBUF (0: defaults) */
	int req_timeout; /* REQ: ms before a retry */
	int linger;      /* ms the sender flushes at the end */
	/* report: the loss bound of one dead connection */
	uint64_t b_msgs, b_bytes, b_wire;
};

static volatile sig_atomic_t fp_stop, fp_pause;

static void
fp_on_signal(int sig)
{
	(void)sig;
	fp_stop = fp_stop + 1; /* a REQ client finishes its request unless told twice */
}

/* SIGUSR1: a sender stops sending but keeps its connection until SIGTERM,
 * so the driver can see everything arrive before any close. */
static void
fp_on_pause(int sig)
{
	(void)sig;
	fp_pause = 1;
}

static uint64_t
fp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void
fp_sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
	                      .tv_nsec = (long)(ns % 1000000000u)};

	nanosleep(&ts, NULL);
}

static void
fp_max(_Atomic uint64_t *v, uint64_t x)
{
	uint64_t cur = atomic_load(v);

	while (x > cur && !atomic_compare_exchange_weak(v, &cur, x))
		;
}

static struct fp_state *
fp_map(const char *path, bool create)
{
	struct fp_state *st;
	int fd = open(path, create ? O_RDWR | O_CREAT : O_RDONLY, 0644);

	if (fd < 0) {
		fprintf(stderr, "fault_peer: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	if (create && ftruncate(fd, sizeof *st) < 0) {
		fprintf(stderr, "fault_peer: %s: %s\n", path, strerror(errno));
		close(fd);
		return NULL;
	}
	st = mmap(NULL, sizeof *st, create ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (st == MAP_FAILED) {
		fprintf(stderr, "fault_peer: %s: mmap: %s\n", path, strerror(errno));
		return NULL;
	}
	if (create && st->magic != FP_MAGIC) {
		memset(st, 0, offsetof(struct fp_state, bits));
		st->magic = FP_MAGIC;
	}
	return st;
}

static void
fp_encode(uint8_t *buf, uint32_t epoch, uint64_t seq)
{
	memset(buf, 0, FP_PAYLOAD);
	memcpy(buf, &epoch, sizeof epoch);
	memcpy(buf + 4, &seq, sizeof seq);
}

static bool
fp_decode(const void *p, size_t len, uint32_t *epoch, uint64_t *seq)
{
	if (len != FP_PAYLOAD)
		return false;
	memcpy(epoch, p, sizeof *epoch);
	memcpy(seq, (const uint8_t *)p + 4, sizeof *seq);
	return *epoch < FP_EPOCHS && *seq < FP_SEQ_MAX;
}

/* Receiver bookkeeping for one message; returns false when malformed. */
static bool
fp_account(struct fp_state *st, const void *p, size_t len)
{
	uint32_t e;
	uint64_t q, now = fp_now_ns(), last;
	struct fp_epoch *ep;
	uint8_t *byte;

	if (!fp_decode(p, len, &e, &q)) {
		atomic_fetch_add(&st->bad, 1);
		return false;
	}
	ep = &st->ep[e];
	byte = &st->bits[e][q / 8];
	if (*byte & (1u << (q % 8))) {
		atomic_fetch_add(&ep->dups, 1);
	} else {
		*byte |= (uint8_t)(1u << (q % 8));
		atomic_fetch_add(&ep->received, 1);
		if (q + 1 < atomic_load(&ep->high))
			atomic_fetch_add(&ep->reorders, 1);
	}
	fp_max(&ep->high, q + 1);
	last = atomic_exchange(&st->last_rx_ns, now);
	if (last != 0 && now > last && (now - last) / 1000000u > atomic_load(&st->max_gap_ms)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		atomic_store(&st->max_gap_ms, (now - last) / 1000000u);
		atomic_store(&st->gap_end_ms,
		             (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u);
		atomic_store(&st->gap_epoch, e);
		atomic_store(&st->gap_seq, q);
	}
	return true;
}

/* ---- reconnect timing from the socket monitor ---- */

struct fp_mon {
	zr_socket *s;
	uint64_t down_ns; /* when the connection went, 0 while up */
	bool was_up;
};

static void
fp_mon_poll(struct fp_mon *m, struct fp_state *st, struct fp_epoch *ep)
{
	struct zr_event ev;

	if (m->s == NULL)
		return;
	while (zr_monitor_recv(m->s, &ev, 0) == 0) {
		if (ev.type == ZR_EVENT_DISCONNECTED) {
			atomic_fetch_add(&ep->disconnects, 1);
			m->was_up = true; /* its handshake may predate the monitor */
			if (m->down_ns == 0)
				m->down_ns = fp_now_ns();
		} else if (ev.type == ZR_EVENT_HANDSHAKE_SUCCEEDED) {
			if (m->was_up && m->down_ns != 0) {
				atomic_fetch_add(&st->reconnects, 1);
				fp_max(&st->max_reconnect_ms,
				       (fp_now_ns() - m->down_ns) / 1000000u);
			}
			m->was_up = true;
			m->down_ns = 0;
		}
	}
}

/* A paused sender waits for SIGTERM, still watching its connection. */
static void
fp_hold(struct fp_mon *m, struct fp_state *st, struct fp_epoch *ep)
{
	while (fp_pause && !fp_stop) {
		fp_sleep_ns(50000000u);
		if (m != NULL)
			fp_mon_poll(m, st, ep);
	}
}

/* ---- sockets ---- */

static void
fp_setint(zr_socket *s, int opt, int v)
{
	zr_setsockopt(s, opt, &v, sizeof v);
}

static void
fp_sockopts(zr_socket *s, const struct fp_opts *o)
{
	if (o->hb_ivl > 0) {
		fp_setint(s, ZR_HEARTBEAT_IVL, o->hb_ivl);
		fp_setint(s, ZR_HEARTBEAT_TIMEOUT, o->hb_timeout > 0 ? o->hb_timeout : o->hb_ivl);
	}
	if (o->hwm > 0) {
		fp_setint(s, ZR_SNDHWM, o->hwm);
		fp_setint(s, ZR_RCVHWM, o->hwm);
	}
	if (o->kbuf > 0) {
		fp_setint(s, ZR_SNDBUF, o->kbuf);
		fp_setint(s, ZR_RCVBUF, o->kbuf);
	}
	fp_setint(s, ZR_RECONNECT_IVL, 100);
	fp_setint(s, ZR_SNDTIMEO, 100);
	fp_setint(s, ZR_RCVTIMEO, 100);
}

static int
fp_open(zr_ctx *ctx, int type, const struct fp_opts *o, bool bind, zr_socket **s)
{
	int rc = zr_socket_open(ctx, type, s);

	if (rc < 0) {
		fprintf(stderr, "fault_peer: socket: %s\n", zr_strerror(rc));
		return rc;
	}
	fp_sockopts(*s, o);
	rc = bind ? zr_bind(*s, o->endpoint) : zr_connect(*s, o->endpoint);
	if (rc < 0) {
		fprintf(stderr, "fault_peer: %s %s: %s\n", bind ? "bind" : "connect", o->endpoint,
		        zr_strerror(rc));
		zr_socket_close(*s);
		*s = NULL;
	}
	return rc;
}

/* Sleeps until message n is due at the configured rate. */
static void
fp_pace(const struct fp_opts *o, uint64_t t0, uint64_t n)
{
	uint64_t due, now;

	if (o->rate <= 0)
		return;
	due = t0 + (uint64_t)((double)n * 1e9 / o->rate);
	now = fp_now_ns();
	if (due > now)
		fp_sleep_ns(due - now);
}

static uint32_t
fp_new_epoch(struct fp_state *st)
{
	uint32_t e = atomic_fetch_add(&st->epochs, 1);

	if (e >= FP_EPOCHS) {
		fprintf(stderr, "fault_peer: more than %u sender restarts\n", FP_EPOCHS);
		exit(2);
	}
	return e;
}

/* A sender that used up an epoch's seqs goes on in a new one. */
static void
fp_roll(struct fp_state *st, uint32_t *e, struct fp_epoch **ep, uint64_t *seq, uint64_t *t0)
{
	if (*seq < FP_SEQ_MAX)
		return;
	atomic_store(&(*ep)->rolled, 1);
	*e = fp_new_epoch(st);
	*ep = &st->ep[*e];
	*seq = 0;
	*t0 = fp_now_ns();
}

static void
fp_print_sender(const char *role, struct fp_state *st, uint32_t e)
{
	printf("%s epoch=%" PRIu32 " sent=%" PRIu64 " received=%" PRIu64 " disconnects=%" PRIu64
	       " reconnects=%" PRIu64 " max_reconnect_ms=%" PRIu64 " retries=%" PRIu64 "\n",
	       role, e, atomic_load(&st->ep[e].sent), atomic_load(&st->ep[e].received),
	       atomic_load(&st->ep[e].disconnects), atomic_load(&st->reconnects),
	       atomic_load(&st->max_reconnect_ms), atomic_load(&st->retries));
	fflush(stdout);
}

static void
fp_print_receiver(const char *role, struct fp_state *st)
{
	uint64_t rx = 0, dups = 0, reo = 0, rep = 0;

	for (unsigned e = 0; e < FP_EPOCHS; e++) {
		rx += atomic_load(&st->ep[e].received);
		dups += atomic_load(&st->ep[e].dups);
		reo += atomic_load(&st->ep[e].reorders);
		rep += atomic_load(&st->ep[e].repeats);
	}
	printf("%s received=%" PRIu64 " duplicated=%" PRIu64 " reordered=%" PRIu64
	       " repeats=%" PRIu64 " bad=%" PRIu64 " max_gap_ms=%" PRIu64 " gap_end_ms=%" PRIu64
	       " gap_before=%" PRIu64 ":%" PRIu64 "\n",
	       role, rx, dups, reo, rep, atomic_load(&st->bad), atomic_load(&st->max_gap_ms),
	       atomic_load(&st->gap_end_ms), atomic_load(&st->gap_epoch),
	       atomic_load(&st->gap_seq));
	fflush(stdout);
}

/* ---- PUSH / PULL ---- */

static int
fp_push(zr_ctx *ctx, struct fp_state *st, const struct fp_opts *o)
{
	uint32_t e = fp_new_epoch(st);
	struct fp_epoch *ep = &st->ep[e];
	struct fp_mon mon = {0};
	uint8_t buf[FP_PAYLOAD];
	uint64_t seq = 0, t0 = fp_now_ns();
	int rc = fp_open(ctx, ZR_PUSH, o, false, &mon.s);

	if (rc < 0)
		return 2;
	zr_socket_monitor(mon.s, ZR_EVENT_ALL);
	for (uint64_t total = 0; !fp_stop && !fp_pause && (o->count == 0 || total < o->count);
	     total++) {
		fp_roll(st, &e, &ep, &seq, &t0);
		fp_pace(o, t0, seq);
		fp_encode(buf, e, seq);
		atomic_store(&ep->sending, seq + 1);
		for (;;) {
			rc = zr_send_bytes(mon.s, buf, sizeof buf, 0);
			fp_mon_poll(&mon, st, ep);
			if (rc != -EAGAIN || fp_stop || fp_pause)
				break;
		}
		if (rc < 0)
			break;
		atomic_store(&ep->sent, ++seq);
	}
	if (rc < 0 && rc != -EAGAIN)
		fprintf(stderr, "fault_peer: push send: %s\n", zr_strerror(rc));
	fp_hold(&mon, st, ep);
	fp_setint(mon.s, ZR_LINGER, o->linger);
	fp_mon_poll(&mon, st, ep);
	zr_socket_close(mon.s);
	fp_print_sender("push", st, e);
	return 0;
}

static int
fp_pull(zr_ctx *ctx, struct fp_state *st, const struct fp_opts *o)
{
	zr_socket *s;
	uint8_t buf[64];

	atomic_fetch_add(&st->starts, 1);
	if (fp_open(ctx, ZR_PULL, o, true, &s) < 0)
		return 2;
	while (!fp_stop) {
		int n = zr_recv_bytes(s, buf, sizeof buf, 0);

		if (n >= 0)
			fp_account(st, buf, (size_t)n);
		else if (n != -EAGAIN)
			break;
	}
	zr_socket_close(s);
	fp_print_receiver("pull", st);
	return 0;
}

/* ---- REQ (Lazy Pirate) / REP ---- */

/* A REQ socket whose send or receive gives up after req_timeout, so that
 * the Lazy Pirate loop can drop it and ask again on a new one. */
static int
fp_req_open(zr_ctx *ctx, const struct fp_opts *o, zr_socket **s)
{
	int rc = fp_open(ctx, ZR_REQ, o, false, s);

	if (rc < 0)
		return rc;
	fp_setint(*s, ZR_RCVTIMEO, o->req_timeout);
	fp_setint(*s, ZR_SNDTIMEO, o->req_timeout);
	fp_setint(*s, ZR_LINGER, 0);
	return 0;
}

static int
fp_req(zr_ctx *ctx, struct fp_state *st, const struct fp_opts *o)
{
	uint32_t e = fp_new_epoch(st);
	struct fp_epoch *ep = &st->ep[e];
	struct fp_mon mon = {0};
	uint8_t buf[FP_PAYLOAD], rep[64];
	uint64_t seq = 0, t0 = fp_now_ns();
	struct fp_opts ro = *o;

	ro.linger = 0;
	if (fp_req_open(ctx, &ro, &mon.s) < 0)
		return 2;
	for (uint64_t total = 0; !fp_stop && !fp_pause && (o->count == 0 || total < o->count);
	     total++) {
		uint64_t asked;
		bool done = false, retried = false;

		fp_roll(st, &e, &ep, &seq, &t0);
		asked = fp_now_ns();

		fp_pace(o, t0, seq);
		fp_encode(buf, e, seq);
		atomic_store(&ep->sending, seq + 1);
		atomic_store(&ep->sent, seq + 1); /* a request counts once, however often resent */
		while (fp_stop < 2 && !done) {
			int rc = zr_send_bytes(mon.s, buf, sizeof buf, 0);

			while (rc == 0 && fp_stop < 2) {
				uint32_t re;
				uint64_t rq;

				rc = zr_recv_bytes(mon.s, rep, sizeof rep, 0);
				if (rc < 0)
					break;
				if (!fp_decode(rep, (size_t)rc, &re, &rq) || re != e) {
					atomic_fetch_add(&st->bad, 1);
				} else if (rq == seq) {
					atomic_fetch_add(&ep->received, 1);
					done = true;
				} else if (rq < seq) {
					atomic_fetch_add(&ep->dups,
					                 1); /* an answered request again */
				} else {
					atomic_fetch_add(&ep->reorders, 1);
				}
				rc = done ? 0 : -EAGAIN;
				break;
			}
			if (done || fp_stop > 1)
				break;
			/* Lazy Pirate: no reply in time, so this socket may be stuck
			 * on a dead connection; drop it and ask again on a new one. */
			retried = true;
			atomic_fetch_add(&st->retries, 1);
			atomic_fetch_add(&ep->disconnects, 1);
			zr_socket_close(mon.s);
			if (fp_req_open(ctx, &ro, &mon.s) < 0)
				return 2;
		}
		if (done && retried) {
			/* The client's outage: from the first ask to the answer. */
			atomic_fetch_add(&st->reconnects, 1);
			fp_max(&st->max_reconnect_ms, (fp_now_ns() - asked) / 1000000u);
		}
		if (done)
			seq++;
	}
	fp_hold(NULL, st, ep);
	zr_socket_close(mon.s);
	fp_print_sender("req", st, e);
	return 0;
}

static int
fp_rep(zr_ctx *ctx, struct fp_state *st, const struct fp_opts *o)
{
	zr_socket *s;
	uint8_t buf[64];

	atomic_fetch_add(&st->starts, 1);
	if (fp_open(ctx, ZR_REP, o, true, &s) < 0)
		return 2;
	fp_setint(s, ZR_LINGER, 0);
	while (!fp_stop) {
		int n = zr_recv_bytes(s, buf, sizeof buf, 0);
		uint32_t e;
		uint64_t q;

		if (n == -EAGAIN)
			continue;
		if (n < 0)
			break;
		/* Idempotent: a retried request is answered again, and counted. */
		if (fp_decode(buf, (size_t)n, &e, &q) && (st->bits[e][q / 8] & (1u << (q % 8))))
			atomic_fetch_add(&st->ep[e].repeats, 1);
		else
			fp_account(st, buf, (size_t)n);
		while (!fp_stop) {
			int rc = zr_send_bytes(s, buf, (size_t)n, 0);

			if (rc != -EAGAIN)
				break;
		}
	}
	zr_socket_close(s);
	fp_print_receiver("rep", st);
	return 0;
}

/* ---- broker queue ---- */

static void
fp_bsub_handler(const struct zr_delivery *d, void *arg)
{
	if (d->error != 0)
		atomic_fetch_add(&((struct fp_state *)arg)->bad, 1);
	else
		fp_account(arg, d->payload, d->payload_len);
}

static int
fp_bsub(zr_ctx *ctx, struct fp_state *st, const struct fp_opts *o)
{
	zr_broker *b;
	zr_subscription *sub;
	struct zr_sub_opts so = {.handler = fp_bsub_handler, .arg = st};
	int rc;

	atomic_fetch_add(&st->starts, 1);
	rc = zr_broker_new(ctx, ZR_QUEUE, o->endpoint, ZR_BIND, &b);
	if (rc < 0)
		return 2;
	if (o->hwm > 0)
		zr_broker_set_read_ahead(b, (unsigned)o->hwm);
	rc = zr_broker_start(b);
	if (rc == 0)
		rc = zr_subscribe(b, "fault", &so, &sub);
	if (rc < 0) {
		fprintf(stderr, "fault_peer: bsub: %s\n", zr_broker_error(b));
		zr_broker_free(b);
		return 2;
	}
	while (!fp_stop)
		fp_sleep_ns(50000000u);
	zr_broker_shutdown(b);
	zr_broker_free(b);
	fp_print_receiver("bsub", st);
	return 0;
}

static int
fp_bpub(zr_ctx *ctx, struct fp_state *st, const struct fp_opts *o)
{
	uint32_t e = fp_new_epoch(st);
	struct fp_epoch *ep = &st->ep[e];
	struct fp_mon mon = {0};
	zr_broker *b;
	zr_publisher *p = NULL;
	uint8_t buf[FP_PAYLOAD];
	uint64_t seq = 0, t0 = fp_now_ns();
	int rc;

	rc = zr_broker_new(ctx, ZR_QUEUE, o->endpoint, ZR_CONNECT, &b);
	if (rc < 0)
		return 2;
	rc = zr_broker_start(b);
	if (rc == 0)
		rc = zr_publisher_new(b, &p);
	if (rc < 0) {
		fprintf(stderr, "fault_peer: bpub: %s\n", zr_broker_error(b));
		zr_broker_free(b);
		return 2;
	}
	for (uint64_t total = 0; !fp_stop && !fp_pause && (o->count == 0 || total < o->count);
	     total++) {
		fp_roll(st, &e, &ep, &seq, &t0);
		fp_pace(o, t0, seq);
		fp_encode(buf, e, seq);
		atomic_store(&ep->sending, seq + 1);
		for (;;) {
			rc = zr_publish(p, "fault", NULL, 0, buf, sizeof buf, 100);
			if (mon.s == NULL && zr_publisher_socket(p) != NULL) {
				mon.s = zr_publisher_socket(p);
				zr_socket_monitor(mon.s, ZR_EVENT_ALL);
			}
			fp_mon_poll(&mon, st, ep);
			/* Nothing was taken: no room yet, or no peer within the
			 * retry window (the receiver is down). Try again. */
			if ((rc != -ETIMEDOUT && rc != -ENOTCONN) || fp_stop || fp_pause)
				break;
			if (rc == -ENOTCONN)
				fp_sleep_ns(50000000u);
		}
		if (rc < 0)
			break;
		atomic_store(&ep->sent, ++seq);
	}
	if (rc < 0 && rc != -ETIMEDOUT && rc != -ENOTCONN)
		fprintf(stderr, "fault_peer: bpub: %s\n", zr_publisher_error(p));
	fp_hold(&mon, st, ep);
	zr_publisher_free(p);
	zr_broker_free(b);
	fp_print_sender("bpub", st, e);
	return 0;
}

/* ---- report ---- */

static int
fp_judge(struct fp_state *s, struct fp_state *r, const struct fp_opts *o, FILE *out)
{
	uint64_t sent = 0, rx = 0, lost = 0, dups = 0, reo = 0, deaths = 0, over = 0, repeats = 0;
	uint64_t bound = o->b_msgs + (o->b_wire > 0 ? (o->b_bytes + o->b_wire - 1) / o->b_wire : 0);
	bool reqrep = strncmp(o->role, "req", 3) == 0;
	uint32_t epochs;

	epochs = atomic_load(&s->epochs);
	if (epochs > FP_EPOCHS)
		epochs = FP_EPOCHS;
	for (uint32_t e = 0; e < epochs; e++) {
		/* REQ: the client is the receiver of replies; its own state holds both. */
		const struct fp_epoch *se = &s->ep[e];
		const struct fp_epoch *re = reqrep ? se : &r->ep[e];
		uint64_t n = atomic_load(&se->sent), got = atomic_load(&re->received);
		uint64_t sending = atomic_load(&se->sending);
		uint64_t d = atomic_load(&se->disconnects), l;

		/* A sender killed inside a send may have handed over one more. */
		if (got > n && got <= sending)
			n = got;
		l = n > got ? n - got : 0;
		sent += n;
		rx += got;
		lost += l;
		dups += atomic_load(&re->dups);
		reo += atomic_load(&re->reorders);
		repeats += atomic_load(&r->ep[e].repeats);
		deaths += d;
		/* Loss is allowed only where a connection died (a disconnect the
		 * sender saw, or the sender itself killed: an epoch other than the
		 * last that did not roll over), at most the buffers of each. */
		if (l > 0 &&
		    l > bound * (d + (e + 1 < epochs && !atomic_load(&se->rolled) ? 1 : 0)))
			over += l;
		if (got > n)
			over += got - n; /* arrived but never sent */
	}
	fprintf(out,
	        "%s sent=%" PRIu64 " received=%" PRIu64 " lost=%" PRIu64 " duplicated=%" PRIu64
	        " reordered=%" PRIu64 " epochs=%" PRIu32 " conn_deaths=%" PRIu64
	        " lost_bound=%" PRIu64 " over_bound=%" PRIu64 " reconnects=%" PRIu64
	        " max_reconnect_ms=%" PRIu64 " max_gap_ms=%" PRIu64 " retries=%" PRIu64
	        " repeats=%" PRIu64 " bad=%" PRIu64 " flush_ms=%" PRIu64 "\n",
	        o->role, sent, rx, lost, dups, reo, epochs, deaths, bound, over,
	        atomic_load(&s->reconnects), atomic_load(&s->max_reconnect_ms),
	        atomic_load(&r->max_gap_ms), atomic_load(&s->retries), repeats,
	        atomic_load(&r->bad) + atomic_load(&s->bad), atomic_load(&s->flush_ms));
	return dups == 0 && reo == 0 && over == 0 && atomic_load(&r->bad) == 0 ? 0 : 3;
}

static int
fp_report(const struct fp_opts *o)
{
	struct fp_state *s = fp_map(o->sstate, false), *r = fp_map(o->rstate, false);

	if (s == NULL || r == NULL)
		return 2;
	return fp_judge(s, r, o, stdout);
}

/* ---- selftest: the checks themselves can fail ---- */

/* Receives the seqs of epoch 0 listed in q; the sender sent n and saw d
 * disconnects; a dead connection may lose bound. Returns fp_judge's verdict. */
static int
fp_case(struct fp_state *s, struct fp_state *r, const uint64_t *q, size_t nq, uint64_t n,
        uint64_t d, uint64_t bound)
{
	struct fp_opts o = {.role = "selftest", .b_msgs = bound};
	uint8_t buf[FP_PAYLOAD];

	memset(s, 0, offsetof(struct fp_state, bits));
	memset(r, 0, sizeof *r);
	atomic_store(&s->epochs, 1);
	atomic_store(&s->ep[0].sent, n);
	atomic_store(&s->ep[0].sending, n);
	atomic_store(&s->ep[0].disconnects, d);
	for (size_t i = 0; i < nq; i++) {
		fp_encode(buf, 0, q[i]);
		fp_account(r, buf, sizeof buf);
	}
	return fp_judge(s, r, &o, stderr);
}

static int
fp_selftest(void)
{
	static const uint64_t all[] = {0, 1, 2, 3, 4, 5};
	static const uint64_t dup[] = {0, 1, 2, 2, 3, 4, 5};
	static const uint64_t reorder[] = {0, 1, 3, 2, 4, 5};
	static const uint64_t gap[] = {0, 1, 4, 5};
	static const uint64_t extra[] = {0, 1, 2, 3, 4, 5, 6};
	struct fp_state *s = calloc(1, sizeof *s), *r = calloc(1, sizeof *r);
	int bad = 0;

	if (s == NULL || r == NULL)
		return 2;
#define FP_EXPECT(want, ...)                                                               \
	do {                                                                               \
		if (fp_case(s, r, __VA_ARGS__) != (want)) {                                \
			fprintf(stderr, "selftest: line %d: want %d\n", __LINE__, (want)); \
			bad++;                                                             \
		}                                                                          \
	} while (0)
	FP_EXPECT(0, all, 6, 6, 0, 0);
	FP_EXPECT(3, dup, 7, 6, 0, 100);     /* a duplicate fails, whatever the bound */
	FP_EXPECT(3, reorder, 6, 6, 0, 100); /* so does a reorder */
	FP_EXPECT(3, gap, 4, 6, 0, 100);     /* loss on a connection that never died */
	FP_EXPECT(0, gap, 4, 6, 1, 2);       /* loss on a dead one, within its buffers */
	FP_EXPECT(3, gap, 4, 6, 1, 1);       /* ... and past them */
	FP_EXPECT(3, extra, 7, 6, 0, 0);     /* a message nobody sent */
	FP_EXPECT(0, all, 5, 6, 1, 1);       /* one lost where one connection died */
#undef FP_EXPECT
	free(s);
	free(r);
	printf("selftest: %s\n", bad ? "FAIL" : "ok");
	return bad ? 3 : 0;
}

static const char fp_usage[] =
	"usage: fault_peer ROLE -e ENDPOINT -s STATE [options]\n"
	"       fault_peer report -S SENDER_STATE -R RECEIVER_STATE -p NAME [bound]\n"
	"       fault_peer selftest   (the report's checks on made-up traffic)\n"
	"roles: push pull req rep bpub bsub\n"
	"  -r RATE     messages (requests) per second, 0: unpaced (default 1000)\n"
	"  -n COUNT    senders stop after COUNT (default: at SIGTERM)\n"
	"  -H IVL,TO   heartbeat interval and timeout, ms (default 0: none)\n"
	"  -w HWM      SNDHWM and RCVHWM (broker: read_ahead)\n"
	"  -k BYTES    SO_SNDBUF and SO_RCVBUF\n"
	"  -t MS       REQ: reply timeout before a retry (default 1000)\n"
	"  -l MS       sender's LINGER at the end (default 10000)\n"
	"report: -b MSGS -B BYTES -z WIRE: one dead connection may lose at most\n"
	"  MSGS + BYTES/WIRE messages\n";

int
main(int argc, char **argv)
{
	struct fp_opts o = {.rate = 1000, .req_timeout = 1000, .linger = 10000};
	struct sigaction sa = {.sa_handler = fp_on_signal};
	struct fp_state *st;
	zr_ctx *ctx;
	uint64_t t0;
	int opt, rc;

	if (argc < 2) {
		fputs(fp_usage, stderr);
		return 1;
	}
	o.role = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "e:s:S:R:p:r:n:H:w:k:t:l:b:B:z:")) != -1) {
		switch (opt) {
		case 'e':
			o.endpoint = optarg;
			break;
		case 's':
			o.state = optarg;
			break;
		case 'S':
			o.sstate = optarg;
			break;
		case 'R':
			o.rstate = optarg;
			break;
		case 'p':
			o.role = optarg;
			break;
		case 'r':
			o.rate = atof(optarg);
			break;
		case 'n':
			o.count = strtoull(optarg, NULL, 10);
			break;
		case 'H':
			if (sscanf(optarg, "%d,%d", &o.hb_ivl, &o.hb_timeout) < 1) {
				fputs(fp_usage, stderr);
				return 1;
			}
			break;
		case 'w':
			o.hwm = atoi(optarg);
			break;
		case 'k':
			o.kbuf = atoi(optarg);
			break;
		case 't':
			o.req_timeout = atoi(optarg);
			break;
		case 'l':
			o.linger = atoi(optarg);
			break;
		case 'b':
			o.b_msgs = strtoull(optarg, NULL, 10);
			break;
		case 'B':
			o.b_bytes = strtoull(optarg, NULL, 10);
			break;
		case 'z':
			o.b_wire = strtoull(optarg, NULL, 10);
			break;
		default:
			fputs(fp_usage, stderr);
			return 1;
		}
	}
	if (strcmp(argv[1], "selftest") == 0)
		return fp_selftest();
	if (strcmp(argv[1], "report") == 0) {
		if (o.sstate == NULL || o.rstate == NULL) {
			fputs(fp_usage, stderr);
			return 1;
		}
		return fp_report(&o);
	}
	if (o.endpoint == NULL || o.state == NULL) {
		fputs(fp_usage, stderr);
		return 1;
	}
	st = fp_map(o.state, true);
	if (st == NULL)
		return 2;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = fp_on_pause;
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	rc = zr_ctx_new(&ctx);
	if (rc < 0) {
		fprintf(stderr, "fault_peer: context: %s\n", zr_strerror(rc));
		return 2;
	}
	if (strcmp(o.role, "push") == 0)
		rc = fp_push(ctx, st, &o);
	else if (strcmp(o.role, "pull") == 0)
		rc = fp_pull(ctx, st, &o);
	else if (strcmp(o.role, "req") == 0)
		rc = fp_req(ctx, st, &o);
	else if (strcmp(o.role, "rep") == 0)
		rc = fp_rep(ctx, st, &o);
	else if (strcmp(o.role, "bpub") == 0)
		rc = fp_bpub(ctx, st, &o);
	else if (strcmp(o.role, "bsub") == 0)
		rc = fp_bsub(ctx, st, &o);
	else {
		fputs(fp_usage, stderr);
		rc = 1;
	}
	t0 = fp_now_ns();
	zr_ctx_free(ctx);
	/* A sender's close waits while its queue drains, up to LINGER: a flush
	 * that took that long may have dropped what it still held. */
	fp_max(&st->flush_ms, (fp_now_ns() - t0) / 1000000u);
	if (strcmp(o.role, "push") == 0 || strcmp(o.role, "bpub") == 0)
		printf("%s flush_ms=%" PRIu64 "\n", o.role, (fp_now_ns() - t0) / 1000000u);
	return rc;
}
