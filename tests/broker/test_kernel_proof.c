/*
 * The kernel proof of the broker's backpressure (DESIGN.md, "The backpressure
 * rule"; ruststream.md §8): a stalled handler stops the reading, the kernel
 * buffers fill, TCP advertises a zero window, the remote sender's send waits,
 * and this process's memory stays bounded; when the handler goes on, every
 * message arrives exactly once, in order.
 *
 *   libzmq PUSH (flood_peer.py) -> zring queue subscription, read_ahead 8,
 *     handler stalled on its first message; 64 KiB messages
 *   zring fan-out publisher -> libzmq SUBs (kp_sub.py): a slow matching one,
 *     a fast matching one, a non-matching one
 *
 * Each runs on tcp and on ipc (a unix stream socket has no window: there the
 * proof is the full kernel queue and the sender's wait). The figures the
 * design note quotes (peak RSS under a stalled handler, messages in flight
 * when the sender blocked, bytes in the kernel queues) are printed to stderr.
 */
#include "kp_util.h"

#define KP_READ_AHEAD 8
#define KP_SNDHWM 16         /* libzmq's own queue in front of its socket, messages */
#define KP_PRESSURE_MS 10000 /* how long the sender keeps pushing against the stall */
#define KP_AFTER 200         /* messages sent after the stall ends */
#define KP_SLACK (16u << 20) /* allocator, thread stacks, io buffers */

/* No Criterion .timeout (it leaks in the runner under LSan in parallel runs):
 * every wait is bounded, and CTest has its own timeout. */
TestSuite(kernel_proof, .fini = kp_teardown);

/* ---- libzmq PUSH -> stalled zring queue subscription ----------------------------- */

struct kp_kernel {
	long wnd;  /* the sender's view of our advertised window, -1 unknown */
	long outq; /* the sender's unread/unacknowledged bytes */
};

static void
kp_parse_kernel(const char *line, const char *what, struct kp_kernel *k)
{
	const char *w = strstr(line, "wnd=");

	cr_assert_not_null(w, "%s: \"%s\"", what, line);
	cr_assert_eq(sscanf(w, "wnd=%ld outq=%ld", &k->wnd, &k->outq), 2, "%s: \"%s\"", what, line);
}

