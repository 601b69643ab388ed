/*
 * Flow control inside zring: the receive byte budget (RCVBYTES) bounds what
 * a stalled receiver holds whatever the message size, and the PUB policies
 * decide what a full *matching* subscriber costs the others.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/sockios.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "raw_peer.h"
#include "rx_queued.h"
#include "sock_helpers.h"

#define WAIT_MS 10000

/* A new context with a PUSH and a PULL in it. */
static void
push_pull_open(zr_ctx **ctx, zr_socket **push, zr_socket **pull)
{
	cr_assert_eq(zr_ctx_new(ctx), 0);
	cr_assert_eq(zr_socket_open(*ctx, ZR_PUSH, push), 0);
	cr_assert_eq(zr_socket_open(*ctx, ZR_PULL, pull), 0);
}

Test(engine_flow, a_stalled_receiver_holds_no_more_than_its_byte_budget)
{
	enum {
		SIZE = 64 * 1024,
		SENT = 40
	};
	static char payload[SIZE];
	zr_ctx *ctx;
	zr_socket *push, *pull;
	char ep[128];
	int sent = 0, got = 0;
	size_t queued;

	push_pull_open(&ctx, &push, &pull);
	sopt_i64(pull, ZR_RCVBYTES, 256 * 1024); /* four 64 KiB messages */
	sopt_int(pull, ZR_RCVTIMEO, WAIT_MS);
	sopt_int(push, ZR_SNDTIMEO, WAIT_MS);
	sock_bind_connect(pull, "ipc://@zring-flow-budget", push, ep, sizeof ep);

	/* The messages fit in the kernel and SNDHWM: the sender is not blocked,
	 * so everything reaches the receiver's side, which stops at its budget. */
	for (; sent < SENT; sent++) {
		memset(payload, sent, sizeof payload);
		cr_assert_eq(zr_send_bytes(push, payload, sizeof payload, 0), 0, "send %d", sent);
	}
	queued = rx_queued_settled(pull, 1, WAIT_MS, 300);
	cr_assert_leq(queued, 4u, "%zu messages of 64 KiB queued past a 256 KiB budget", queued);
	/* (rx_given is the io thread's; it is idle by now) */
	cr_assert_leq(pull->rx_given - atomic_load(&pull->rx_taken), (size_t)256 * 1024);
	cr_assert_geq(queued, 1u, "the receiver must have taken some");

	/* Reading again lets everything through, once and in order. */
	for (; got < SENT; got++) {
		static char in[SIZE];
		int n = zr_recv_bytes(pull, in, sizeof in, 0);

		cr_assert_eq(n, SIZE, "message %d: %d (%s)", got, n, n < 0 ? zr_strerror(n) : "");
		cr_assert_eq((unsigned char)in[0], (unsigned char)got);
		cr_assert_eq((unsigned char)in[SIZE - 1], (unsigned char)got);
	}
	cr_assert_eq(zr_recv_bytes(pull, payload, 1, ZR_DONTWAIT), -EAGAIN);
	sock_pair_free(ctx, push, pull);
}

struct fanout {
	zr_ctx *ctx;
	zr_socket *pub, *fast, *slow, *other;
};

/* A PUB and three SUBs: fast and slow subscribe to "t", other to "x". The
 * slow and other SUBs take one message at a time, in small kernel buffers. */
