/*
 * The routing pass's run (zr__conn_send_run): a PUSH, DEALER or PAIR with
 * one peer moves the messages behind the one it routed straight from the
 * socket's handoff into that peer's send queue. It must take exactly what
 * zr__conn_send, one message at a time, would have taken: up to SNDHWM
 * messages, and while the queue is under SNDBYTES (an empty queue takes
 * any one), in order, across the growth of the connection's queue and of
 * the handoff's ring, counting what it took for the pass. Checked here on a
 * socket and connection built by hand, so every limit is hit exactly.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

struct run_fixture {
	struct zr_socket s;
	struct zr__conn c;
};

/* An active tcp connection of a socket inside a routing pass (its sends
 * only list it for the pass's end), its queue the usual 16 slots, and a
 * handoff whose first ring holds first slots of its limit. */
static struct run_fixture *
run_fixture(int sndhwm, int64_t sndbytes, size_t limit, size_t first)
{
	struct run_fixture *f = calloc(1, sizeof *f);

	cr_assert_not_null(f);
	f->s.opt.sndhwm = sndhwm;
	f->s.opt.sndbytes = sndbytes;
	f->s.tx_routing = true;
	cr_assert_eq(zr__spsc_init_first(&f->s.tx, limit, first), 0);
	f->c.sock = &f->s;
	f->c.state = ZR__CONN_ACTIVE;
	f->c.out_cap = 16;
	f->c.outq = calloc(f->c.out_cap, sizeof *f->c.outq);
	cr_assert_not_null(f->c.outq);
	f->s.conns = &f->c;
	return f;
}

static void
run_fixture_free(struct run_fixture *f)
{
	zr_msg *m;

	for (size_t i = 0; i < f->c.out_n; i++)
		zr_msg_free(*zr__conn_outq(&f->c, i));
	while ((m = zr__spsc_pop(&f->s.tx)) != NULL)
		zr_msg_free(m);
	free(f->c.outq);
	zr__spsc_fini(&f->s.tx);
	free(f);
}

/* Message number seq: len octets (at least 4), seq in the first four. */
static zr_msg *
numbered(uint32_t seq, size_t len)
{
	uint8_t buf[256] = {0};
	zr_msg *m;

	cr_assert(len >= sizeof seq && len <= sizeof buf);
	memcpy(buf, &seq, sizeof seq);
	cr_assert_eq(zr_msg_new(&m), 0);
	cr_assert_eq(zr_msg_add(m, buf, len), 0);
	return m;
}

static uint32_t
number_of(const zr_msg *m)
{
	size_t len;
	const uint8_t *p = zr_msg_frame(m, 0, &len);
	uint32_t seq;

	cr_assert_geq(len, sizeof seq);
	memcpy(&seq, p, sizeof seq);
	return seq;
}

/* Messages from..to-1, each len octets, into the handoff, as the app's sends would. */
static void
handoff(struct run_fixture *f, uint32_t from, uint32_t to, size_t len)
{
	for (uint32_t i = from; i < to; i++)
		cr_assert(zr__spsc_push(&f->s.tx, numbered(i, len)), "handoff full at %u", i);
}

/* The connection's queue holds messages from..to-1, in order, and their cost. */
static void
queue_holds(const struct run_fixture *f, uint32_t from, uint32_t to, size_t cost)
{
	cr_assert_eq(f->c.out_n, (size_t)(to - from), "%zu queued, not %u", f->c.out_n, to - from);
	for (size_t i = 0; i < f->c.out_n; i++)
		cr_assert_eq(number_of(*zr__conn_outq(&f->c, i)), from + (uint32_t)i, "slot %zu",
		             i);
	cr_assert_eq(f->c.out_bytes, (uint64_t)(to - from) * cost);
}

