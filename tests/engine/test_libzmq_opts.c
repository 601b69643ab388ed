/*
 * libzmq's pattern options in the engine: CONFLATE (both directions, the
 * peer never held back), REQ_CORRELATE and REQ_RELAXED (the request id
 * frame on the wire, checked by a pyzmq ROUTER), PROBE_ROUTER, XPUB_NODROP,
 * XPUB_WELCOME_MSG, XPUB_MANUAL and INVERT_MATCHING.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zring/zring.h>

#include "ctx_fixture.h"
#include "pyspawn.h"
#include "sock_helpers.h"

CTX_SUITE(libzmq_opts, 90);

static int
recv_num(zr_socket *s, int flags)
{
	char buf[32] = {0};
	int n = zr_recv_bytes(s, buf, sizeof buf - 1, flags);

	if (n < 0)
		return n;
	return atoi(buf);
}

static void
send_num(zr_socket *s, int i)
{
	char buf[32];
	int n = snprintf(buf, sizeof buf, "%d", i);

	cr_assert_eq(zr_send_bytes(s, buf, (size_t)n, 0), 0, "send %d", i);
}

/* Receives until the message `last`; returns how many it took. */
static int
recv_until(zr_socket *s, int last)
{
	int got = 0, v;

	do {
		v = recv_num(s, 0);
		cr_assert_geq(v, -1, "received %d messages, then %d", got, v); /* -1: a marker */
		got++;
	} while (v != last);
	return got;
}

#define BURST 5000

/* PULL with CONFLATE: HWM 10 would hold the PUSH back after ~30 messages;
 * conflating, every send goes and the reader finds only the newest. */
Test(libzmq_opts, conflate_receiver_keeps_the_newest)
{
	zr_socket *push = ctx_open(ZR_PUSH), *pull = ctx_open(ZR_PULL);
	int got;

	sopt_int(push, ZR_SNDHWM, 10);
	sopt_int(pull, ZR_RCVHWM, 10);
	sopt_int(pull, ZR_CONFLATE, 1);
	cr_assert_eq(zr_bind(pull, "inproc://conflate-rx"), 0);
	cr_assert_eq(zr_connect(push, "inproc://conflate-rx"), 0);
	for (int i = 0; i < BURST; i++)
		send_num(push, i);
	got = recv_until(pull, BURST - 1);
	/* What the io thread had not routed yet when the reader came (at most
	 * the handoff, SNDHWM) plus the newest. */
	cr_assert_leq(got, 11, "%d messages kept", got);
	cr_assert_eq(recv_num(pull, ZR_DONTWAIT), -EAGAIN);
	/* And the option is fixed once the queues exist. */
	cr_assert_eq(zr_setsockopt(pull, ZR_CONFLATE, &(int){0}, sizeof(int)), -EINVAL);
	zr_socket_close(push);
	zr_socket_close(pull);
}

/* PUSH with CONFLATE to a reader that does not read (RCVHWM 1): the peer's
 * queue keeps one unsent message, the newest, and no send waits. */
Test(libzmq_opts, conflate_sender_replaces_the_unsent)
{
	zr_socket *push = ctx_open(ZR_PUSH), *pull = ctx_open(ZR_PULL);
	int got;

	sopt_int(push, ZR_SNDHWM, 10);
	sopt_int(push, ZR_CONFLATE, 1);
	sopt_int(pull, ZR_RCVHWM, 1);
	cr_assert_eq(zr_bind(pull, "inproc://conflate-tx"), 0);
	cr_assert_eq(zr_connect(push, "inproc://conflate-tx"), 0);
	for (int i = 0; i < BURST; i++)
		send_num(push, i);
	got = recv_until(pull, BURST - 1);
	/* The reader's one, the pipe's one, what was not routed yet. */
	cr_assert_leq(got, 13, "%d messages kept", got);
	zr_socket_close(push);
	zr_socket_close(pull);
}

