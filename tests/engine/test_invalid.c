/*
 * Socket types that must not talk: the handshake is refused (RFC 23), so
 * nothing the sender writes is ever delivered. Each test lets the sender
 * send for a while and asserts the receiver got zero messages in a bounded
 * wait. Then, as a control, the same receiver gets a message from a
 * compatible peer, so "zero" means refused, not broken.
 */
#include "scenarios.h"

TestSuite(invalid, .fini = et_teardown, .timeout = 30);

/* Sender (zring or libzmq) sends 5 messages; the receiver gets none. */
static void
iv_nothing(struct et_side *snd, struct et_side *rcv)
{
	if (snd->z != NULL) {
		for (int i = 0; i < 5; i++) {
			int rc = zr_send_bytes(snd->z, "A", 1, ZR_DONTWAIT);

			/* -EFSM: a REQ's second request */
			cr_assert(rc == 0 || rc == -EAGAIN || (rc == -EFSM && snd->type == ZR_REQ),
			          "zr_send: %d %s", rc, zr_strerror(rc));
		}
	} else {
		/* libzmq may block with no usable peer: SNDTIMEO bounds it. */
		const char *r = et_peer_ask(snd->p, 2000, "flood 5 200");

		/* a REQ stops at its second send (EFSM) */
		cr_assert(strncmp(r, "FLOOD", 5) == 0 || strncmp(r, "ERR", 3) == 0, "%s", r);
	}
	if (rcv->p != NULL) {
		const char *r = et_peer_ask(rcv->p, 2000, "count %d", ET_QUIET_MS + 300);

		cr_assert_str_eq(r, "COUNT 0", "%s got messages from %s", rcv->name, snd->name);
	} else {
		et_expect_none(rcv, ET_QUIET_MS + 300);
	}
}

/* A zring receiver still works with a compatible libzmq peer. */
static void
iv_control_zring(struct et_side *rcv, const char *peer_type, const char *const *opts)
{
	char ep[256];
	size_t len = sizeof ep;

	cr_assert_eq(zr_getsockopt(rcv->z, ZR_LAST_ENDPOINT, ep, &len), 0);
	struct et_side ok = {.name = "compatible libzmq peer"};

	ok.p = et_peer_start(peer_type, "connect", ep, opts);
	if (rcv->type == ZR_SUB)
		et_sync(&ok, rcv, "41", "4166");
	else {
		et_send(&ok, "41");
		et_expect(rcv, "41");
	}
}

#define IV_CASE(name, ts, spy, so, tr, rpy, ro, sbinds)                   \
	Test(invalid, name)                                               \
	{                                                                 \
		struct et_side s, r;                                      \
		et_pair(&s, ts, spy, so, &r, tr, rpy, ro, sbinds, false); \
		iv_nothing(&s, &r);                                       \
	}

static const char *const iv_sub_all[] = {"sub=", NULL};

/* zring sender, libzmq receiver. */
IV_CASE(zring_push_to_libzmq_sub_delivers_nothing, ZR_PUSH, false, NULL, ZR_SUB, true, iv_sub_all,
        false)
IV_CASE(zring_pair_to_libzmq_dealer_delivers_nothing, ZR_PAIR, false, NULL, ZR_DEALER, true, NULL,
        true)
IV_CASE(zring_dealer_to_libzmq_pull_delivers_nothing, ZR_DEALER, false, NULL, ZR_PULL, true, NULL,
        false)
IV_CASE(zring_pub_to_libzmq_pull_delivers_nothing, ZR_PUB, false, NULL, ZR_PULL, true, NULL, true)
IV_CASE(zring_req_to_libzmq_dealer_delivers_nothing, ZR_REQ, false, NULL, ZR_DEALER, true, NULL,
        false)
/* libzmq sender, zring receiver. */
IV_CASE(libzmq_pub_to_zring_pull_delivers_nothing, ZR_PUB, true, NULL, ZR_PULL, false, NULL, false)
IV_CASE(libzmq_push_to_zring_sub_delivers_nothing, ZR_PUSH, true, NULL, ZR_SUB, false, iv_sub_all,
        true)
