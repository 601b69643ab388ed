/*
 * The straight paths (socket.c, sock_tx_straight and sock_rx_straight): a
 * send that finds a spare message, and a receive that finds a message
 * queued, skip the general call. They must keep every rule that call keeps.
 * Each test here first makes the straight path possible (spares in the
 * ring, messages in rx), then checks one rule: a bound PUSH with no peer
 * left does not queue, REQ and REP keep their strict order, and a receiver
 * that frees half of its queue lets a paused connection go on.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <string.h>

#include "engine/engine.h"
#include "sock_helpers.h"
#include "zt_clock.h"
#include <zring/zring.h>

#define STRAIGHT_WAIT_MS 5000

TestSuite(straight, .timeout = 40);

/* A context, a socket of type bt bound to a tcp port (its RCVHWM rcvhwm,
 * unless 0) and one of type ct connected to it; both receive with a
 * bounded wait. */
static void
straight_open(int bt, int rcvhwm, int ct, zr_ctx **ctx, zr_socket **bound, zr_socket **conn)
{
	char ep[128];

	cr_assert_eq(zr_ctx_new(ctx), 0);
	cr_assert_eq(zr_socket_open(*ctx, bt, bound), 0);
	cr_assert_eq(zr_socket_open(*ctx, ct, conn), 0);
	if (rcvhwm > 0)
		sopt_int(*bound, ZR_RCVHWM, rcvhwm);
	sopt_int(*bound, ZR_RCVTIMEO, STRAIGHT_WAIT_MS);
	sopt_int(*conn, ZR_RCVTIMEO, STRAIGHT_WAIT_MS);
	sock_bind_connect(*bound, "tcp://127.0.0.1:*", *conn, ep, sizeof ep);
}

/* A few messages through a fresh pair, so the sender holds spares. */
static void
straight_warm(zr_socket *tx, zr_socket *rx, int n)
{
	char got[16];

	for (int i = 0; i < n; i++) {
		char m[4] = {'w', (char)('0' + i / 10), (char)('0' + i % 10), 0};

		cr_assert_eq(zr_send_bytes(tx, m, 3, 0), 0, "warm-up send %d", i);
		cr_assert_eq(zr_recv_bytes(rx, got, sizeof got, 0), 3, "warm-up receive %d", i);
		cr_assert_eq(memcmp(got, m, 3), 0);
	}
}

/* libzmq's PUSH blocks while it has no pipe; zring's counts peers the same
 * way, and a send that has spares to fill must still wait (and time out). */
Test(straight, a_bound_push_whose_peer_left_queues_nothing_even_with_spares)
{
	zr_ctx *ctx;
	zr_socket *push, *pull;
	zr_msg *m;

	straight_open(ZR_PUSH, 0, ZR_PULL, &ctx, &push, &pull);
	straight_warm(push, pull, 20);
	cr_assert_not_null(zr__spsc_peek(&push->tx_spare), "the sender holds spares");

	sopt_int(pull, ZR_LINGER, 0);
	zr_socket_close(pull);
	uint64_t t0 = zt_now_ms();
	while (atomic_load(&push->npipes) != 0) {
		cr_assert_lt(zt_now_ms() - t0, (uint64_t)STRAIGHT_WAIT_MS,
		             "the PUSH never saw its peer leave");
		sleep_ms(5);
	}
	cr_assert_not_null(zr__spsc_peek(&push->tx_spare), "still spares to fill");
	cr_assert_eq(zr_send_bytes(push, "late", 4, ZR_DONTWAIT), -EAGAIN);
	/* Larger than a spare's buffer: the bytes go in by zr_msg_add first. */
	static char big[8192];
	cr_assert_eq(zr_send_bytes(push, big, sizeof big, ZR_DONTWAIT), -EAGAIN);
	sopt_int(push, ZR_SNDTIMEO, 20);
	cr_assert_eq(zr_send_bytes(push, "late", 4, 0), -EAGAIN);
	cr_assert_eq(zr_msg_new(&m), 0);
	cr_assert_eq(zr_msg_add(m, "late", 4), 0);
	cr_assert_eq(zr_send(push, &m, ZR_DONTWAIT), -EAGAIN);
	cr_assert_not_null(m, "a refused message stays the caller's");
	zr_msg_free(m);
	cr_assert_null(zr__spsc_peek(&push->tx), "nothing was queued");
	sopt_int(push, ZR_LINGER, 0);
	zr_socket_close(push);
	zr_ctx_free(ctx);
}

/* REQ and REP are not plain: their sends and receives keep the strict
 * order and the envelope however many spares and messages they hold. */