/* Over tcp with a SUB conflating: a burst from the PUB ends as its last. */
Test(libzmq_opts, conflate_sub_over_tcp)
{
	zr_socket *pub = ctx_open(ZR_PUB), *sub = ctx_open(ZR_SUB);
	char ep[128];
	int got;

	sopt_int(pub, ZR_SNDHWM, 0); /* the PUB itself drops nothing */
	sopt_int(sub, ZR_CONFLATE, 1);
	cr_assert_eq(zr_setsockopt(sub, ZR_SUBSCRIBE, "", 0), 0);
	sock_bind_connect(pub, "tcp://127.0.0.1:*", sub, ep, sizeof ep);
	/* Until the subscription is in place, the PUB drops. */
	for (int i = 0;; i++) {
		send_num(pub, -1);
		if (zr_socket_poll_events(sub) & ZR_POLLIN)
			break;
		cr_assert_lt(i, WAIT_MS / 10, "the subscription never arrived");
		sleep_ms(10);
	}
	for (int i = 0; i < BURST; i++)
		send_num(pub, i);
	got = recv_until(sub, BURST - 1);
	cr_assert_lt(got, BURST / 2, "%d of %d kept: not conflated", got, BURST);
	zr_socket_close(pub);
	zr_socket_close(sub);
}

/* ---- REQ_CORRELATE, REQ_RELAXED against a pyzmq ROUTER ------------------- */

/*
 * The ROUTER answers each request with what it saw: the number of frames
 * after the routing id and frame 1 in hex. "hold" gets no answer until the
 * next request, then a late one ("late", with the held envelope); "stale"
 * first gets an answer carrying the previous request id.
 */
static const char router_py[] =
	"import sys, struct, zmq\n"
	"c = zmq.Context(); r = c.socket(zmq.ROUTER); r.bind(sys.argv[1])\n"
	"print('up', flush=True)\n"
	"held = []\n"
	"while True:\n"
	"    f = r.recv_multipart()\n"
	"    ident, rest = f[0], f[1:]\n"
	"    env, body = rest[:-1], rest[-1]\n"
	"    if body == b'hold':\n"
	"        held.append((ident, env)); continue\n"
	"    for i, e in held: r.send_multipart([i] + e + [b'late'])\n"
	"    held = []\n"
	"    if body == b'stale' and len(env) == 2:\n"
	"        old = (struct.unpack('<I', env[0])[0] - 1) & 0xffffffff\n"
	"        r.send_multipart([ident, struct.pack('<I', old), b'', b'stale-reply'])\n"
	"    r.send_multipart([ident] + env + [b'%d:%s' % (len(rest), rest[0].hex().encode())])\n";

static pid_t
router_peer(char *ep, size_t cap)
{
	snprintf(ep, cap, "tcp://127.0.0.1:%u", free_tcp_port());
	return pyspawn(router_py, ep);
}

static void
recv_text(zr_socket *s, char *buf, size_t cap)
{
	int n = zr_recv_bytes(s, buf, cap - 1, 0);

	cr_assert_geq(n, 0, "receive: %d", n);
	buf[(size_t)n < cap - 1 ? (size_t)n : cap - 1] = '\0';
}

Test(libzmq_opts, req_correlate_on_the_wire)
{
	char ep[64], a[64], b[64];
	pid_t py = router_peer(ep, sizeof ep);
	zr_socket *req = ctx_open(ZR_REQ);
	uint32_t id1, id2;

	sopt_int(req, ZR_REQ_CORRELATE, 1);
	cr_assert_eq(zr_connect(req, ep), 0);
	cr_assert_eq(zr_send_bytes(req, "one", 3, 0), 0);
	recv_text(req, a, sizeof a);
	cr_assert_eq(zr_send_bytes(req, "two", 3, 0), 0);
	recv_text(req, b, sizeof b);
	/* [id, "", body]: the id 4 octets, one more per request (host order,
	 * as libzmq writes it). */
	cr_assert_eq(strncmp(a, "3:", 2), 0, "the ROUTER saw %s", a);
	cr_assert_eq(strlen(a), 2 + 8, "a 4-octet id: %s", a);
	cr_assert_eq(sscanf(a + 2, "%8x", &id1), 1);
	cr_assert_eq(sscanf(b + 2, "%8x", &id2), 1);
	id1 = __builtin_bswap32(id1); /* hex of little-endian octets */
	id2 = __builtin_bswap32(id2);
	cr_assert_eq(id2, id1 + 1, "ids %08x then %08x", id1, id2);
	/* A reply carrying another id is not the answer. */
	cr_assert_eq(zr_send_bytes(req, "stale", 5, 0), 0);
	recv_text(req, a, sizeof a);
	cr_assert_eq(strncmp(a, "3:", 2), 0, "got %s instead of the answer", a);
	zr_socket_close(req);
	pykill(py);
}