static void
fanout_open(struct fanout *f, int policy)
{
	char ep[128];

	cr_assert_eq(zr_ctx_new(&f->ctx), 0);
	cr_assert_eq(zr_socket_open(f->ctx, ZR_PUB, &f->pub), 0);
	sopt_int(f->pub, ZR_PUB_POLICY, policy);
	sopt_int(f->pub, ZR_SNDHWM, 10);
	sopt_int(f->pub, ZR_SNDBUF, 4096);
	cr_assert_eq(zr_bind(f->pub, "tcp://127.0.0.1:0"), 0);
	endpoint_of(f->pub, ep, sizeof ep);
	zr_socket **subs[3] = {&f->fast, &f->slow, &f->other};
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(zr_socket_open(f->ctx, ZR_SUB, subs[i]), 0);
		sopt_int(*subs[i], ZR_RCVTIMEO, WAIT_MS);
		if (i > 0) {
			sopt_int(*subs[i], ZR_RCVHWM, 1);
			sopt_int(*subs[i], ZR_RCVBUF, 4096);
		}
		cr_assert_eq(zr_setsockopt(*subs[i], ZR_SUBSCRIBE, i == 2 ? "x" : "t", 1), 0);
		cr_assert_eq(zr_connect(*subs[i], ep), 0);
	}
	/* Wait until both "t" subscribers are known to the PUB. */
	for (int ready = 0, tries = 0; ready < 2; tries++) {
		char buf[8];

		cr_assert_lt(tries, WAIT_MS / 20, "the subscribers never got a probe");
		cr_assert_eq(zr_send_bytes(f->pub, "tprobe", 6, 0), 0);
		sleep_ms(20);
		ready = 0;
		while (zr_recv_bytes(f->fast, buf, sizeof buf, ZR_DONTWAIT) > 0)
			ready |= 1;
		while (zr_recv_bytes(f->slow, buf, sizeof buf, ZR_DONTWAIT) > 0)
			ready |= 2;
		ready = ready == 3 ? 2 : 0;
	}
	/* Probes may still be on their way: a fence after them, and each "t"
	 * subscriber reads up to it, so the tests start from empty queues. */
	cr_assert_eq(zr_send_bytes(f->pub, "tfence", 6, 0), 0);
	for (int i = 0; i < 2; i++) {
		zr_socket *s = i == 0 ? f->fast : f->slow;
		char buf[8];
		int n;

		do {
			n = zr_recv_bytes(s, buf, sizeof buf, 0);
			cr_assert_eq(n, 6, "reading up to the fence: %d", n);
		} while (memcmp(buf, "tfence", 6) != 0);
	}
}

static void
fanout_close(struct fanout *f)
{
	zr_socket *all[4] = {f->pub, f->fast, f->slow, f->other};

	for (int i = 0; i < 4; i++) {
		if (all[i] == NULL)
			continue; /* closed by the test */
		sopt_int(all[i], ZR_LINGER, 0);
		zr_socket_close(all[i]);
	}
	zr_ctx_free(f->ctx);
}

/* Message i is "t" + 4 octets of i + filler, 1 KiB in all. */
static int
publish(zr_socket *pub, int i, int flags)
{
	char buf[1024];

	memset(buf, '.', sizeof buf);
	buf[0] = 't';
	memcpy(buf + 1, &i, sizeof i);
	return zr_send_bytes(pub, buf, sizeof buf, flags);
}

static int
seq_of(zr_socket *s, int flags)
{
	char buf[1024];
	int i, n = zr_recv_bytes(s, buf, sizeof buf, flags);

	if (n < 0)
		return n;
	cr_assert_eq(n, 1024);
	memcpy(&i, buf + 1, sizeof i);
	return i;
}

/* ZR_PUB_BLOCK: the slow SUB reads nothing, so the PUB fills its queue, the
 * kernel's, and then a publish waits (ZR_DONTWAIT: -EAGAIN) within a bounded
 * count. Returns how many went. */
static int
publish_until_blocked(struct fanout *f)
{
	int sent = 0, rc;

	while ((rc = publish(f->pub, sent, ZR_DONTWAIT)) == 0) {
		sent++;
		cr_assert_lt(sent, 100000, "the publisher never felt the slow subscriber");
		if (sent % 64 == 0)
			sleep_ms(1);
	}
	cr_assert_eq(rc, -EAGAIN);
	return sent;
}

Test(engine_flow, block_policy_waits_for_the_slowest_matching_subscriber_and_loses_nothing,
     .timeout = 60)
{
	struct fanout f;
	int sent;

	fanout_open(&f, ZR_PUB_BLOCK);
	sent = publish_until_blocked(&f);
	cr_assert_gt(sent, 0);
	/* The non-matching slow SUB never held it back and got nothing. */
	cr_assert_eq(zr_recv_bytes(f.other, (char[8]){0}, 8, ZR_DONTWAIT), -EAGAIN);

	/* The slow one reads: every message reaches both, in order, once. */
	for (int i = 0; i < sent; i++)
		cr_assert_eq(seq_of(f.slow, 0), i, "slow subscriber, message %d", i);
	for (int i = 0; i < sent; i++)
		cr_assert_eq(seq_of(f.fast, 0), i, "fast subscriber, message %d", i);
	fanout_close(&f);
}

/*
 * The subscriber a blocked publisher waits for stops needing what waits,
 * while nothing else is on its way anywhere (the fast subscriber read
 * everything, the app sends nothing more): it leaves, or cancels its
 * subscription. The messages that waited go on to the others at once, with
 * no further send from the app to prompt them.
 */