static void
kp_queue_proof(bool ipc)
{
	const char *tr = ipc ? "ipc" : "tcp";
	char ep[128], addr[160], a_hwm[32], a_off[32], a_size[32];
	zr_broker *b = kp_broker(ZR_QUEUE, kp_endpoint(ipc, ep, sizeof ep), ZR_BIND, KP_READ_AHEAD);
	struct kp_log *l = kp_log_new("jobs", KP_BIG, true);
	zr_subscription *sub = kp_subscribe(b, "jobs", l);
	struct zr_sub_stats st;

	kp_watch_accepts(zr_subscription_socket(sub));
	kp_bound(b, addr, sizeof addr);
	size_t rss0 = kp_rss();
	const char *args[] = {
		addr,
		"jobs",
		kp_arg(a_size, sizeof a_size, "%u", KP_BIG),
		kp_arg(a_hwm, sizeof a_hwm, "sndhwm=%d", KP_SNDHWM),
		kp_arg(a_off, sizeof a_off, "wndoff=%zu", offsetof(struct tcp_info, tcpi_snd_wnd)),
		NULL,
	};
	struct kp_peer *p = kp_peer_start(KP_FLOOD_PEER, args);
	int fd = kp_accepted_fd(zr_subscription_socket(sub), KP_WAIT_MS);

	/* The flood: every send gets 2 s; the first that times out is held. */
	unsigned sent = 0;
	struct kp_kernel k0, k1;

	kp_tell(p, "flood 100000 2000");
	const char *r = kp_answer(p, 120000);

	cr_assert(strncmp(r, "BLOCKED ", 8) == 0, "the libzmq sender never blocked: \"%s\"", r);
	cr_assert_eq(sscanf(r, "BLOCKED sent=%u", &sent), 1, "\"%s\"", r);
	kp_parse_kernel(r, "flood", &k0);
	/* The handler holds message 0; the channel holds read_ahead more. */
	cr_assert_eq(kp_log_count(l), 1, "the stalled handler was called %" PRIu64 " times",
	             kp_log_count(l));
	zr_subscription_stats(sub, &st);
	cr_assert_eq(st.depth, KP_READ_AHEAD, "channel depth %zu", st.depth);
	cr_assert_leq(st.peak_depth, KP_READ_AHEAD);
	cr_assert_eq(st.in_flight, 1);
	cr_assert_lt(sent, 2000u, "%u messages of 64 KiB went out before the sender waited", sent);
	cr_assert_gt(sent, KP_READ_AHEAD + 1);

	int inq0 = kp_inq(fd), rcvbuf = kp_rcvbuf(fd);
	long rwnd = ipc ? -1 : kp_rcv_wnd(fd);

	cr_assert_gt(inq0, 0, "%s: nothing waits in the kernel receive queue", tr);
	cr_assert_gt(k0.outq, 0, "%s: the sender's kernel holds nothing unread", tr);
	if (!ipc) {
		/* TCP: the window this end advertises is closed, and the sender
		 * sees it closed (both when the kernel reports them). */
		if (k0.wnd >= 0)
			cr_assert_eq(k0.wnd, 0, "the sender sees a window of %ld octets", k0.wnd);
		if (rwnd >= 0)
			cr_assert_eq(rwnd, 0, "zring's end advertises a window of %ld octets",
			             rwnd);
	}

	/* Ten seconds of pressure: the sender retries its held message all the
	 * while; nothing moves and this process's memory stays bounded. */
	size_t peak = rss0;
	size_t bound = rss0 + KP_SLACK + 2u * (KP_READ_AHEAD + 2) * KP_BIG;
#if defined(__SANITIZE_ADDRESS__)
	bound += (size_t)sent * KP_BIG; /* ASan's quarantine keeps freed messages */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	bound += (size_t)sent * KP_BIG;
#endif
#endif
	kp_tell(p, "press %d 500", KP_PRESSURE_MS);
	for (uint64_t end = zt_now_ms() + KP_PRESSURE_MS; zt_now_ms() < end;) {
		size_t rss = kp_rss();

		if (rss > peak)
			peak = rss;
		zr_subscription_stats(sub, &st);
		cr_assert_eq(st.depth, KP_READ_AHEAD, "the channel changed under the stall: %zu",
		             st.depth);
		cr_assert_eq(kp_log_count(l), 1);
		sleep_ms(100);
	}
	r = kp_answer(p, 15000);
	unsigned tries = 0, through = 1;

	cr_assert_eq(sscanf(r, "PRESSED tries=%u through=%u", &tries, &through), 2, "\"%s\"", r);
	cr_assert_eq(through, 0, "the held message went through a stalled handler: \"%s\"", r);
	cr_assert_geq(tries, 2u);
	kp_parse_kernel(r, "press", &k1);
	int inq1 = kp_inq(fd);

	cr_assert_eq(inq1, inq0, "%s: the kernel queue moved under the stall (%d -> %d octets)", tr,
	             inq0, inq1);
	if (!ipc && k1.wnd >= 0)
		cr_assert_eq(k1.wnd, 0, "after 10 s the sender sees a window of %ld octets",
		             k1.wnd);
	fprintf(stderr,
	        "kernel proof (%s): libzmq PUSH (SNDHWM %d) -> zring queue, read_ahead %d, 64 KiB: "
	        "the sender blocked after %u messages: 1 in the stalled handler, %zu in the "
	        "channel, "
	        "%d octets (%.1f messages) in zring's kernel receive queue (SO_RCVBUF %d), "
	        "%ld octets (%.1f messages) unread in the sender's kernel; sender sees window %ld, "
	        "zring advertises %ld (-1: not reported)\n",
	        tr, KP_SNDHWM, KP_READ_AHEAD, sent, (size_t)KP_READ_AHEAD, inq0,
	        (double)inq0 / KP_BIG, rcvbuf, k0.outq, (double)k0.outq / KP_BIG, k0.wnd, rwnd);
	fprintf(stderr,
	        "kernel proof (%s): RSS before %.1f MiB, peak over %d s of pressure (%u sends "
	        "retried) %.1f MiB (+%.1f MiB; bound +%.1f MiB)\n",
	        tr, kp_mib(rss0), KP_PRESSURE_MS / 1000, tries, kp_mib(peak), kp_mib(peak - rss0),
	        kp_mib(bound - rss0));
	cr_assert_leq(peak, bound, "RSS grew by %zu octets under a stalled handler", peak - rss0);

	/* The handler goes on: the held send completes and everything arrives
	 * exactly once, in order. */
	kp_log_release(l, -1);
	kp_tell(p, "finish %u 10000", sent + KP_AFTER);
	r = kp_answer(p, 60000);
	unsigned total = 0, held_ms = 0;

	cr_assert_eq(sscanf(r, "DONE sent=%u held_ms=%u", &total, &held_ms), 2, "\"%s\"", r);
	cr_assert_eq(total, sent + KP_AFTER);
	uint64_t got = kp_log_wait(l, total, 30000);

	cr_assert_eq(got, total, "%" PRIu64 " of %u messages arrived", got, total);
	kp_log_assert_all(l, total);
	zr_subscription_stats(sub, &st);
	cr_assert_leq(st.peak_depth, KP_READ_AHEAD);
	cr_assert_eq(st.received, total);
	fprintf(stderr,
	        "kernel proof (%s): after the release the held send took %u ms; %u messages "
	        "arrived once each, in order\n",
	        tr, held_ms, total);
}