Test(libzmq_opts, req_without_correlate_has_no_id)
{
	char ep[64], a[64];
	pid_t py = router_peer(ep, sizeof ep);
	zr_socket *req = ctx_open(ZR_REQ);

	cr_assert_eq(zr_connect(req, ep), 0);
	cr_assert_eq(zr_send_bytes(req, "one", 3, 0), 0);
	recv_text(req, a, sizeof a);
	cr_assert_str_eq(a, "2:", "[\"\", body]");
	cr_assert_eq(zr_send_bytes(req, "hold", 4, 0), 0);
	cr_assert_eq(zr_send_bytes(req, "again", 5, ZR_DONTWAIT), -EFSM, "strict by default");
	cr_assert_eq(zr_socket_poll_events(req), 0, "waiting: no POLLOUT, no reply yet");
	zr_socket_close(req);
	pykill(py);
}

Test(libzmq_opts, req_relaxed_supersedes)
{
	char ep[64], a[64];
	pid_t py = router_peer(ep, sizeof ep);
	zr_socket *req = ctx_open(ZR_REQ);

	sopt_int(req, ZR_REQ_RELAXED, 1);
	sopt_int(req, ZR_REQ_CORRELATE, 1);
	cr_assert_eq(zr_connect(req, ep), 0);
	cr_assert_eq(zr_send_bytes(req, "hold", 4, 0), 0);
	cr_assert(zr_socket_poll_events(req) & ZR_POLLOUT, "relaxed: may send again");
	cr_assert_eq(zr_send_bytes(req, "next", 4, 0), 0);
	/* The ROUTER answers the held request first ("late"): dropped by its
	 * id; the answer to "next" comes. */
	recv_text(req, a, sizeof a);
	cr_assert_eq(strncmp(a, "3:", 2), 0, "got %s", a);
	cr_assert_eq(zr_recv_bytes(req, a, sizeof a, ZR_DONTWAIT), -EFSM, "one reply per request");
	zr_socket_close(req);
	pykill(py);
}

/* ---- PROBE_ROUTER ------------------------------------------------------- */

Test(libzmq_opts, probe_router_both_ways)
{
	char ep[64], a[64];
	zr_socket *router = ctx_open(ZR_ROUTER), *dealer = ctx_open(ZR_DEALER);
	pid_t py;
	zr_msg *m;
	size_t len;

	/* A zring DEALER probes a zring ROUTER: [its id, ""] arrives first. */
	sopt_int(dealer, ZR_PROBE_ROUTER, 1);
	cr_assert_eq(zr_setsockopt(dealer, ZR_ROUTING_ID, "D1", 2), 0);
	sock_bind_connect(router, "tcp://127.0.0.1:*", dealer, ep, sizeof ep);
	cr_assert_eq(zr_recv(router, &m, 0), 0);
	cr_assert_eq(zr_msg_frames(m), 2);
	cr_assert_eq(memcmp(zr_msg_frame(m, 0, &len), "D1", 2), 0);
	(void)zr_msg_frame(m, 1, &len);
	cr_assert_eq(len, 0, "the probe is one empty frame");
	zr_msg_free(m);
	zr_socket_close(dealer);
	zr_socket_close(router);

	/* A zring ROUTER probes a pyzmq DEALER: it receives one empty frame. */
	router = ctx_open(ZR_ROUTER);
	sopt_int(router, ZR_PROBE_ROUTER, 1);
	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", free_tcp_port());
	cr_assert_eq(zr_bind(router, ep), 0);
	py = pyspawn("import sys, zmq\n"
	             "c = zmq.Context(); d = c.socket(zmq.DEALER); d.connect(sys.argv[1])\n"
	             "print('up', flush=True)\n"
	             "f = d.recv_multipart()\n"
	             "d.send_multipart([b'saw %d:%s' % (len(f), b'.'.join(f))])\n"
	             "d.recv()\n",
	             ep);
	cr_assert_eq(zr_recv(router, &m, 0), 0);
	cr_assert_eq(zr_msg_frames(m), 2);
	len = 0;
	{
		const char *body = zr_msg_frame(m, 1, &len);

		snprintf(a, sizeof a, "%.*s", (int)len, body);
	}
	cr_assert_str_eq(a, "saw 1:", "the pyzmq DEALER got %s", a);
	zr_msg_free(m);
	zr_socket_close(router);
	pykill(py);
}

