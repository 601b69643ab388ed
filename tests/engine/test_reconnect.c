/*
 * Reconnect: a zring PUSH connects to a libzmq PULL bound on a fixed port;
 * the peer process is SIGKILLed and started again on the same port. The
 * zring side redials by itself (RECONNECT_IVL) and traffic sent after the
 * peer is back arrives, in order. Messages sent while nobody listened may be
 * lost with the dead connection; they are told apart by a fence.
 */
#include "scenarios.h"
#include "sock_helpers.h"

#include <netinet/in.h>
#include <sys/socket.h>

TestSuite(reconnect, .fini = et_teardown, .timeout = 60);

/* Numbered messages 0..n-1 from push must reach the peer, in order. */
static void
rc_numbered(zr_socket *push, struct et_peer *p, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint8_t b[4] = {(uint8_t)(i >> 24), (uint8_t)(i >> 16), (uint8_t)(i >> 8),
		                (uint8_t)i};

		cr_assert_eq(zr_send_bytes(push, b, 4, 0), 0);
	}
	const char *r = et_peer_ask(p, 10000, "drain %u 5000", n);
	char want[64];

	snprintf(want, sizeof want, "DRAIN got=%u next=%u bad=0", n, n);
	cr_assert_str_eq(r, want);
	r = et_peer_ask(p, 1000, "count 200");
	cr_assert_str_eq(r, "COUNT 0");
}

static void
rc_kill_and_restart(bool ipc, int restarts)
{
	char ep[128];
	struct et_side push = {.name = "zring PUSH"}, pull = {.name = "libzmq PULL"};

	if (ipc)
		snprintf(ep, sizeof ep, "%s", et_peer_bind_ep(true));
	else
		snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", free_tcp_port());
	pull.p = et_peer_start("PULL", "bind", ep, NULL);
	push.z = et_zopen(0, ZR_PUSH);
	et_zopt_int(push.z, ZR_RECONNECT_IVL, 50);
	cr_assert_eq(zr_connect(push.z, ep), 0);
	et_sync(&push, &pull, "70726f6265", "66656e6365");
	rc_numbered(push.z, pull.p, 50);

	for (int round = 0; round < restarts; round++) {
		et_peers_stop(); /* SIGKILL */
		/* Sends while the peer is away are accepted (queued). */
		cr_assert_eq(zr_send_bytes(push.z, "lost?", 5, ZR_DONTWAIT), 0);
		zt_sleep_ms(150);
		pull.p = et_peer_start("PULL", "bind", ep, NULL);
		/* Probes until one gets through the new connection; whatever was
		 * queued meanwhile ("lost?") may come first and is skipped too. */
		uint64_t deadline = zt_now_ms() + ET_WAIT_MS;

		for (;;) {
			cr_assert_lt(zt_now_ms(), deadline,
			             "no message reached the restarted peer");
			et_send(&push, "70726f6265");
			const char *r = et_peer_ask(pull.p, 100, "recv 100");

			if (strcmp(r, "MSG 70726f6265") == 0)
				break;
			cr_assert(strcmp(r, "TIMEOUT") == 0 || strcmp(r, "MSG 6c6f73743f") == 0,
			          "restarted peer got %s", r);
		}
		et_send(&push, "66656e6365");
		const char *r =
			et_peer_ask(pull.p, ET_WAIT_MS, "skipuntil 66656e6365 %d", ET_WAIT_MS);

		cr_assert(strncmp(r, "SKIPPED", 7) == 0, "%s", r);
		rc_numbered(push.z, pull.p, 50);
	}
}

Test(reconnect, zring_push_resumes_after_its_libzmq_pull_is_killed_and_restarted_tcp)
{
	rc_kill_and_restart(false, 1);
}

Test(reconnect, zring_push_resumes_after_its_libzmq_pull_is_killed_and_restarted_ipc)
{
	rc_kill_and_restart(true, 1);
}

Test(reconnect, zring_push_survives_three_peer_restarts_tcp)
{
	rc_kill_and_restart(false, 3);
}

/* The other way: zring binds, the libzmq side dies and a new one connects. */
Test(reconnect, zring_pull_takes_a_new_libzmq_push_after_the_old_one_was_killed)
{
	zr_socket *pull = et_zopen(0, ZR_PULL);
	const char *ep = et_zbind(pull, false);
	char epc[256];

	snprintf(epc, sizeof epc, "%s", ep);
	struct et_side z = {.name = "zring PULL", .z = pull}, p = {.name = "libzmq PUSH"};

	p.p = et_peer_start("PUSH", "connect", epc, NULL);
	et_send(&p, "6f6e65");
	et_expect(&z, "6f6e65");
	et_peers_stop();
	p.p = et_peer_start("PUSH", "connect", epc, NULL);
	et_send(&p, "74776f");
	et_expect(&z, "74776f");
	et_expect_none(&z, ET_QUIET_MS);
}