/* The kernel proof: a libzmq PUSH flooding a zring queue subscription whose
 * handler is stalled blocks after a bounded number of messages, the kernel
 * receive queue is full with the window closed, RSS stays bounded for 10 s,
 * and after the handler resumes every message arrives exactly once, in
 * order. */
Test(kernel_proof, a_stalled_handler_blocks_a_libzmq_sender_with_bounded_memory_tcp)
{
	kp_queue_proof(false);
}

Test(kernel_proof, a_stalled_handler_blocks_a_libzmq_sender_with_bounded_memory_ipc)
{
	kp_queue_proof(true);
}

/* ---- zring fan-out publisher -> slow, fast and non-matching libzmq SUBs ------------ */

#define KP_FAN_LIMIT 4000 /* publishes before we call the publisher unblockable */
#define KP_FAN_MORE 100   /* published after the slow SUB resumes */

struct kp_stats {
	unsigned probes, count, next, bad;
	long inq;
};

static struct kp_stats
kp_sub_stats(struct kp_peer *s, const char *cmd, int timeout_ms)
{
	struct kp_stats v;

	kp_tell(s, "%s", cmd);
	const char *r = kp_answer(s, timeout_ms + 10000);

	cr_assert_eq(sscanf(r, "STATS probes=%u count=%u next=%u bad=%u inq=%ld", &v.probes,
	                    &v.count, &v.next, &v.bad, &v.inq),
	             5, "\"%s\"", r);
	return v;
}

static int
kp_publish_seq(zr_publisher *p, const char *name, uint8_t *buf, uint64_t seq, int timeout_ms)
{
	char v[32];
	struct zr_header h = {.name = "x-seq", .value = v};

	snprintf(v, sizeof v, "%" PRIu64, seq);
	kp_payload(buf, KP_BIG, seq);
	return zr_publish(p, name, &h, 1, buf, KP_BIG, timeout_ms);
}

