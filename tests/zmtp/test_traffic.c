/*
 * What counts as traffic from the peer for the heartbeat: new bytes do;
 * bytes the caller re-presents because the codec left them unconsumed
 * (a partial frame header) do not, or a dead peer would never time out.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <zring/zmtp.h>

/* Drives a NULL PULL codec through the handshake with a hand-written PUSH
 * peer (RFC 23 bytes), heartbeats every 100 ms, timeout 300 ms. */
static void
ready_pull(struct zr_zmtp *z)
{
	static uint8_t greeting[64] = {0xff, 0,    0, 0, 0,   0,   0,   0,
	                               1,    0x7f, 3, 1, 'N', 'U', 'L', 'L'};
	static uint8_t ready[] = {0x04, 0x1a, 0x05, 'R', 'E', 'A', 'D', 'Y', 0x0b, 'S',
	                          'o',  'c',  'k',  'e', 't', '-', 'T', 'y', 'p',  'e',
	                          0,    0,    0,    4,   'P', 'U', 'S', 'H'};
	struct zr_zmtp_config cfg;
	struct zr_zmtp_event ev;
	const uint8_t *out;
	size_t used;

	zr_zmtp_config_default(&cfg, ZR_PULL);
	cfg.heartbeat_ivl_ms = 100;
	cfg.heartbeat_timeout_ms = 300;
	cr_assert_eq(zr_zmtp_init(z, &cfg, 0), 0);
	cr_assert_eq(zr_zmtp_feed(z, greeting, sizeof greeting, &used, &ev, 0), ZR_NEED_MORE);
	cr_assert_eq(used, 64u);
	cr_assert_eq(zr_zmtp_feed(z, ready, sizeof ready, &used, &ev, 0), ZR_OK);
	cr_assert_eq(ev.type, ZR_ZMTP_EV_READY);
	zr_zmtp_out_ack(z, zr_zmtp_out(z, &out));
}

Test(zmtp_traffic, re_presented_leftover_bytes_do_not_keep_a_silent_peer_alive)
{
	static uint8_t partial[] = {0x02}; /* a long-frame header, 1 of 9 octets */
	struct zr_zmtp z;
	struct zr_zmtp_event ev;
	size_t used;
	uint64_t now = 0;

	ready_pull(&z);
	cr_assert_eq(zr_zmtp_feed(&z, partial, 1, &used, &ev, 0), ZR_NEED_MORE);
	cr_assert_eq(used, 0u);
	/* The peer says nothing more; the caller keeps re-presenting its byte. */
	for (now = 10; now < 2000; now += 10) {
		int rc = zr_zmtp_tick(&z, now);

		if (rc < 0) {
			cr_assert_eq(rc, -ZR_EHEARTBEAT_TIMEOUT);
			break;
		}
		cr_assert_eq(zr_zmtp_feed(&z, partial, 1, &used, &ev, now), ZR_NEED_MORE);
	}
	cr_assert_lt(now, 2000u, "the silent peer never timed out");
	cr_assert_leq(now, 100u + 300u + 10u, "timed out only at %llu ms", (unsigned long long)now);
}

Test(zmtp_traffic, new_bytes_after_a_leftover_count_as_traffic)
{
	static uint8_t msg[] = {0x00, 0x01, 'x'};
	struct zr_zmtp z;
	struct zr_zmtp_event ev;
	size_t used;

	ready_pull(&z);
	cr_assert_eq(zr_zmtp_feed(&z, msg, 1, &used, &ev, 50), ZR_NEED_MORE);
	cr_assert_eq(zr_zmtp_tick(&z, 100), 0); /* PING goes out, the timeout starts */
	/* The rest of the frame arrives (the leftover plus new bytes) before the
	 * timeout: the peer is alive. */
	cr_assert_eq(zr_zmtp_feed(&z, msg, sizeof msg, &used, &ev, 350), ZR_OK);
	cr_assert_eq(ev.type, ZR_ZMTP_EV_FRAME);
	cr_assert_eq(zr_zmtp_tick(&z, 420), 0, "new bytes at 350 ms must refresh liveness");
}