Test(straight, req_and_rep_keep_their_order_and_envelope_with_spares_and_queued_messages)
{
	zr_ctx *ctx;
	zr_socket *req, *rep;
	char got[16];
	zr_msg *m;

	straight_open(ZR_REP, 0, ZR_REQ, &ctx, &rep, &req);
	for (int i = 0; i < 20; i++) {
		char q[3] = {'q', (char)('0' + i / 10), (char)('0' + i % 10)};
		char a[3] = {'a', q[1], q[2]};

		cr_assert_eq(zr_send_bytes(req, q, sizeof q, 0), 0, "request %d", i);
		/* REP's receive takes the envelope off: three octets, no more. */
		cr_assert_eq(zr_recv_bytes(rep, got, sizeof got, 0), 3, "request %d", i);
		cr_assert_eq(memcmp(got, q, 3), 0);
		cr_assert_eq(zr_send_bytes(rep, a, sizeof a, 0), 0, "reply %d", i);
		cr_assert_eq(zr_recv_bytes(req, got, sizeof got, 0), 3, "reply %d", i);
		cr_assert_eq(memcmp(got, a, 3), 0);
	}
	cr_assert_not_null(zr__spsc_peek(&req->tx_spare), "REQ holds spares");
	cr_assert_not_null(zr__spsc_peek(&rep->tx_spare), "REP holds spares");

	cr_assert_eq(zr_send_bytes(req, "q20", 3, 0), 0);
	cr_assert_eq(zr_send_bytes(req, "q21", 3, ZR_DONTWAIT), -EFSM, "a second request");
	cr_assert_eq(zr_msg_new(&m), 0);
	cr_assert_eq(zr_msg_add(m, "q21", 3), 0);
	cr_assert_eq(zr_send(req, &m, ZR_DONTWAIT), -EFSM);
	zr_msg_free(m);
	cr_assert_eq(zr_send_bytes(rep, "a??", 3, ZR_DONTWAIT), -EFSM, "a reply to nothing");
	/* The request is queued at REP before REP takes it. */
	uint64_t t0 = zt_now_ms();
	while (zr__spsc_count(&rep->rx) == 0) {
		cr_assert_lt(zt_now_ms() - t0, (uint64_t)STRAIGHT_WAIT_MS, "no request came");
		sleep_ms(2);
	}
	cr_assert_eq(zr_recv_bytes(rep, got, sizeof got, 0), 3);
	cr_assert_eq(memcmp(got, "q20", 3), 0);
	cr_assert_eq(zr_recv_bytes(rep, got, sizeof got, ZR_DONTWAIT), -EFSM, "a second receive");
	cr_assert_eq(zr_send_bytes(rep, "a20", 3, 0), 0);
	cr_assert_eq(zr_recv_bytes(req, got, sizeof got, 0), 3);
	cr_assert_eq(memcmp(got, "a20", 3), 0);
	sock_pair_free(ctx, req, rep);
}

/* A connection paused on a full rx goes on once half of rx is free, while
 * the receiver still has messages to take: the receive that frees that half
 * tells the io thread, whichever path it took. */
Test(straight, a_receive_that_frees_half_of_rx_lets_the_paused_connection_go_on)
{
	const int hwm = 100, total = 2000;
	zr_ctx *ctx;
	zr_socket *push, *pull;
	char got[16];
	int next = 0;

	straight_open(ZR_PULL, hwm, ZR_PUSH, &ctx, &pull, &push);
	for (int i = 0; i < total; i++) {
		char m[4] = {(char)(i >> 8), (char)i, 'p', 0};

		cr_assert_eq(zr_send_bytes(push, m, 3, 0), 0, "send %d", i);
	}
	for (int round = 0; round < 3; round++) {
		/* Full, and paused on it. */
		uint64_t t0 = zt_now_ms();
		while (zr__spsc_count(&pull->rx) < (size_t)hwm || !atomic_load(&pull->rx_paused)) {
			cr_assert_lt(zt_now_ms() - t0, (uint64_t)STRAIGHT_WAIT_MS,
			             "round %d: rx never filled (%zu)", round,
			             zr__spsc_count(&pull->rx));
			sleep_ms(2);
		}
		/* Take half: the last receive brings rx down to the mark where
		 * the paused connection goes on (hwm / 2), and the rest stays
		 * queued. None after it, or the io thread may fill rx and pause
		 * again while those are taken, short of full. */
		for (int k = 0; k < hwm - hwm / 2; k++, next++) {
			cr_assert_eq(zr_recv_bytes(pull, got, sizeof got, 0), 3, "message %d",
			             next);
			cr_assert_eq((unsigned char)got[0], (unsigned char)(next >> 8));
			cr_assert_eq((unsigned char)got[1], (unsigned char)next);
		}
		/* The io thread fills rx again without another receive. */
		t0 = zt_now_ms();
		while (zr__spsc_count(&pull->rx) <= (size_t)(hwm / 2)) {
			cr_assert_lt(zt_now_ms() - t0, (uint64_t)STRAIGHT_WAIT_MS,
			             "round %d: the paused connection stayed paused", round);
			sleep_ms(2);
		}
	}
	for (; next < total; next++) {
		cr_assert_eq(zr_recv_bytes(pull, got, sizeof got, 0), 3, "message %d", next);
		cr_assert_eq((unsigned char)got[0], (unsigned char)(next >> 8));
		cr_assert_eq((unsigned char)got[1], (unsigned char)next);
	}
	sock_pair_free(ctx, push, pull);
}