static void
kp_fanout_proof(bool ipc)
{
	const char *tr = ipc ? "ipc" : "tcp";
	char ep[128];
	uint8_t *buf = malloc(KP_BIG);
	zr_publisher *pub = NULL;
	struct zr_pub_stats ps;

	cr_assert_not_null(buf);
	if (ipc)
		kp_endpoint(true, ep, sizeof ep);
	else
		snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", free_tcp_port());
	/* No local subscription: the publisher binds the endpoint. */
	zr_broker *b = kp_broker(ZR_FANOUT, ep, ZR_BIND, 0);

	cr_assert_eq(zr_publisher_new(b, &pub), 0);
	const char *a_slow[] = {ep, "orders", "rcvhwm=4", NULL};
	const char *a_fast[] = {ep, "orders", NULL};
	const char *a_other[] = {ep, "billing", "rcvhwm=4", NULL};
	struct kp_peer *slow = kp_peer_start(KP_SUB_PEER, a_slow);
	struct kp_peer *fast = kp_peer_start(KP_SUB_PEER, a_fast);
	struct kp_peer *other = kp_peer_start(KP_SUB_PEER, a_other);

	/* Past the slow joiner: probes until each SUB's filter has arrived. */
	bool in[3] = {false, false, false};
	struct kp_peer *subs[3] = {slow, fast, other};

	for (uint64_t end = zt_now_ms() + 15000; !(in[0] && in[1] && in[2]);) {
		cr_assert_lt(zt_now_ms(), end, "the SUBs' subscriptions never arrived (%d %d %d)",
		             in[0], in[1], in[2]);
		cr_assert_eq(zr_publish(pub, "orders.probe", NULL, 0, "p", 1, 2000), 0, "%s",
		             zr_publisher_error(pub));
		cr_assert_eq(zr_publish(pub, "billing.probe", NULL, 0, "p", 1, 2000), 0, "%s",
		             zr_publisher_error(pub));
		for (size_t i = 0; i < 3; i++)
			if (!in[i])
				in[i] = kp_sub_stats(subs[i], "probe 200", 200).probes > 0;
	}

	/* The slow matching SUB stops reading; the publisher goes on until a
	 * publish cannot be taken within 2 s. */
	kp_tell(slow, "pause");
	cr_assert_str_eq(kp_answer(slow, 5000), "PAUSED");
	unsigned k = 0;
	int rc = 0;
	uint64_t t0 = 0;

	for (; k < KP_FAN_LIMIT; k++) {
		t0 = zt_now_ms();
		rc = kp_publish_seq(pub, "orders.data", buf, k, 2000);
		if (rc != 0)
			break;
	}
	uint64_t waited = zt_now_ms() - t0;

	cr_assert_eq(rc, -ETIMEDOUT, "%s: %u publishes and no wait (rc %d: %s)", tr, k, rc,
	             zr_publisher_error(pub));
	cr_assert_geq(waited, 1900, "the publish gave up after %" PRIu64 " ms, not 2 s", waited);
	cr_assert_gt(k, 0u);
	zr_publisher_stats(pub, &ps);
	cr_assert_geq(ps.blocked_ms, 1900);

	/* Held back for everyone: the fast SUB, reading all the while, gets no
	 * more than was taken (what the publisher's socket took but could not yet
	 * hand to every matching SUB waits for the slow one) and nothing more
	 * comes while the slow SUB sleeps, not even with the publisher pushing. */
	struct kp_stats f = kp_sub_stats(fast, "wait 1000000 1500", 1500);

	cr_assert_leq(f.count, k, "the fast SUB got %u, more than the %u publishes taken", f.count,
	              k);
	cr_assert_gt(f.count, 0u);
	cr_assert_eq(f.bad, 0);
	rc = kp_publish_seq(pub, "orders.data", buf, k, 2000);
	cr_assert_eq(rc, -ETIMEDOUT, "the held publish went through while the slow SUB slept");
	struct kp_stats f2 = kp_sub_stats(fast, "wait 1000000 1000", 1000);

	cr_assert_eq(f2.count, f.count, "the fast SUB went on (%u -> %u) while the slow one slept",
	             f.count, f2.count);
	struct kp_stats s = kp_sub_stats(slow, "stats", 0);
	struct kp_stats o = kp_sub_stats(other, "stats", 0);

	cr_assert_eq(o.count, 0, "the non-matching SUB got %u data messages", o.count);
	fprintf(stderr,
	        "fan-out proof (%s): zring PUB -> libzmq SUB (RCVHWM 4, not reading), 64 KiB: the "
	        "publisher blocked after %u messages; the slow SUB had read %u, its kernel receive "
	        "queue held %ld octets; the fast SUB, reading, had %u and got no more\n",
	        tr, k, s.count, s.inq, f.count);

	/* The slow SUB reads again: the held publish completes and both matching
	 * SUBs get every message once, in order; the other none. */
	kp_tell(slow, "resume");
	cr_assert_str_eq(kp_answer(slow, 5000), "RESUMED");
	t0 = zt_now_ms();
	rc = kp_publish_seq(pub, "orders.data", buf, k, 10000);
	cr_assert_eq(rc, 0, "the held publish after the SUB resumed: %d %s", rc,
	             zr_publisher_error(pub));
	uint64_t held_ms = zt_now_ms() - t0;
	unsigned total = k + 1 + KP_FAN_MORE;

	for (unsigned i = k + 1; i < total; i++)
		cr_assert_eq(kp_publish_seq(pub, "orders.data", buf, i, 10000), 0, "publish %u: %s",
		             i, zr_publisher_error(pub));
	char cmd[64];

	snprintf(cmd, sizeof cmd, "wait %u 5000", total);
	f = kp_sub_stats(fast, cmd, 5000);
	s = kp_sub_stats(slow, cmd, 5000);
	cr_assert_eq(f.bad, 0, "the fast SUB saw %u messages out of order", f.bad);
	cr_assert_eq(s.bad, 0, "the slow SUB saw %u messages out of order", s.bad);
	cr_assert_eq(f.count, total, "the fast SUB got %u of %u", f.count, total);
	cr_assert_eq(s.count, total, "the slow SUB got %u of %u", s.count, total);
	cr_assert_eq(f.next, total);
	cr_assert_eq(s.next, total);

	/* A non-matching SUB that stops reading never holds the publisher back:
	 * far more than blocked it above go out, none of them waits 5 s. */
	kp_tell(other, "pause");
	cr_assert_str_eq(kp_answer(other, 5000), "PAUSED");
	unsigned more = 2 * k + 100;

	for (unsigned i = total; i < total + more; i++) {
		rc = kp_publish_seq(pub, "orders.data", buf, i, 5000);
		cr_assert_eq(rc, 0, "publish %u with only a non-matching SUB asleep: %d %s", i, rc,
		             zr_publisher_error(pub));
	}
	total += more;
	snprintf(cmd, sizeof cmd, "wait %u 5000", total);
	f = kp_sub_stats(fast, cmd, 5000);
	s = kp_sub_stats(slow, cmd, 5000);
	cr_assert_eq(f.count, total);
	cr_assert_eq(s.count, total);
	cr_assert_eq(f.bad + s.bad, 0);
	kp_tell(other, "resume");
	cr_assert_str_eq(kp_answer(other, 5000), "RESUMED");
	o = kp_sub_stats(other, "wait 1 500", 500);
	cr_assert_eq(o.count, 0, "the non-matching SUB got %u data messages", o.count);
	zr_publisher_stats(pub, &ps);
	fprintf(stderr,
	        "fan-out proof (%s): after the slow SUB resumed the held publish took %" PRIu64
	        " ms; %u messages reached both matching SUBs once each, in order, the non-matching "
	        "one none; %u more went out past the sleeping non-matching SUB\n",
	        tr, held_ms, total, more);
	free(buf);
}

/* The kernel proof, fan-out: a slow matching libzmq SUB holds a zring fan-out
 * publisher back for everyone (the fast matching SUB gets nothing more, and
 * nothing is dropped: it gets every message later); a non-matching SUB gets
 * none and never holds the publisher back. */
Test(kernel_proof, a_slow_matching_sub_holds_the_publisher_back_for_everyone_and_loses_nothing_tcp)
{
	kp_fanout_proof(false);
}

Test(kernel_proof, a_slow_matching_sub_holds_the_publisher_back_for_everyone_and_loses_nothing_ipc)
{
	kp_fanout_proof(true);
}