IV_CASE(libzmq_pair_to_zring_pull_delivers_nothing, ZR_PAIR, true, NULL, ZR_PULL, false, NULL,
        false)
IV_CASE(libzmq_req_to_zring_dealer_delivers_nothing, ZR_REQ, true, NULL, ZR_DEALER, false, NULL,
        true)
IV_CASE(libzmq_dealer_to_zring_pair_delivers_nothing, ZR_DEALER, true, NULL, ZR_PAIR, false, NULL,
        false)
/* zring <-> zring. */
IV_CASE(zring_push_to_zring_sub_delivers_nothing, ZR_PUSH, false, NULL, ZR_SUB, false, iv_sub_all,
        true)
IV_CASE(zring_pub_to_zring_pull_delivers_nothing, ZR_PUB, false, NULL, ZR_PULL, false, NULL, false)
IV_CASE(zring_pair_to_zring_dealer_delivers_nothing, ZR_PAIR, false, NULL, ZR_DEALER, false, NULL,
        true)
IV_CASE(zring_router_to_zring_pull_delivers_nothing, ZR_ROUTER, false, NULL, ZR_PULL, false, NULL,
        false)

/* PUSH vs PUSH and PUSH vs PUB: neither side can receive; the zring PUSH
 * never gets a usable peer, so with SNDHWM 1 its queue fills and a send
 * with ZR_DONTWAIT says -EAGAIN (a compatible peer would have drained it). */
static void
iv_push_never_drains(struct et_side *push)
{
	int rc = 0, n = 0;

	for (uint64_t end = zt_now_ms() + ET_QUIET_MS; zt_now_ms() < end && n < 1000;) {
		rc = zr_send_bytes(push->z, "A", 1, ZR_DONTWAIT);
		if (rc == 0)
			n++;
		else
			zt_sleep_ms(20);
	}
	cr_assert_eq(rc, -EAGAIN, "a zring PUSH facing %s took %d messages", "an incompatible peer",
	             n);
	cr_assert_lt(n, 1000);
}

Test(invalid, zring_push_facing_libzmq_pub_never_gets_a_peer)
{
	struct et_side push, pub;
	static const char *const hwm1[] = {"sndhwm=1", NULL};

	et_pair(&push, ZR_PUSH, false, hwm1, &pub, ZR_PUB, true, NULL, false, false);
	iv_push_never_drains(&push);
}

Test(invalid, zring_push_facing_zring_push_never_gets_a_peer)
{
	struct et_side a, b;
	static const char *const hwm1[] = {"sndhwm=1", NULL};

	et_pair(&a, ZR_PUSH, false, hwm1, &b, ZR_PUSH, false, hwm1, true, true);
	iv_push_never_drains(&a);
	iv_push_never_drains(&b);
}

/* Controls: the receivers above do receive from a compatible peer. */
Test(invalid, control_a_zring_pull_refusing_pub_still_takes_push)
{
	struct et_side s, r;

	et_pair(&s, ZR_PUB, true, NULL, &r, ZR_PULL, false, NULL, false, false);
	iv_nothing(&s, &r);
	iv_control_zring(&r, "PUSH", NULL);
}

Test(invalid, control_a_zring_sub_refusing_push_still_takes_pub)
{
	struct et_side s, r;

	et_pair(&s, ZR_PUSH, true, NULL, &r, ZR_SUB, false, iv_sub_all, false, false);
	iv_nothing(&s, &r);
	iv_control_zring(&r, "PUB", NULL);
}

/* The control for a zring PUSH: with a compatible peer, the same
 * SNDHWM-1 flood is drained (no lasting -EAGAIN). */
Test(invalid, control_a_zring_push_with_a_pull_is_drained)
{
	struct et_side push, pull;
	static const char *const hwm1[] = {"sndhwm=1", NULL};

	et_pair(&push, ZR_PUSH, false, hwm1, &pull, ZR_PULL, false, NULL, false, false);
	for (int i = 0; i < 200; i++)
		cr_assert_eq(zr_send_bytes(push.z, "A", 1, 0), 0);
	for (int i = 0; i < 200; i++)
		et_expect(&pull, "41");
}
