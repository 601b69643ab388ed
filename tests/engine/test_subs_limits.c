/*
 * What one subscriber may hold on a PUB: ZR_SUBS_MAX subscriptions costing
 * at most ZR_SUBS_MAXBYTES (a topic's bytes + 352 per distinct topic). A
 * hand-written peer (raw_peer.h) goes to the limit and one past it, in the
 * ZMTP 3.1 command form and the 3.0 message form; past it the PUB closes
 * the connection with a DISCONNECTED event that says why. A flood of
 * 100,000 distinct SUBSCRIBEs is cut off at the default limit and a libzmq
 * SUB connecting afterwards still gets what is published.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include <zring/zring.h>

#include "pyspawn.h"
#include "raw_peer.h"
#include "sock_helpers.h"

#define WAIT 20000

static zr_socket *
pub_open(zr_ctx **ctx, char *ep, size_t cap, int subs_max, int64_t subs_maxbytes)
{
	zr_socket *pub;

	cr_assert_eq(zr_ctx_new(ctx), 0);
	cr_assert_eq(zr_socket_open(*ctx, ZR_PUB, &pub), 0);
	sopt_int(pub, ZR_SUBS_MAX, subs_max);
	sopt_i64(pub, ZR_SUBS_MAXBYTES, subs_maxbytes);
	cr_assert_eq(zr_socket_monitor(pub, ZR_EVENT_DISCONNECTED), 0);
	cr_assert_eq(zr_bind(pub, "tcp://127.0.0.1:0"), 0);
	endpoint_of(pub, ep, cap);
	return pub;
}

/* Publishes text until the raw peer receives it: every subscription it sent
 * before has then been taken in (one connection is read in order). */
static void
publish_until(zr_socket *pub, int fd, const char *text)
{
	long long end = rp_now_ms() + WAIT;
	char buf[256];

	while (rp_now_ms() < end) {
		cr_assert_eq(zr_send_bytes(pub, text, strlen(text), 0), 0);
		long n = rp_recv(fd, buf, sizeof buf, 50);

		cr_assert_neq(n, -1, "the PUB closed the connection (waiting for '%s')", text);
		if (n >= 0 && strcmp(buf, text) == 0)
			return;
	}
	cr_assert_fail("'%s' never arrived", text);
}

static void
expect_disconnected(zr_socket *pub, int fd, const char *why)
{
	struct zr_event ev;

	cr_assert(rp_closed(fd, WAIT), "the peer past the limit is still connected");
	cr_assert_eq(zr_monitor_recv(pub, &ev, WAIT), 0, "no DISCONNECTED event");
	cr_assert_eq(ev.type, ZR_EVENT_DISCONNECTED);
	cr_assert(strstr(ev.reason, why) != NULL, "reason '%s', want '%s'", ev.reason, why);
	close(fd);
}

Test(subs_limits, a_peer_holds_subs_max_subscriptions_duplicates_counted_and_not_one_more)
{
	zr_ctx *ctx;
	char ep[128], t[16], buf[64];
	zr_socket *pub = pub_open(&ctx, ep, sizeof ep, 50, -1);
	int fd = rp_connect(ep, 1), got = 0, v;
	size_t len = sizeof v;

	cr_assert_eq(zr_getsockopt(pub, ZR_SUBS_MAX, &v, &len), 0);
	cr_assert_eq(v, 50);
	/* 47 topics, a prefix of t00 and two more of t00 itself: 50. */
	for (int i = 0; i < 47; i++) {
		snprintf(t, sizeof t, "t%02d", i);
		rp_sub(fd, 1, true, t);
	}
	rp_sub(fd, 1, true, "t0");
	rp_sub(fd, 1, true, "t00");
	rp_sub(fd, 1, true, "t00");
	publish_until(pub, fd, "t46 sync");

	/* One copy per subscriber, however many of its prefixes match. */
	cr_assert_eq(zr_send_bytes(pub, "t00 once", 8, 0), 0);
	cr_assert_eq(zr_send_bytes(pub, "t46 end", 7, 0), 0);
	for (;;) {
		cr_assert_geq(rp_recv(fd, buf, sizeof buf, WAIT), 0);
		if (strcmp(buf, "t46 end") == 0)
			break;
		got += strcmp(buf, "t00 once") == 0;
	}
	cr_assert_eq(got, 1, "'t00 once' arrived %d times", got);

	/* A cancel gives one back: u1 fits, u2 is one too many. */
	rp_sub(fd, 1, false, "t00");
	rp_sub(fd, 1, true, "u1");
	publish_until(pub, fd, "u1 in");
	rp_sub(fd, 1, true, "u2");
	expect_disconnected(pub, fd, "subscriptions over SUBS_MAX (50)");
	sopt_int(pub, ZR_LINGER, 0);
	zr_socket_close(pub);
	zr_ctx_free(ctx);
}

