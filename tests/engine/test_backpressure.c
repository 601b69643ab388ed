/*
 * Backpressure against libzmq: a receiver that stops reading makes its
 * sender block (SNDTIMEO -> EAGAIN) after a bounded number of messages,
 * and once it reads again everything arrives exactly once, in order.
 *
 *   libzmq PUSH -> zring PULL (RCVHWM 10) that does not read
 *   zring PUSH (SNDHWM 10, ZR_DONTWAIT) -> libzmq PULL that does not read
 */
#include "scenarios.h"

#define BP_SIZE 1000     /* octets per message: fills kernel buffers fast */
#define BP_LIMIT 1000000 /* far more than any buffer holds */
#define BP_BUF 16384     /* SO_SNDBUF / SO_RCVBUF on both sides */

TestSuite(backpressure, .fini = et_teardown, .timeout = 60);

static uint32_t
bp_seq(const zr_msg *m)
{
	size_t len;
	const uint8_t *f = zr_msg_frame(m, 0, &len);

	cr_assert_eq(zr_msg_frames(m), 1);
	cr_assert_eq(len, BP_SIZE);
	return (uint32_t)f[0] << 24 | (uint32_t)f[1] << 16 | (uint32_t)f[2] << 8 | f[3];
}

static void
bp_zring_pull(bool ipc)
{
	zr_socket *pull = et_zopen(0, ZR_PULL);
	static const char *const opts[] = {"sndhwm=10", "sndbuf=16384", NULL};
	unsigned sent = 0, eagain = 0;

	et_zopt_int(pull, ZR_RCVHWM, 10);
	et_zopt_int(pull, ZR_RCVBUF, BP_BUF);
	const char *ep = et_zbind(pull, ipc);
	struct et_peer *p = et_peer_start("PUSH", "connect", ep, opts);
	/* Message 0 first, and seen: the connection is up. Before it, libzmq
	 * queues SNDHWM messages and then waits for the handshake, however long
	 * a loaded machine takes, which is not the block this test is about. */
	const char *r = et_peer_ask(p, ET_WAIT_MS, "flood 1 %d %d", ET_WAIT_MS, BP_SIZE);

	cr_assert_str_eq(r, "FLOOD sent=1 eagain=0");
	zr_msg *m = NULL;

	cr_assert_eq(zr_recv(pull, &m, 0), 0, "the libzmq PUSH never connected");
	cr_assert_eq(bp_seq(m), 0);
	zr_msg_free(m);
	m = NULL;
	/* The flood numbers from 0 again; it ends at the first send that
	 * waited 1 s in vain. */
	r = et_peer_ask(p, 30000, "flood %d 1000 %d", BP_LIMIT, BP_SIZE);

	cr_assert_eq(sscanf(r, "FLOOD sent=%u eagain=%u", &sent, &eagain), 2, "%s", r);
	cr_log_info(
		"libzmq PUSH -> zring PULL (RCVHWM 10, %s): the sender blocked after %u messages",
		ipc ? "ipc" : "tcp", sent);
	cr_assert_eq(eagain, 1, "the libzmq sender never blocked (%u sent)", sent);
	cr_assert_gt(sent, 10u);
	cr_assert_lt(sent, 100000u, "%u messages of %d octets did not make the sender wait", sent,
	             BP_SIZE);
	for (uint32_t i = 0; i < sent; i++) {
		int rc = zr_recv(pull, &m, 0);

		cr_assert_eq(rc, 0, "message %u of %u: %s", i, sent, zr_strerror(rc));
		uint32_t seq = bp_seq(m);

		zr_msg_free(m);
		m = NULL;
		cr_assert_eq(seq, i, "message %u carries seq %u", i, seq);
	}
	et_zopt_int(pull, ZR_RCVTIMEO, ET_QUIET_MS);
	int rc = zr_recv(pull, &m, 0);

	cr_assert_eq(rc, -EAGAIN, "a message beyond the %u sent arrived", sent);
	/* Traffic goes on after the pause. */
	r = et_peer_ask(p, ET_WAIT_MS, "flood 1 %d %d", ET_WAIT_MS, BP_SIZE);
	cr_assert_str_eq(r, "FLOOD sent=1 eagain=0");
	et_zopt_int(pull, ZR_RCVTIMEO, ET_WAIT_MS);
	cr_assert_eq(zr_recv(pull, &m, 0), 0);
	cr_assert_eq(bp_seq(m), 0);
	zr_msg_free(m);
}