static void
block_goes_on_when_the_slow_one(bool leaves)
{
	struct fanout f;
	int sent, got = 0;

	fanout_open(&f, ZR_PUB_BLOCK);
	sent = publish_until_blocked(&f);
	/* The fast one takes all that reaches it, until nothing more comes:
	 * nothing is in flight to it any more. */
	for (int quiet = 0; quiet < 3;) {
		int r = seq_of(f.fast, ZR_DONTWAIT);

		if (r == -EAGAIN) {
			quiet++;
			sleep_ms(100);
			continue;
		}
		cr_assert_eq(r, got, "fast subscriber, message %d", got);
		got++;
		quiet = 0;
	}
	cr_assert_lt(got, sent, "the slow subscriber must be holding messages back");

	if (leaves) {
		sopt_int(f.slow, ZR_LINGER, 0);
		zr_socket_close(f.slow);
		f.slow = NULL;
	} else {
		cr_assert_eq(zr_setsockopt(f.slow, ZR_UNSUBSCRIBE, "t", 1), 0);
	}
	/* Every message the app handed over reaches the fast one, in order. */
	for (; got < sent; got++)
		cr_assert_eq(seq_of(f.fast, 0), got, "fast subscriber, message %d", got);
	fanout_close(&f);
}

Test(engine_flow, block_policy_goes_on_when_the_subscriber_it_waits_for_leaves, .timeout = 60)
{
	block_goes_on_when_the_slow_one(true);
}

Test(engine_flow, block_policy_goes_on_when_the_subscriber_it_waits_for_unsubscribes, .timeout = 60)
{
	block_goes_on_when_the_slow_one(false);
}

Test(engine_flow, drop_new_policy_never_blocks_and_the_fast_subscriber_gets_everything,
     .timeout = 60)
{
	struct fanout f;
	enum {
		N = 3000
	};
	int last = -1, received = 0;

	fanout_open(&f, ZR_PUB_DROP_NEW);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(publish(f.pub, i, ZR_DONTWAIT), 0,
		             "a drop-new PUB never blocks (message %d)", i);
		/* The fast subscriber keeps up (it takes each message before the
		 * next is published); the slow one reads nothing. */
		cr_assert_eq(seq_of(f.fast, 0), i, "the fast subscriber lost message %d", i);
	}
	(void)last;
	/* The slow one missed some (its copies were dropped), in order still. */
	for (int r, prev = -1; (r = seq_of(f.slow, ZR_DONTWAIT)) >= 0; prev = r, received++)
		cr_assert_gt(r, prev);
	cr_assert_lt(received, N, "a slow subscriber with a full queue cannot have got all %d", N);
	fanout_close(&f);
}

Test(engine_flow, drop_old_policy_keeps_the_newest_messages_for_a_slow_subscriber, .timeout = 60)
{
	struct fanout f;
	enum {
		N = 2000
	};
	int r, prev = -1, received = 0;

	fanout_open(&f, ZR_PUB_DROP_OLD);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(publish(f.pub, i, ZR_DONTWAIT), 0,
		             "a drop-old PUB never blocks (message %d)", i);
		cr_assert_eq(seq_of(f.fast, 0), i, "the fast subscriber lost message %d", i);
	}
	/* The slow subscriber's queue kept making room by dropping its oldest:
	 * what it finally reads ends with the very last message. */
	while ((r = seq_of(f.slow, 0)) >= 0) {
		cr_assert_gt(r, prev, "out of order: %d after %d", r, prev);
		prev = r;
		received++;
		if (r == N - 1)
			break;
	}
	cr_assert_eq(prev, N - 1, "the newest message must reach the slow subscriber");
	cr_assert_lt(received, N);
	fanout_close(&f);
}

Test(engine_flow, disconnect_policy_cuts_off_only_the_slow_matching_subscriber, .timeout = 60)
{
	struct fanout f;
	struct zr_event ev;
	int cut = 0;

	fanout_open(&f, ZR_PUB_DISCONNECT);
	/* Watch the PUB: the slow SUB itself, paused by its own full queue, reads
	 * nothing and so learns of the cut only once its app reads again. */
	cr_assert_eq(zr_socket_monitor(f.pub, ZR_EVENT_DISCONNECTED), 0);
	for (int i = 0; i < 5000 && !cut; i++) {
		cr_assert_eq(publish(f.pub, i, ZR_DONTWAIT), 0);
		cr_assert_eq(seq_of(f.fast, 0), i, "the fast subscriber lost message %d", i);
		cut = zr_monitor_recv(f.pub, &ev, 0) == 0;
	}
	if (!cut)
		cut = zr_monitor_recv(f.pub, &ev, 2000) == 0;
	cr_assert(cut, "the slow matching subscriber was never disconnected");
	/* Only that one: the fast subscriber still gets every message, and no
	 * second disconnect comes (the non-matching slow one stays too). */
	for (int i = 0; i < 200; i++) {
		cr_assert_eq(publish(f.pub, 100000 + i, ZR_DONTWAIT), 0);
		cr_assert_eq(seq_of(f.fast, 0), 100000 + i);
	}
	cr_assert_eq(zr_monitor_recv(f.pub, &ev, 200), -EAGAIN, "a second subscriber was cut off");
	fanout_close(&f);
}

