/*
 * What counts as traffic from the peer for the heartbeat: new bytes do;
 * bytes the caller re-presents because the codec left them unconsumed
 * (a partial frame header) do not, or a dead peer would never time out.
 * And the traffic fast path (zr_zmtp_feed_msgs): which frames it takes,
 * where it stops, and the same rule for the messages its caller gives back.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <zring/zmtp.h>

/* Drives a NULL PULL codec through the handshake with a hand-written PUSH
 * peer (RFC 23 bytes), heartbeats every 100 ms, timeout 300 ms. */
static void
ready_pull_max(struct zr_zmtp *z, uint64_t max_msg_size)
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
	cfg.max_msg_size = max_msg_size;
	cr_assert_eq(zr_zmtp_init(z, &cfg, 0), 0);
	cr_assert_eq(zr_zmtp_feed(z, greeting, sizeof greeting, &used, &ev, 0), ZR_NEED_MORE);
	cr_assert_eq(used, 64u);
	cr_assert_eq(zr_zmtp_feed(z, ready, sizeof ready, &used, &ev, 0), ZR_OK);
	cr_assert_eq(ev.type, ZR_ZMTP_EV_READY);
	zr_zmtp_out_ack(z, zr_zmtp_out(z, &out));
}

static void
ready_pull(struct zr_zmtp *z)
{
	ready_pull_max(z, ZR_ZMTP_DEFAULT_MAX_MSG_SIZE);
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

/* ---- the fast path ------------------------------------------------------ */

/* The event zr_zmtp_feed makes of the next frame at buf. */
static void
next_frame_is(struct zr_zmtp *z, uint8_t *buf, size_t len, size_t *used, const char *body,
              unsigned flags)
{
	struct zr_zmtp_event ev;

	cr_assert_eq(zr_zmtp_feed(z, buf, len, used, &ev, 0), ZR_OK);
	cr_assert_eq(ev.type, ZR_ZMTP_EV_FRAME);
	cr_assert_eq(ev.len, strlen(body));
	cr_assert(memcmp(ev.data, body, ev.len) == 0);
	cr_assert_eq(ev.flags, flags | ZR_ZMTP_FRAME_END);
}

Test(zmtp_traffic, feed_msgs_takes_whole_short_final_frames_and_stops_at_anything_else)
{
	/* clang-format off */
	static uint8_t in[] = {
		0x00, 1, 'a', 0x00, 0, 0x00, 3, 'b', 'c', 'd', /* three messages */
		0x01, 1, 'm', 0x00, 1, 'n',                    /* one of two frames */
		0x02, 0, 0, 0, 0, 0, 0, 0, 1, 'l',             /* a long header */
		0x00, 1, 'p',                                  /* one again */
		0x04, 7, 4, 'P', 'I', 'N', 'G', 0, 0,          /* a command */
		0x00, 1, 'q', 0x00, 1, 'r', 0x00, 1, 's',      /* three */
		0x00, 5, 'x',                                  /* not all there */
	};
	/* clang-format on */
	struct zr_zmtp_msg out[4];
	struct zr_zmtp z;
	size_t off = 0, used = 99;

	ready_pull(&z);
	cr_assert_eq(zr_zmtp_feed_msgs(&z, in, sizeof in, &used, out, 4, 0), 3u);
	cr_assert_eq(used, 10u);
	cr_assert(out[0].data == in + 2 && out[0].len == 1);
	cr_assert(out[1].data == in + 5 && out[1].len == 0);
	cr_assert(out[2].data == in + 7 && out[2].len == 3);
	off += used;
	/* A frame with MORE: left to zr_zmtp_feed, and nothing taken until the
	 * message it opened is over. */
	cr_assert_eq(zr_zmtp_feed_msgs(&z, in + off, sizeof in - off, &used, out, 4, 0), 0u);
	cr_assert_eq(used, 0u);
	next_frame_is(&z, in + off, sizeof in - off, &used, "m", ZR_ZMTP_MORE);
	off += used;
	cr_assert_eq(zr_zmtp_feed_msgs(&z, in + off, sizeof in - off, &used, out, 4, 0), 0u);
	next_frame_is(&z, in + off, sizeof in - off, &used, "n", 0);
	off += used;
	/* A long header, even of a short body. */
	cr_assert_eq(zr_zmtp_feed_msgs(&z, in + off, sizeof in - off, &used, out, 4, 0), 0u);
	next_frame_is(&z, in + off, sizeof in - off, &used, "l", 0);
	off += used;
	cr_assert_eq(zr_zmtp_feed_msgs(&z, in + off, sizeof in - off, &used, out, 4, 0), 1u);
	cr_assert(out[0].data == in + off + 2 && out[0].len == 1 && used == 3);
	off += used;
	/* A command: zr_zmtp_feed takes it (a PING, answered without an event)
	 * and hands out the frame after it. */
	cr_assert_eq(zr_zmtp_feed_msgs(&z, in + off, sizeof in - off, &used, out, 4, 0), 0u);
	next_frame_is(&z, in + off, sizeof in - off, &used, "q", 0);
	cr_assert_eq(used, 9u + 3u);
	off += used;
	/* No more than max at a time. */
	cr_assert_eq(zr_zmtp_feed_msgs(&z, in + off, sizeof in - off, &used, out, 1, 0), 1u);
	cr_assert(out[0].data == in + off + 2 && out[0].len == 1 && used == 3);
	off += used;
	cr_assert_eq(zr_zmtp_feed_msgs(&z, in + off, sizeof in - off, &used, out, 4, 0), 1u);
	off += used;
	/* A body not all there: nothing. */
	cr_assert_eq(zr_zmtp_feed_msgs(&z, in + off, sizeof in - off, &used, out, 4, 0), 0u);
	cr_assert_eq(used, 0u);
	cr_assert_eq(off, sizeof in - 3);
	cr_assert_eq(zr_zmtp_error(&z), 0);
}

Test(zmtp_traffic, feed_msgs_takes_nothing_before_traffic_nor_what_the_limits_refuse)
{
	static uint8_t greeting[64] = {0xff, 0,    0, 0, 0,   0,   0,   0,
	                               1,    0x7f, 3, 1, 'N', 'U', 'L', 'L'};
	static uint8_t big[] = {0x00, 5, 'a', 'b', 'c', 'd', 'e'};
	static uint8_t msg[] = {0x00, 1, 'x'};
	struct zr_zmtp_config cfg;
	struct zr_zmtp_msg out[4];
	struct zr_zmtp_event ev;
	struct zr_zmtp z;
	size_t used = 99;

	zr_zmtp_config_default(&cfg, ZR_PULL);
	cr_assert_eq(zr_zmtp_init(&z, &cfg, 0), 0);
	cr_assert_eq(zr_zmtp_feed_msgs(&z, msg, sizeof msg, &used, out, 4, 0), 0u);
	cr_assert_eq(used, 0u);
	cr_assert_eq(zr_zmtp_feed(&z, greeting, sizeof greeting, &used, &ev, 0), ZR_NEED_MORE);
	cr_assert_eq(zr_zmtp_feed_msgs(&z, msg, sizeof msg, &used, out, 4, 0), 0u,
	             "a message before READY is zr_zmtp_feed's to refuse");
	cr_assert_eq(zr_zmtp_feed(&z, msg, sizeof msg, &used, &ev, 0), -ZR_EEARLYMSG);

	/* Over MAXMSGSIZE (4): left for zr_zmtp_feed, which refuses it; and
	 * nothing after an error. */
	ready_pull_max(&z, 4);
	cr_assert_eq(zr_zmtp_feed_msgs(&z, big, sizeof big, &used, out, 4, 0), 0u);
	cr_assert_eq(zr_zmtp_feed(&z, big, sizeof big, &used, &ev, 0), -ZR_ETOOLARGE);
	cr_assert_eq(zr_zmtp_feed_msgs(&z, msg, sizeof msg, &used, out, 4, 0), 0u);
	cr_assert_eq(used, 0u);
}

/* The messages a caller gives back were traffic when they came, not again
 * when it presents them once more; new bytes with them are. */
Test(zmtp_traffic, messages_given_back_are_not_traffic_again)
{
	static uint8_t two[] = {0x00, 1, 'a', 0x00, 1, 'b'};
	static uint8_t more[] = {0x00, 1, 'b', 0x00, 1, 'c'};
	struct zr_zmtp_msg out[4];
	struct zr_zmtp z;
	size_t used;

	ready_pull(&z);
	cr_assert_eq(zr_zmtp_feed_msgs(&z, two, sizeof two, &used, out, 4, 50), 2u);
	zr_zmtp_unfeed_msgs(&z, 3);             /* the caller took only the first */
	cr_assert_eq(zr_zmtp_tick(&z, 100), 0); /* PING goes out, the timeout starts */
	cr_assert_eq(zr_zmtp_feed_msgs(&z, two + 3, 3, &used, out, 4, 350), 1u);
	cr_assert_eq(zr_zmtp_tick(&z, 420), -ZR_EHEARTBEAT_TIMEOUT,
	             "a message given back and taken again kept a silent peer alive");

	ready_pull(&z);
	cr_assert_eq(zr_zmtp_feed_msgs(&z, two, sizeof two, &used, out, 4, 50), 2u);
	zr_zmtp_unfeed_msgs(&z, 3);
	cr_assert_eq(zr_zmtp_tick(&z, 100), 0);
	/* The one given back and a new one after it. */
	cr_assert_eq(zr_zmtp_feed_msgs(&z, more, sizeof more, &used, out, 4, 350), 2u);
	cr_assert_eq(zr_zmtp_tick(&z, 420), 0, "new bytes at 350 ms must refresh liveness");
}