/* ---- XPUB: WELCOME_MSG, NODROP ------------------------------------------- */

Test(libzmq_opts, xpub_welcome_to_a_pyzmq_sub)
{
	char ep[64];
	zr_socket *xpub = ctx_open(ZR_XPUB);
	pid_t py;
	char buf[64];

	cr_assert_eq(zr_setsockopt(xpub, ZR_XPUB_WELCOME_MSG, "hello", 5), 0);
	snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", free_tcp_port());
	cr_assert_eq(zr_bind(xpub, ep), 0);
	/* The SUB hands back what it received first, as its own subscription's
	 * topic (an XPUB hears it). */
	py = pyspawn("import sys, zmq\n"
	             "c = zmq.Context(); s = c.socket(zmq.SUB); s.subscribe(b'')\n"
	             "s.connect(sys.argv[1]); print('up', flush=True)\n"
	             "w = s.recv(); s.subscribe(b'got:' + w); s.recv()\n",
	             ep);
	/* Notices: "" first, then "got:hello". */
	for (;;) {
		int n = zr_recv_bytes(xpub, buf, sizeof buf - 1, 0);

		cr_assert_gt(n, 0, "no notice: %d", n);
		buf[n] = '\0';
		if (n > 1)
			break;
	}
	cr_assert_eq(buf[0], 1);
	cr_assert_str_eq(buf + 1, "got:hello");
	zr_socket_close(xpub);
	pykill(py);
}

Test(libzmq_opts, xpub_nodrop_is_pub_block)
{
	zr_socket *xpub = ctx_open(ZR_XPUB), *sub = ctx_open(ZR_SUB);
	int v = -1, sent = 0;
	size_t len = sizeof v;
	char buf[8];

	sopt_int(xpub, ZR_XPUB_NODROP, 1);
	cr_assert_eq(zr_getsockopt(xpub, ZR_PUB_POLICY, &v, &len), 0);
	cr_assert_eq(v, ZR_PUB_BLOCK);
	sopt_int(xpub, ZR_SNDHWM, 2);
	sopt_int(sub, ZR_RCVHWM, 2);
	cr_assert_eq(zr_setsockopt(sub, ZR_SUBSCRIBE, "", 0), 0);
	cr_assert_eq(zr_bind(xpub, "inproc://nodrop"), 0);
	cr_assert_eq(zr_connect(sub, "inproc://nodrop"), 0);
	cr_assert_eq(zr_recv_bytes(xpub, buf, sizeof buf, 0), 1, "the subscribe notice");
	/* A reader that does not read: sends fail at some point instead of
	 * dropping, and every one that went arrives. */
	while (zr_send_bytes(xpub, "m", 1, ZR_DONTWAIT) == 0)
		cr_assert_lt(++sent, 100000, "never held back");
	for (int i = 0; i < sent; i++)
		cr_assert_eq(zr_recv_bytes(sub, buf, sizeof buf, 0), 1, "message %d of %d", i,
		             sent);
	zr_socket_close(xpub);
	zr_socket_close(sub);
}

/* ---- INVERT_MATCHING ------------------------------------------------------ */

Test(libzmq_opts, invert_matching_both_ends)
{
	zr_socket *pub = ctx_open(ZR_PUB), *sub = ctx_open(ZR_SUB);
	char buf[16];
	int n;

	sopt_int(pub, ZR_INVERT_MATCHING, 1);
	sopt_int(sub, ZR_INVERT_MATCHING, 1);
	cr_assert_eq(zr_setsockopt(sub, ZR_SUBSCRIBE, "a", 1), 0);
	cr_assert_eq(zr_bind(pub, "inproc://invert"), 0);
	cr_assert_eq(zr_connect(sub, "inproc://invert"), 0);
	/* Until the subscription is in: "b" goes to a peer holding nothing
	 * too, so wait for the filter by sending "a" and "b" in turns. Until
	 * the pipe is up the PUB has no peer and drops both, so never block
	 * on a receive: send again until something came. */
	for (int got = 0, idle = 0; got < 50;) {
		cr_assert_eq(zr_send_bytes(pub, "a-no", 4, 0), 0);
		cr_assert_eq(zr_send_bytes(pub, "b-yes", 5, 0), 0);
		n = zr_recv_bytes(sub, buf, sizeof buf - 1, ZR_DONTWAIT);
		if (n == -EAGAIN) {
			cr_assert_lt(++idle, 10000, "nothing arrived");
			usleep(1000);
			continue;
		}
		cr_assert_gt(n, 0);
		buf[n] = '\0';
		cr_assert_str_eq(buf, "b-yes", "an inverted SUB took %s", buf);
		got++;
	}
	zr_socket_close(pub);
	zr_socket_close(sub);
}