Test(engine_flow, a_stalled_receiver_takes_exactly_rcvhwm_messages)
{
	zr_ctx *ctx;
	zr_socket *push, *pull;
	char ep[128];

	push_pull_open(&ctx, &push, &pull);
	sopt_int(pull, ZR_RCVHWM, 5); /* the ring underneath has 8 slots */
	sock_bind_connect(pull, "ipc://@zring-flow-exact-hwm", push, ep, sizeof ep);
	for (int i = 0; i < 50; i++)
		cr_assert_eq(zr_send_bytes(push, "m", 1, 0), 0);
	cr_assert_eq(rx_queued_settled(pull, 5, WAIT_MS, 300), 5u);
	cr_assert_eq(zr__sock_rx_peak(pull), 5u, "the depth it reports (a broker's peak_depth)");
	for (int i = 0; i < 50; i++)
		cr_assert_eq(zr_recv_bytes(pull, ep, sizeof ep, 0), 1, "message %d", i);
	sock_pair_free(ctx, push, pull);
}

/* RCVBYTES holds for small messages too, which the io thread takes in runs
 * (conn.c, conn_rx_run): a message costs its length and a frame record. */
Test(engine_flow, a_stalled_receiver_of_small_messages_holds_exactly_its_byte_budget)
{
	const size_t cost = 3 + sizeof(struct zr__span);
	zr_ctx *ctx;
	zr_socket *push, *pull;
	char ep[128];

	push_pull_open(&ctx, &push, &pull);
	sopt_i64(pull, ZR_RCVBYTES, (int64_t)(10 * cost));
	sock_bind_connect(pull, "ipc://@zring-flow-small-budget", push, ep, sizeof ep);
	for (int i = 0; i < 100; i++) {
		char m[3] = {'m', (char)('0' + i / 10), (char)('0' + i % 10)};

		cr_assert_eq(zr_send_bytes(push, m, sizeof m, 0), 0);
	}
	cr_assert_eq(rx_queued_settled(pull, 10, WAIT_MS, 300), 10u);
	cr_assert_leq(pull->rx_given - atomic_load(&pull->rx_taken), 10 * cost);
	for (int i = 0; i < 100; i++) {
		char got[8], want[3] = {'m', (char)('0' + i / 10), (char)('0' + i % 10)};

		cr_assert_eq(zr_recv_bytes(pull, got, sizeof got, 0), 3, "message %d", i);
		cr_assert_eq(memcmp(got, want, 3), 0, "message %d: %.3s", i, got);
	}
	sock_pair_free(ctx, push, pull);
}

/* A publisher that does not filter (a hand-written one here; ZMTP 3.0 peers
 * filter on the subscriber's side too): the SUB drops what it did not
 * subscribe to, queues exactly RCVHWM of the rest while stalled, and loses
 * none of them. The 40 messages come in one write, so the io thread takes
 * them as one run of small messages (conn.c, conn_rx_run). */