Test(engine_send_run, it_stops_at_sndhwm_and_leaves_the_rest_in_the_handoff)
{
	struct run_fixture *f = run_fixture(10, 0, 16, 16);
	const size_t cost = 8 + sizeof(struct zr__span);

	handoff(f, 0, 16, 8);
	cr_assert_eq(zr__conn_send_run(&f->c), 10u);
	queue_holds(f, 0, 10, cost);
	cr_assert_eq(zr__spsc_count(&f->s.tx), 6u, "the six SNDHWM refused stay in the handoff");
	cr_assert_eq(number_of(zr__spsc_peek(&f->s.tx)), 10u);
	/* Counted for the pass, which tells the app of the room. */
	cr_assert_eq(f->s.tx_pass_msgs, 10u);
	cr_assert_eq(f->s.tx_pass_taken, 10 * cost);
	/* Listed once for the pass's end: its one send of the batch. */
	cr_assert_eq(f->s.tx_kicks, &f->c);
	cr_assert(f->c.tx_kick_queued);
	cr_assert_null(f->c.tx_kick_next);
	/* Full: nothing more, and nothing taken. */
	cr_assert_eq(zr__conn_send_run(&f->c), 0u);
	cr_assert_eq(zr__spsc_count(&f->s.tx), 6u);
	cr_assert_eq(f->s.tx_pass_msgs, 10u);
	run_fixture_free(f);
}

/* queued messages of len octets in the handoff; the run takes want of
 * them, in order, and leaves the rest. */
static void
run_takes(int sndhwm, int64_t sndbytes, uint32_t queued, size_t len, uint32_t want)
{
	struct run_fixture *f = run_fixture(sndhwm, sndbytes, 16, 16);

	handoff(f, 0, queued, len);
	cr_assert_eq(zr__conn_send_run(&f->c), (size_t)want);
	queue_holds(f, 0, want, len + sizeof(struct zr__span));
	cr_assert_eq(zr__spsc_count(&f->s.tx), (size_t)(queued - want));
	run_fixture_free(f);
}

Test(engine_send_run, it_takes_while_the_queue_is_under_sndbytes)
{
	/* 100 octets cost 116: under a budget of 5 * 116 + 1, five queued
	 * leave it under by one octet, so a sixth goes in and the queue
	 * ends one message over, as zr__conn_has_room lets it. */
	const size_t cost = 100 + sizeof(struct zr__span);

	run_takes(0, (int64_t)(5 * cost + 1), 16, 100, 6);
	/* A budget of exactly five: five. */
	run_takes(0, (int64_t)(5 * cost), 16, 100, 5);
	/* An empty queue takes one message whatever its cost. */
	run_takes(0, 10, 4, 100, 1);
	/* SNDHWM first when it is the tighter. */
	run_takes(3, (int64_t)(5 * cost), 16, 100, 3);
}

Test(engine_send_run, order_holds_across_the_growth_of_both_queues)
{
	/* The connection's ring (16 slots) wraps before it grows: its head
	 * is at slot 11 with three messages left of an earlier batch. The
	 * handoff starts with a ring of 4 slots and links larger ones as the
	 * app's sends fill it. */
	struct run_fixture *f = run_fixture(0, 0, 1024, 4);
	const size_t cost = 8 + sizeof(struct zr__span);
	uint32_t seq = 0;

	f->c.out_head = 11;
	for (; seq < 3; seq++) {
		*zr__conn_outq(&f->c, f->c.out_n) = numbered(seq, 8);
		f->c.out_n++;
		f->c.out_bytes += cost;
	}
	handoff(f, 3, 300, 8);
	cr_assert_eq(zr__conn_send_run(&f->c), 297u);
	queue_holds(f, 0, 300, cost);
	cr_assert_null(zr__spsc_peek(&f->s.tx));
	cr_assert_eq(f->s.tx_pass_msgs, 297u);

	/* And a later run goes on behind them. */
	handoff(f, 300, 310, 8);
	cr_assert_eq(zr__conn_send_run(&f->c), 10u);
	queue_holds(f, 0, 310, cost);
	run_fixture_free(f);
}

Test(engine_send_run, a_connection_not_up_or_an_inproc_pipe_takes_no_run)
{
	struct run_fixture *f = run_fixture(0, 0, 16, 16);

	handoff(f, 0, 4, 8);
	f->c.state = ZR__CONN_HANDSHAKE;
	cr_assert_eq(zr__conn_send_run(&f->c), 0u, "not up yet");
	f->c.state = ZR__CONN_ACTIVE;
	f->c.inproc = true; /* its messages are handed over one by one */
	f->c.twin = &f->c;  /* attached (not live: nothing is handed over) */
	cr_assert_eq(zr__conn_send_run(&f->c), 0u, "inproc");
	cr_assert_eq(zr__spsc_count(&f->s.tx), 4u);
	cr_assert_null(f->s.tx_kicks, "nothing queued, nothing to send");
	f->c.inproc = false;
	f->c.twin = NULL;
	run_fixture_free(f);
}