/* ---- XPUB_MANUAL ------------------------------------------------------------ */

static void
expect_notice(zr_socket *xpub, const char *topic)
{
	char buf[32];
	int n = zr_recv_bytes(xpub, buf, sizeof buf - 1, 0);

	cr_assert_eq(n, (int)strlen(topic) + 1, "notice: %d", n);
	buf[n] = '\0';
	cr_assert_eq(buf[0], 1);
	cr_assert_str_eq(buf + 1, topic);
}

Test(libzmq_opts, xpub_manual_applies_what_the_app_confirms)
{
	zr_socket *xpub = ctx_open(ZR_XPUB), *s1 = ctx_open(ZR_SUB), *s2 = ctx_open(ZR_SUB);
	char buf[16];
	int n;

	cr_assert_eq(zr_setsockopt(xpub, ZR_SUBSCRIBE, "a", 1), -EINVAL, "not manual yet");
	sopt_int(xpub, ZR_XPUB_MANUAL, 1);
	cr_assert_eq(zr_bind(xpub, "inproc://manual"), 0);
	cr_assert_eq(zr_setsockopt(s1, ZR_SUBSCRIBE, "a", 1), 0);
	cr_assert_eq(zr_connect(s1, "inproc://manual"), 0);
	expect_notice(xpub, "a");
	cr_assert_eq(zr_setsockopt(xpub, ZR_SUBSCRIBE, "a", 1), 0); /* for s1 */
	cr_assert_eq(zr_setsockopt(s2, ZR_SUBSCRIBE, "b", 1), 0);
	cr_assert_eq(zr_connect(s2, "inproc://manual"), 0);
	expect_notice(xpub, "b");
	/* s2 gets "bb", not "b" (its own filter still takes "b..."). */
	cr_assert_eq(zr_setsockopt(xpub, ZR_SUBSCRIBE, "bb", 2), 0);
	/* A duplicate is told too (automatic mode tells only a new topic). */
	cr_assert_eq(zr_setsockopt(s1, ZR_SUBSCRIBE, "b", 1), 0);
	expect_notice(xpub, "b"); /* not confirmed: s1 never holds "b" */
	for (int i = 0;; i++) {
		cr_assert_eq(zr_send_bytes(xpub, "a1", 2, 0), 0);
		n = zr_recv_bytes(s1, buf, sizeof buf - 1, ZR_DONTWAIT);
		if (n > 0)
			break;
		cr_assert_lt(i, WAIT_MS / 10, "s1's confirmed \"a\" never applied");
		sleep_ms(10);
	}
	buf[n] = '\0';
	cr_assert_str_eq(buf, "a1");
	for (int i = 0;; i++) {
		cr_assert_eq(zr_send_bytes(xpub, "b1", 2, 0), 0);
		cr_assert_eq(zr_send_bytes(xpub, "bb1", 3, 0), 0);
		n = zr_recv_bytes(s2, buf, sizeof buf - 1, ZR_DONTWAIT);
		if (n > 0)
			break;
		cr_assert_lt(i, WAIT_MS / 10, "s2's \"bb\" never applied");
		sleep_ms(10);
	}
	buf[n] = '\0';
	cr_assert_str_eq(buf, "bb1", "s2 got %s: its own \"b\" was applied", buf);
	/* s1 holds "a" only. */
	while ((n = zr_recv_bytes(s1, buf, sizeof buf - 1, ZR_DONTWAIT)) > 0) {
		buf[n] = '\0';
		cr_assert_str_eq(buf, "a1", "s1 got %s", buf);
	}
	zr_socket_close(xpub);
	zr_socket_close(s1);
	zr_socket_close(s2);
}