Test(engine_flow, a_stalled_sub_keeps_exactly_rcvhwm_of_what_it_subscribed_to)
{
	zr_ctx *ctx;
	zr_socket *sub;
	char ep[128];
	uint8_t wire[40 * 5];
	int fd;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_SUB, &sub), 0);
	sopt_int(sub, ZR_RCVHWM, 5);
	cr_assert_eq(zr_setsockopt(sub, ZR_SUBSCRIBE, "a", 1), 0);
	cr_assert_eq(zr_bind(sub, "tcp://127.0.0.1:*"), 0);
	endpoint_of(sub, ep, sizeof ep);
	fd = rp_connect_as(ep, 1, "PUB");
	for (int i = 0; i < 40; i++) {
		uint8_t *f = wire + i * 5;

		f[0] = 0; /* a one-frame message of 3 octets: "a07", "b08", ... */
		f[1] = 3;
		f[2] = i % 2 == 0 ? 'b' : 'a';
		f[3] = (uint8_t)('0' + i / 10);
		f[4] = (uint8_t)('0' + i % 10);
	}
	cr_assert(rp_write_all(fd, wire, sizeof wire));
	cr_assert_eq(rx_queued_settled(sub, 5, WAIT_MS, 300), 5u);
	cr_assert_eq(zr__sock_rx_peak(sub), 5u, "the depth it reports (a broker's peak_depth)");
	for (int i = 1; i < 40; i += 2) {
		char got[8], want[4] = {'a', (char)('0' + i / 10), (char)('0' + i % 10), 0};

		cr_assert_eq(zr_recv_bytes(sub, got, sizeof got, 0), 3, "message %s", want);
		cr_assert_eq(memcmp(got, want, 3), 0, "got %.3s, want %s", got, want);
	}
	sleep_ms(100);
	cr_assert_eq(zr_recv_bytes(sub, ep, sizeof ep, ZR_DONTWAIT), -EAGAIN, "a 'b' passed");
	close(fd);
	sopt_int(sub, ZR_LINGER, 0);
	zr_socket_close(sub);
	zr_ctx_free(ctx);
}

/*
 * A context's readers of messages share its read budget (conn.c,
 * conn_rx_reader): here 32 KiB between two SUB sockets, so each reads 16 KiB
 * at a time, as each of 1,024 would with the default 16 MiB. Each SUB holds
 * one message (RCVHWM 1) and stops reading at the read that brought a
 * second, so what it never read stays in the kernel (SIOCINQ on the fd its
 * ACCEPTED event gave): of the 40 KiB a hand-written publisher wrote in one
 * go, one read of 16 KiB came out, and before it at most the two messages'
 * worth of a read that ended early. A lone reader's 32 KiB, or a read of the
 * whole buffer (64 KiB), would have taken more.
 */
Test(engine_flow, readers_of_messages_read_their_share_of_the_contexts_budget, .timeout = 60)
{
	enum {
		SUBS = 2,
		MSGS = 40,
		BODY = 1000,
		FRAME = 9 + BODY /* a long frame's header */
	};
	static uint8_t wire[MSGS * FRAME];
	const size_t share = ZR__CONN_RX_READ_MIN, left_min = sizeof wire - share - 2 * FRAME;
	zr_ctx *ctx;
	zr_socket *sub[SUBS];
	int peer[SUBS], fd[SUBS];
	char ep[128];

	for (int i = 0; i < MSGS; i++) {
		uint8_t *f = wire + (size_t)i * FRAME;

		f[0] = 0x02; /* long, last frame */
		for (int k = 0; k < 8; k++)
			f[1 + k] = (uint8_t)((uint64_t)BODY >> (8 * (7 - k)));
		memset(f + 9, 'a' + i % 26, BODY);
	}
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	ctx->rx_read_budget = SUBS * share; /* before any connection reads */
	for (int s = 0; s < SUBS; s++) {
		cr_assert_eq(zr_socket_open(ctx, ZR_SUB, &sub[s]), 0);
		sopt_int(sub[s], ZR_RCVHWM, 1);
		sopt_int(sub[s], ZR_RCVTIMEO, WAIT_MS);
		sopt_int(sub[s], ZR_LINGER, 0);
		cr_assert_eq(zr_setsockopt(sub[s], ZR_SUBSCRIBE, "", 0), 0);
		cr_assert_eq(zr_socket_monitor(sub[s], ZR_EVENT_ACCEPTED), 0);
		cr_assert_eq(zr_bind(sub[s], "tcp://127.0.0.1:*"), 0);
		endpoint_of(sub[s], ep, sizeof ep);
		peer[s] = rp_connect_as(ep, 1, "PUB");
		fd[s] = -1;
		for (int waited = 0; fd[s] < 0 && waited < WAIT_MS; waited += 100) {
			struct zr_event ev;

			if (zr_monitor_recv(sub[s], &ev, 100) == 0 && ev.type == ZR_EVENT_ACCEPTED)
				fd[s] = ev.value;
		}
		cr_assert_geq(fd[s], 0, "subscriber %d: no ACCEPTED event", s);
	}
	/* Both connections count now; a receive armed before the second did
	 * keeps its size, so one small message each first, then the rest. */
	for (int s = 0; s < SUBS; s++) {
		const uint8_t hi[] = {0, 2, 'h', 'i'};
		char got[4];

		cr_assert(rp_write_all(peer[s], hi, sizeof hi));
		cr_assert_eq(zr_recv_bytes(sub[s], got, sizeof got, 0), 2, "subscriber %d", s);
	}
	for (int s = 0; s < SUBS; s++)
		cr_assert(rp_write_all(peer[s], wire, sizeof wire));
	for (int s = 0; s < SUBS; s++) {
		int left = -1;

		cr_assert_eq(rx_queued_settled(sub[s], 1, WAIT_MS, 300), 1u, "subscriber %d", s);
		cr_assert_eq(ioctl(fd[s], SIOCINQ, &left), 0, "SIOCINQ: %s", strerror(errno));
		cr_assert_geq((size_t)left, left_min,
		              "subscriber %d read %zu of %zu octets: over a share of %zu", s,
		              sizeof wire - (size_t)left, sizeof wire, share);
	}
	/* Then every message arrives, whole and in order. */
	for (int s = 0; s < SUBS; s++) {
		for (int i = 0; i < MSGS; i++) {
			static char got[BODY + 1];

			cr_assert_eq(zr_recv_bytes(sub[s], got, sizeof got, 0), BODY,
			             "subscriber %d, message %d", s, i);
			cr_assert_eq(got[0], 'a' + i % 26, "subscriber %d, message %d", s, i);
			cr_assert_eq(got[BODY - 1], 'a' + i % 26, "subscriber %d, message %d", s,
			             i);
		}
		close(peer[s]);
		zr_socket_close(sub[s]);
	}
	zr_ctx_free(ctx);
}