Test(subs_limits, subs_maxbytes_bounds_distinct_topics_in_the_zmtp_3_0_message_form)
{
	zr_ctx *ctx;
	char ep[128], t[16];
	/* Room for four 4-octet topics at 352 octets of overhead each. */
	int64_t room = 4 * (352 + 4), got;
	zr_socket *pub = pub_open(&ctx, ep, sizeof ep, -1, room);
	int fd = rp_connect(ep, 0);
	size_t len = sizeof got;

	cr_assert_eq(zr_getsockopt(pub, ZR_SUBS_MAXBYTES, &got, &len), 0);
	cr_assert_eq(got, room);
	for (int i = 0; i < 4; i++) {
		snprintf(t, sizeof t, "b%03d", i);
		rp_sub(fd, 0, true, t);
	}
	rp_sub(fd, 0, true, "b000"); /* a duplicate costs no bytes */
	publish_until(pub, fd, "b003 in");
	rp_sub(fd, 0, true, "b004");
	expect_disconnected(pub, fd, "subscriptions over SUBS_MAXBYTES");
	sopt_int(pub, ZR_LINGER, 0);
	zr_socket_close(pub);
	zr_ctx_free(ctx);
}

Test(subs_limits, bad_values_are_refused)
{
	zr_ctx *ctx;
	zr_socket *pub;
	int v = -2;
	int64_t b = -2;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUB, &pub), 0);
	cr_assert_eq(zr_setsockopt(pub, ZR_SUBS_MAX, &v, sizeof v), -EINVAL);
	cr_assert_eq(zr_setsockopt(pub, ZR_SUBS_MAXBYTES, &b, sizeof b), -EINVAL);
	cr_assert_eq(zr_setsockopt(pub, ZR_SUBS_MAXBYTES, &v, sizeof v), -EINVAL);
	zr_socket_close(pub);
	zr_ctx_free(ctx);
}

#define FLOOD 100000

static const char sub_script[] = "import sys, zmq\n"
				 "c = zmq.Context()\n"
				 "s = c.socket(zmq.SUB)\n"
				 "s.setsockopt(zmq.SUBSCRIBE, b'')\n"
				 "s.rcvtimeo = 20000\n"
				 "s.connect(sys.argv[1])\n"
				 "print('up', flush=True)\n"
				 "try:\n"
				 "    sys.exit(0 if s.recv() == b'after the flood' else 1)\n"
				 "except zmq.Again:\n"
				 "    sys.exit(2)\n";

Test(subs_limits, a_flood_of_distinct_subscribes_is_cut_off_and_a_libzmq_sub_is_served_after,
     .timeout = 120)
{
	zr_ctx *ctx;
	char ep[128];
	zr_socket *pub;
	int fd, status = -1;
	size_t cap = (size_t)FLOOD * 32, len = 0;
	uint8_t *flood = malloc(cap);

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUB, &pub), 0);
	cr_assert_eq(zr_socket_monitor(pub, ZR_EVENT_DISCONNECTED), 0);
	cr_assert_eq(zr_bind(pub, "tcp://127.0.0.1:0"), 0);
	endpoint_of(pub, ep, sizeof ep);

	/* 100,000 distinct 16-octet topics, 1.6 MB of SUBSCRIBE commands. */
	cr_assert(flood != NULL);
	for (int i = 0; i < FLOOD; i++) {
		char t[17];

		snprintf(t, sizeof t, "flood-%010d", i);
		len += rp_sub_encode(flood + len, 1, true, t, 16);
	}
	fd = rp_connect(ep, 1);
	(void)rp_write_all(fd, flood, len); /* cut short when the PUB closes */
	free(flood);
	expect_disconnected(pub, fd, "subscriptions over SUBS_MAXBYTES");

	pid_t py = pyspawn(sub_script, ep);

	for (long long end = rp_now_ms() + WAIT; rp_now_ms() < end;) {
		cr_assert_eq(zr_send_bytes(pub, "after the flood", 15, 0), 0);
		struct timespec ts = {0, 20 * 1000 * 1000};

		nanosleep(&ts, NULL);
		if (waitpid(py, &status, WNOHANG) == py)
			break;
	}
	if (status == -1)
		pykill(py);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the libzmq SUB got nothing (%d)",
	          status);
	sopt_int(pub, ZR_LINGER, 0);
	zr_socket_close(pub);
	zr_ctx_free(ctx);
}