Test(backpressure, a_zring_pull_that_stops_reading_blocks_a_libzmq_push_tcp)
{
	bp_zring_pull(false);
}

Test(backpressure, a_zring_pull_that_stops_reading_blocks_a_libzmq_push_ipc)
{
	bp_zring_pull(true);
}

static void
bp_zring_push(bool ipc)
{
	static const char *const opts[] = {"rcvhwm=10", "rcvbuf=16384", NULL};
	struct et_peer *p = et_peer_start("PULL", "bind", et_peer_bind_ep(ipc), opts);
	zr_socket *push = et_zopen(0, ZR_PUSH);
	uint8_t buf[BP_SIZE] = {0};
	uint32_t sent = 0;
	int rc = 0;

	et_zopt_int(push, ZR_SNDHWM, 10);
	et_zopt_int(push, ZR_SNDBUF, BP_BUF);
	cr_assert_eq(zr_connect(push, p->line + 9), 0);
	/* Message 0 blocking, and seen: the connection is up. */
	cr_assert_eq(zr_send_bytes(push, buf, sizeof buf, 0), 0);
	sent = 1;
	const char *r = et_peer_ask(p, 5000, "drain 1 5000");

	cr_assert_str_eq(r, "DRAIN got=1 next=1 bad=0");
	/* Flood with ZR_DONTWAIT until -EAGAIN holds for 300 ms (a transient
	 * -EAGAIN only means the io thread has not caught up yet). */
	int stuck = 0;

	while (stuck < 3) {
		cr_assert_lt(sent, (uint32_t)BP_LIMIT, "zr_send never returned -EAGAIN");
		buf[0] = (uint8_t)(sent >> 24);
		buf[1] = (uint8_t)(sent >> 16);
		buf[2] = (uint8_t)(sent >> 8);
		buf[3] = (uint8_t)sent;
		rc = zr_send_bytes(push, buf, sizeof buf, ZR_DONTWAIT);
		if (rc == 0) {
			sent++;
			stuck = 0;
			continue;
		}
		cr_assert_eq(rc, -EAGAIN, "zr_send: %s", zr_strerror(rc));
		stuck++;
		zt_sleep_ms(100);
	}
	cr_log_info(
		"zring PUSH (SNDHWM 10, %s) -> libzmq PULL (RCVHWM 10): -EAGAIN after %u messages",
		ipc ? "ipc" : "tcp", sent);
	cr_assert_lt(sent, 100000u);
	/* The peer reads again: messages 1 .. sent-1, in order, then nothing. */
	r = et_peer_ask(p, 20000, "drain %u 5000 1", sent - 1);
	unsigned got = 0, next = 0, bad = 0;

	cr_assert_eq(sscanf(r, "DRAIN got=%u next=%u bad=%u", &got, &next, &bad), 3, "%s", r);
	cr_assert_eq(got, sent - 1, "the peer got %u of %u", got, sent - 1);
	cr_assert_eq(bad, 0u, "out of order: %s", r);
	cr_assert_eq(next, sent);
	r = et_peer_ask(p, 1000, "count %d", ET_QUIET_MS);
	cr_assert_str_eq(r, "COUNT 0");
	/* And the socket takes messages again. */
	cr_assert_eq(zr_send_bytes(push, buf, 4, ZR_DONTWAIT), 0);
	r = et_peer_ask(p, 5000, "recv 5000");
	cr_assert(strncmp(r, "MSG ", 4) == 0, "%s", r);
}

Test(backpressure, a_libzmq_pull_that_stops_reading_makes_zring_push_eagain_tcp)
{
	bp_zring_push(false);
}

Test(backpressure, a_libzmq_pull_that_stops_reading_makes_zring_push_eagain_ipc)
{
	bp_zring_push(true);
}