/* A paused connection goes on once the app has taken half of RCVHWM (libzmq's
 * low water mark), not at every slot it frees; nothing is lost or reordered,
 * and zr_recv's copies of small messages keep every frame. */
Test(engine_flow, a_paused_receiver_resumes_at_half_its_hwm)
{
	zr_ctx *ctx;
	zr_socket *push, *pull;
	char ep[128];
	int next = 0;

	push_pull_open(&ctx, &push, &pull);
	sopt_int(pull, ZR_RCVHWM, 8);
	sock_bind_connect(pull, "ipc://@zring-flow-resume-half", push, ep, sizeof ep);
	for (int i = 0; i < 60; i++) {
		zr_msg *m;

		cr_assert_eq(zr_msg_new(&m), 0);
		cr_assert_eq(zr_msg_add(m, &i, sizeof i), 0);
		cr_assert_eq(zr_msg_add(m, "tail", 4), 0);
		cr_assert_eq(zr_send(push, &m, 0), 0);
	}
	cr_assert_eq(rx_queued_settled(pull, 8, WAIT_MS, 300), 8u);

	/* Take one at a time: up to half taken, the connection stays paused. */
	for (int taken = 1; taken <= 4; taken++) {
		zr_msg *m;
		size_t len;

		cr_assert_eq(zr_recv(pull, &m, 0), 0);
		cr_assert_eq(zr_msg_frames(m), 2u);
		cr_assert_eq(*(const int *)zr_msg_frame(m, 0, &len), next++);
		cr_assert_eq(len, sizeof(int));
		cr_assert_eq(memcmp(zr_msg_frame(m, 1, &len), "tail", 4), 0);
		cr_assert_eq(len, 4u);
		zr_msg_free(m);
		if (taken < 4) {
			sleep_ms(150);
			cr_assert_eq(zr__spsc_count(&pull->rx), (size_t)(8 - taken),
			             "resumed after %d of 8 taken", taken);
		}
	}
	/* Half taken: it read again, up to the HWM. */
	cr_assert_eq(rx_queued_settled(pull, 8, WAIT_MS, 100), 8u);
	for (; next < 60; next++) {
		zr_msg *m;
		size_t len;

		cr_assert_eq(zr_recv(pull, &m, 0), 0, "message %d", next);
		cr_assert_eq(*(const int *)zr_msg_frame(m, 0, &len), next);
		zr_msg_free(m);
	}
	sock_pair_free(ctx, push, pull);
}

/* A message larger than RCVBYTES still passes, one at a time, whenever the
 * receive queue is empty, also after a burst of small ones has left the io
 * thread with a stale view of how many the queue holds (a hang otherwise). */
Test(engine_flow, messages_over_rcvbytes_pass_one_at_a_time_after_a_burst, .timeout = 60)
{
	zr_ctx *ctx;
	zr_socket *push, *pull;
	char ep[128];
	static char big[8192], in[8192];

	push_pull_open(&ctx, &push, &pull);
	sopt_i64(pull, ZR_RCVBYTES, 4096);
	sopt_int(pull, ZR_RCVTIMEO, WAIT_MS);
	sock_bind_connect(pull, "ipc://@zring-flow-over-budget", push, ep, sizeof ep);
	/* A burst the receiver does not read at once: rx grows to ~100. */
	for (int i = 0; i < 100; i++)
		cr_assert_eq(zr_send_bytes(push, "small", 5, 0), 0);
	sleep_ms(300);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(zr_recv_bytes(pull, in, sizeof in, 0), 5, "small %d", i);
	/* Then messages of twice the budget, each read as it comes. */
	for (int i = 0; i < 20; i++) {
		memset(big, i, sizeof big);
		cr_assert_eq(zr_send_bytes(push, big, sizeof big, 0), 0);
	}
	for (int i = 0; i < 20; i++) {
		int n = zr_recv_bytes(pull, in, sizeof in, 0);

		cr_assert_eq(n, (int)sizeof big, "big %d: %d (%s)", i, n,
		             n < 0 ? zr_strerror(n) : "");
		cr_assert_eq((unsigned char)in[0], (unsigned char)i);
	}
	sock_pair_free(ctx, push, pull);
}

/*
 * A publisher routes the messages behind one that match the same
 * subscribers together (a run, pat_pubsub.c). Topics that nest ("a", "ab",
 * "abc"), one longer than every subscription ("abcdef": the same
 * subscribers as "abc"), one that differs only past it ("abd"), the empty
 * one and unmatched ones, in runs of random lengths: each subscriber gets
 * exactly the messages its prefix matches, in order, once.
 */
enum {
	RUN_SUBS = 5,
	RUN_MSGS = 20000
};

static const char *const run_prefix[RUN_SUBS] = {"", "a", "ab", "abc", "b"};
static const char *const run_topic[] = {"a", "ab", "abc", "abd", "abcdef", "b", "c", ""};

/* Message i: its topic, ':', then i as 4 octets. */
static size_t
run_msg(char *buf, unsigned *seed, int i, int *left, int *topic)
{
	size_t n;

	if (*left == 0) {
		*topic = (int)((size_t)rand_r(seed) % (sizeof run_topic / sizeof run_topic[0]));
		*left = 1 + (int)(rand_r(seed) % 100);
	}
	(*left)--;
	n = strlen(run_topic[*topic]);
	memcpy(buf, run_topic[*topic], n);
	buf[n++] = ':';
	memcpy(buf + n, &i, sizeof i);
	return n + sizeof i;
}

/* Takes what sub k has now (flags 0: one message at least), checking each
 * against the next one its prefix matches. Returns how many it took. */
static int
run_take(zr_socket *sub, int k, const char (*msgs)[16], const size_t *lens, int *next, int flags)
{
	char buf[16];
	int n, taken = 0;

	while ((n = zr_recv_bytes(sub, buf, sizeof buf, flags)) != -EAGAIN) {
		size_t plen = strlen(run_prefix[k]);

		cr_assert_gt(n, 0, "subscriber %d: %s", k, zr_strerror(n));
		while (*next < RUN_MSGS &&
		       (lens[*next] < plen || memcmp(msgs[*next], run_prefix[k], plen) != 0))
			(*next)++;
		cr_assert_lt(*next, RUN_MSGS, "subscriber %d got a message too many", k);
		cr_assert_eq((size_t)n, lens[*next], "subscriber %d, message %d", k, *next);
		cr_assert_eq(memcmp(buf, msgs[*next], (size_t)n), 0, "subscriber %d, message %d", k,
		             *next);
		(*next)++;
		taken++;
		flags = ZR_DONTWAIT;
	}
	return taken;
}

static void
runs_reach_their_subscribers(int policy)
{
	static char msgs[RUN_MSGS][16];
	static size_t lens[RUN_MSGS];
	int want[RUN_SUBS] = {0}, next[RUN_SUBS] = {0}, got[RUN_SUBS] = {0};
	zr_socket *pub, *sub[RUN_SUBS];
	unsigned seed = 20261203;
	int left = 0, topic = 0;
	zr_ctx *ctx;
	char ep[128];

	for (int i = 0; i < RUN_MSGS; i++) {
		lens[i] = run_msg(msgs[i], &seed, i, &left, &topic);
		for (int k = 0; k < RUN_SUBS; k++) {
			size_t plen = strlen(run_prefix[k]);

			want[k] += lens[i] >= plen && memcmp(msgs[i], run_prefix[k], plen) == 0;
		}
	}
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUB, &pub), 0);
	sopt_int(pub, ZR_PUB_POLICY, policy);
	/* DROP_NEW drops nothing when every queue holds the whole stream. */
	sopt_int(pub, ZR_SNDHWM, policy == ZR_PUB_BLOCK ? 100 : RUN_MSGS + 10);
	cr_assert_eq(zr_bind(pub, "tcp://127.0.0.1:0"), 0);
	endpoint_of(pub, ep, sizeof ep);
	for (int k = 0; k < RUN_SUBS; k++) {
		cr_assert_eq(zr_socket_open(ctx, ZR_SUB, &sub[k]), 0);
		sopt_int(sub[k], ZR_RCVTIMEO, WAIT_MS);
		sopt_int(sub[k], ZR_RCVHWM, policy == ZR_PUB_BLOCK ? 100 : RUN_MSGS + 10);
		cr_assert_eq(
			zr_setsockopt(sub[k], ZR_SUBSCRIBE, run_prefix[k], strlen(run_prefix[k])),
			0);
		cr_assert_eq(zr_setsockopt(sub[k], ZR_SUBSCRIBE, "\xff", 1), 0); /* probes */
		cr_assert_eq(zr_connect(sub[k], ep), 0);
	}
	/* Probes until every subscription is known, then a fence each reads to. */
	for (int ready = 0, tries = 0; ready != (1 << RUN_SUBS) - 1; tries++) {
		char buf[16];

		cr_assert_lt(tries, WAIT_MS / 20, "the subscribers never got a probe");
		cr_assert_eq(zr_send_bytes(pub, "\xffprobe", 6, 0), 0);
		sleep_ms(20);
		ready = 0;
		for (int k = 0; k < RUN_SUBS; k++)
			while (zr_recv_bytes(sub[k], buf, sizeof buf, ZR_DONTWAIT) > 0)
				ready |= 1 << k;
	}
	cr_assert_eq(zr_send_bytes(pub, "\xff!fence", 7, 0), 0);
	for (int k = 0; k < RUN_SUBS; k++) {
		char buf[16];
		int n;

		do {
			n = zr_recv_bytes(sub[k], buf, sizeof buf, 0);
			cr_assert(n == 6 || n == 7, "reading up to the fence: %d", n);
		} while (memcmp(buf, "\xff!fence", 7) != 0);
	}

	/* The stream, as fast as the publisher takes it; a full one (BLOCK)
	 * waits while the subscribers read. */
	for (int i = 0; i < RUN_MSGS;) {
		int rc = zr_send_bytes(pub, msgs[i], lens[i], ZR_DONTWAIT);

		if (rc == 0) {
			i++;
			continue;
		}
		cr_assert_eq(rc, -EAGAIN, "message %d: %s", i, zr_strerror(rc));
		cr_assert_eq(policy, ZR_PUB_BLOCK, "only a blocking publisher waits");
		for (int k = 0; k < RUN_SUBS; k++)
			got[k] += run_take(sub[k], k, msgs, lens, &next[k], ZR_DONTWAIT);
	}
	for (int k = 0; k < RUN_SUBS; k++) {
		while (got[k] < want[k])
			got[k] += run_take(sub[k], k, msgs, lens, &next[k], 0);
		cr_assert_eq(got[k], want[k], "subscriber %d (\"%s\")", k, run_prefix[k]);
		cr_assert_gt(want[k], 0);
		sleep_ms(k == 0 ? 100 : 0); /* nothing more comes */
		cr_assert_eq(run_take(sub[k], k, msgs, lens, &next[k], ZR_DONTWAIT), 0);
		sopt_int(sub[k], ZR_LINGER, 0);
		zr_socket_close(sub[k]);
	}
	sopt_int(pub, ZR_LINGER, 0);
	zr_socket_close(pub);
	zr_ctx_free(ctx);
}

Test(engine_flow, runs_of_nested_topics_reach_exactly_their_subscribers_when_blocking,
     .timeout = 60)
{
	runs_reach_their_subscribers(ZR_PUB_BLOCK);
}

Test(engine_flow, runs_of_nested_topics_reach_exactly_their_subscribers_when_dropping,
     .timeout = 60)
{
	runs_reach_their_subscribers(ZR_PUB_DROP_NEW);
}
