/*
 * Spare messages: what a socket has sent (received) goes back, emptied, to
 * the thread that makes the next one, and keeps its buffer when that is
 * small, or up to 4 KiB while its ring holds little. Checked here: the
 * rules on one message (which buffer stays, which goes), and a stream of
 * every size around those limits arriving byte-exact through each receive
 * call, over tcp and inproc, so that no reused buffer leaks one message's
 * bytes into another.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "sock_helpers.h"
#include <zring/zring.h>

/* ---- one message ----------------------------------------------------------- */

/* A message with one frame of len octets, its buffer exactly cap octets. */
static zr_msg *
msg_with(size_t len, size_t cap)
{
	zr_msg *m;
	uint8_t *b = calloc(1, cap);

	cr_assert_not_null(b);
	cr_assert_eq(zr_msg_new(&m), 0);
	cr_assert(zr__msg_adopt(m, b, cap, 0, len));
	return m;
}

/* A message of n octets: i's octet is seed + i. */
static void
msg_fill(zr_msg *m, size_t n, unsigned seed)
{
	uint8_t b[1024];

	cr_assert_leq(n, sizeof b);
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed + i);
	cr_assert_eq(zr_msg_add(m, b, n), 0);
}

static void
msg_expect(const zr_msg *m, size_t frame, size_t n, unsigned seed)
{
	size_t len;
	const uint8_t *p = zr_msg_frame(m, frame, &len);

	cr_assert_eq(len, n, "frame %zu: %zu octets, not %zu", frame, len, n);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(p[i], (uint8_t)(seed + i), "frame %zu octet %zu", frame, i);
}

/* A small message lives in the bytes of its own allocation; more moves it
 * to the heap with what it held; a swap leaves each struct with its own
 * bytes (the two messages' contents trade places, not their memory). */
Test(spare, a_small_message_lives_in_its_own_bytes_and_a_swap_keeps_them_its_own)
{
	zr_msg *a, *b;

	cr_assert_eq(zr_msg_new(&a), 0);
	cr_assert_eq(zr__msg_keep_cap(a), ZR__MSG_OWN_BYTES);
	msg_fill(a, ZR__MSG_OWN_BYTES, 1);
	cr_assert(a->data == zr__msg_own(a), "64 octets: still its own bytes");
	msg_fill(a, 10, 7);
	cr_assert(a->data != zr__msg_own(a), "more: on the heap");
	msg_expect(a, 0, ZR__MSG_OWN_BYTES, 1);
	msg_expect(a, 1, 10, 7);

	/* heap <-> own */
	cr_assert_eq(zr_msg_new(&b), 0);
	msg_fill(b, 3, 40);
	zr__msg_swap(a, b);
	cr_assert(a->data == zr__msg_own(a), "a now holds b's few octets, in its own bytes");
	cr_assert(b->data != zr__msg_own(b) && b->data != zr__msg_own(a));
	msg_expect(a, 0, 3, 40);
	msg_expect(b, 0, ZR__MSG_OWN_BYTES, 1);
	msg_expect(b, 1, 10, 7);

	/* own <-> own */
	zr_msg_free(b);
	cr_assert_eq(zr_msg_new(&b), 0);
	msg_fill(b, 20, 90);
	zr__msg_swap(a, b);
	cr_assert(a->data == zr__msg_own(a) && b->data == zr__msg_own(b));
	msg_expect(a, 0, 20, 90);
	msg_expect(b, 0, 3, 40);

	/* Dropped back to its own bytes, which take the next small message. */
	zr_msg_free(b);
	cr_assert_eq(zr_msg_new(&b), 0);
	msg_fill(b, 500, 3);
	cr_assert(zr__msg_recycle(b));
	cr_assert(b->data == zr__msg_own(b) && zr__msg_keep_cap(b) == ZR__MSG_OWN_BYTES);
	msg_fill(b, 5, 9);
	msg_expect(b, 0, 5, 9);
	zr_msg_free(a);
	zr_msg_free(b);
}

static void
count_free(void *data, void *hint)
{
	(void)data;
	++*(int *)hint;
}

/* The caller's bytes (zr_msg_new_data) grow as a copy, into memory of the
 * message's own; zring's own bytes under a callback (zr_msg_set_free) stay
 * and are freed with it. Each callback runs once. */
Test(spare, a_message_with_a_free_callback_keeps_its_own_bytes_right)
{
	static uint8_t user[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	int freed = 0;
	zr_msg *m;

	cr_assert_eq(zr_msg_new_data(&m, user, sizeof user, count_free, &freed), 0);
	cr_assert_eq(zr_msg_add(m, "xy", 2), 0);
	cr_assert_eq(freed, 1, "the caller's bytes are let go once copied");
	cr_assert(m->data == zr__msg_own(m), "ten octets: in its own bytes");
	msg_expect(m, 0, sizeof user, 1);
	zr_msg_free(m);
	cr_assert_eq(freed, 1);

	cr_assert_eq(zr_msg_new(&m), 0);
	msg_fill(m, 30, 5);
	cr_assert_eq(zr_msg_set_free(m, count_free, &freed), 0);
	msg_fill(m, 100, 6);
	msg_expect(m, 0, 30, 5);
	msg_expect(m, 1, 100, 6);
	zr_msg_free(m);
	cr_assert_eq(freed, 2);
}

Test(spare, recycle_keeps_a_small_buffer_always_and_a_larger_one_only_when_told)
{
	zr_msg *m = msg_with(100, ZR__MSG_SPARE_SMALL);

	cr_assert(zr__msg_recycle_keep(m, 0));
	cr_assert_eq(zr__msg_keep_cap(m), ZR__MSG_SPARE_SMALL, "a small buffer stays");
	cr_assert_eq(zr_msg_frames(m), 0);
	cr_assert_eq(zr_msg_size(m), 0);
	zr_msg_free(m);

	m = msg_with(4000, 4096);
	cr_assert(zr__msg_recycle_keep(m, 4096));
	cr_assert_eq(zr__msg_keep_cap(m), 4096, "kept when the ring has room");
	cr_assert(zr__msg_recycle_keep(m, 4095));
	cr_assert_eq(zr__msg_keep_cap(m), ZR__MSG_OWN_BYTES,
	             "freed when it may not keep that much: its own bytes stay");
	zr_msg_free(m);

	m = msg_with(4000, 4096);
	cr_assert(zr__msg_recycle(m));
	cr_assert_eq(zr__msg_keep_cap(m), ZR__MSG_OWN_BYTES,
	             "the plain recycle keeps small buffers only");
	zr_msg_free(m);
}

/* The queues count a message's length: a spare's buffer must not be many
 * times the message it takes. */
Test(spare, a_spare_drops_a_buffer_over_twice_what_its_next_message_needs)
{
	zr_msg *m = msg_with(0, 16384);

	zr__msg_fit(m, 8192);
	cr_assert_eq(zr__msg_keep_cap(m), 16384, "half full: kept");
	zr__msg_fit(m, 8191);
	cr_assert_eq(zr__msg_keep_cap(m), ZR__MSG_OWN_BYTES, "under half: dropped");
	zr_msg_free(m);

	m = msg_with(0, ZR__MSG_SPARE_SMALL);
	zr__msg_fit(m, 1);
	cr_assert_eq(zr__msg_keep_cap(m), ZR__MSG_SPARE_SMALL, "a small one always stays");
	cr_assert_eq(zr_msg_add(m, "x", 1), 0);
	zr_msg_free(m);
}

/* A ring's producer keeps 4 KiB buffers while the ring's depth times 4 KiB
 * stays under 1 MiB: the first 256 spares keep theirs, the rest are given
 * back bare; 1 KiB buffers, four times as many; 8 KiB ones never (over the
 * 4 KiB limit); small ones always. */
static size_t
give_and_count_kept(size_t n, size_t cap)
{
	struct zr__spsc ring;
	size_t kept = 0;
	zr_msg *m;

	cr_assert_eq(zr__spsc_init(&ring, 2048), 0);
	for (size_t i = 0; i < n; i++)
		zr__sock_spare_give(&ring, msg_with(cap / 2 + 1, cap));
	while ((m = zr__spsc_pop(&ring)) != NULL) {
		cr_assert_eq(zr_msg_size(m), 0, "a spare is empty");
		kept += zr__msg_keep_cap(m) == cap;
		zr_msg_free(m);
	}
	zr__spsc_fini(&ring);
	return kept;
}

/* What the ring hands out is as empty as a new message, whichever way it
 * was emptied: the inline one (a plain small message), or the general one
 * (a grown frame table, properties, wire bytes). Its next message is
 * counted from zero: the queues' budgets read m->len. */
static void
check_given_back_empty(zr_msg *m, const char *what)
{
	struct zr__spsc ring;
	zr_msg *got;

	cr_assert_eq(zr__spsc_init(&ring, 16), 0);
	m->refs = 3; /* a fan-out's count, spent */
	zr__sock_spare_give(&ring, m);
	got = zr__spsc_pop(&ring);
	cr_assert_eq(got, m, "%s: kept", what);
	cr_assert_eq(m->nframes, 0, "%s: frames", what);
	cr_assert_eq(m->len, 0, "%s: length", what);
	cr_assert_eq(m->refs, 1, "%s: references", what);
	cr_assert(!m->raw, "%s: raw", what);
	cr_assert_null(m->meta, "%s: properties", what);
	cr_assert_eq(m->frames, m->inl, "%s: frame table", what);
	cr_assert_eq(zr_msg_add(m, "abc", 3), 0);
	cr_assert_eq(zr__msg_cost(m), 3 + sizeof(struct zr__span), "%s: the next one's cost", what);
	cr_assert_eq(memcmp(zr_msg_frame(m, 0, NULL), "abc", 3), 0, "%s: the next one's bytes",
	             what);
	zr_msg_free(m);
	zr__spsc_fini(&ring);
}

Test(spare, a_spare_given_back_is_empty_whichever_way_it_was_emptied)
{
	zr_msg *m = msg_with(100, ZR__MSG_SPARE_SMALL);

	check_given_back_empty(m, "plain");

	m = msg_with(10, ZR__MSG_SPARE_SMALL);
	for (int i = 0; i < 2 * ZR__MSG_INLINE_FRAMES; i++)
		cr_assert_eq(zr_msg_add(m, "x", 1), 0);
	cr_assert_neq(m->frames, m->inl, "the table grew");
	check_given_back_empty(m, "grown table");

	m = msg_with(10, ZR__MSG_SPARE_SMALL);
	m->meta = zr__meta_new((const uint8_t *)"", 0, "127.0.0.1", NULL);
	cr_assert_not_null(m->meta);
	check_given_back_empty(m, "properties");

	m = msg_with(10, ZR__MSG_SPARE_SMALL);
	m->raw = true;
	check_given_back_empty(m, "wire bytes");
}

Test(spare, a_ring_keeps_larger_buffers_up_to_its_byte_limit_only)
{
	cr_assert_eq(give_and_count_kept(400, 4096), 256);
	cr_assert_eq(give_and_count_kept(1500, 1024), 1024);
	cr_assert_eq(give_and_count_kept(10, 8192), 0);
	cr_assert_eq(give_and_count_kept(1500, ZR__MSG_SPARE_SMALL), 1500);
}

/* ---- a stream --------------------------------------------------------------- */

/* Sizes around the small limit (256), the kept limit (4 KiB), the packing
 * and direct-receive thresholds, in an order where each size follows a
 * larger and a smaller one. */
static const size_t stream_sizes[] = {1,   300, 1024,  4096, 4097, 16385, 40,  9000,
                                      257, 256, 70000, 2048, 0,    3000,  255, 33000};
#define STREAM_NSIZES (sizeof stream_sizes / sizeof stream_sizes[0])
#define STREAM_MESSAGES 6000

static uint8_t
stream_byte(unsigned k, size_t i)
{
	return (uint8_t)(k * 131u + i * 7u + (i >> 8));
}

static void *
stream_sender(void *arg)
{
	zr_socket *push = arg;
	static uint8_t buf[70000];

	for (unsigned k = 0; k < STREAM_MESSAGES; k++) {
		size_t len = stream_sizes[k % STREAM_NSIZES];

		for (size_t i = 0; i < len; i++)
			buf[i] = stream_byte(k, i);
		if (zr_send_bytes(push, buf, len, 0) < 0)
			return (void *)1;
	}
	return NULL;
}

static void
stream_check(unsigned k, const uint8_t *p, size_t len)
{
	size_t want = stream_sizes[k % STREAM_NSIZES];

	cr_assert_eq(len, want, "message %u: %zu octets, want %zu", k, len, want);
	for (size_t i = 0; i < len; i++)
		if (p[i] != stream_byte(k, i))
			cr_assert_fail("message %u: octet %zu is %u, want %u", k, i, p[i],
			               stream_byte(k, i));
}

/* Every receive call in turn: zr_recv_bytes and zr_recv_into give the
 * message back as a spare at once (zr_recv_into trades buffers with the
 * caller's message), zr_recv hands it over. A short receive queue and
 * kernel buffers make the sender wait now and then, so spares pile up and
 * drain on both sides. */
static void
stream_run(const char *endpoint)
{
	zr_ctx *ctx;
	zr_socket *push, *pull;
	zr_msg *into;
	pthread_t th;
	void *failed;
	char ep[128];
	static uint8_t buf[70001];

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	sopt_int(pull, ZR_RCVHWM, 64);
	sopt_int(pull, ZR_RCVBUF, 65536);
	sock_bind_connect(pull, endpoint, push, ep, sizeof ep);
	cr_assert_eq(zr_msg_new(&into), 0);
	cr_assert_eq(pthread_create(&th, NULL, stream_sender, push), 0);

	for (unsigned k = 0; k < STREAM_MESSAGES; k++) {
		zr_msg *m;
		size_t len;
		const void *f;
		int rc;

		if (k % 1000 == 500)
			sleep_ms(10); /* the sender runs into a full window */
		switch (k % 3) {
		case 0:
			rc = zr_recv_bytes(pull, buf, sizeof buf, 0);
			cr_assert_geq(rc, 0, "message %u: %d", k, rc);
			stream_check(k, buf, (size_t)rc);
			break;
		case 1:
			cr_assert_eq(zr_recv_into(pull, into, 0), 0, "message %u", k);
			cr_assert_eq(zr_msg_frames(into), 1, "message %u", k);
			f = zr_msg_frame(into, 0, &len);
			stream_check(k, f, len);
			break;
		default:
			cr_assert_eq(zr_recv(pull, &m, 0), 0, "message %u", k);
			cr_assert_eq(zr_msg_frames(m), 1, "message %u", k);
			f = zr_msg_frame(m, 0, &len);
			stream_check(k, f, len);
			zr_msg_free(m);
			break;
		}
	}
	cr_assert_eq(pthread_join(th, &failed), 0);
	cr_assert_null(failed, "the sender failed");
	zr_msg_free(into);
	sock_pair_free(ctx, push, pull);
}

Test(spare, every_size_arrives_byte_exact_through_every_receive_call_over_tcp, .timeout = 120)
{
	stream_run("tcp://127.0.0.1:*");
}

/* inproc hands the receiver's spares to the sender (inproc.c): the same
 * buffers go round without a connection in between. */
Test(spare, every_size_arrives_byte_exact_through_every_receive_call_over_inproc, .timeout = 120)
{
	stream_run("inproc://spare-stream");
}

/* The sending app sees a spare in its ring within ten seconds, without
 * another send. */
static void
spare_comes_back(zr_socket *s, const char *how, int i)
{
	for (int waited = 0; zr__spsc_count(&s->tx_spare) == 0 && waited < 10000; waited++)
		sleep_ms(1);
	cr_assert_gt(zr__spsc_count(&s->tx_spare), 0, "message %d %s, and no spare came back", i,
	             how);
}

/* A message the connection has written comes back to the sending app as a
 * spare, visible to it: the io thread puts the spares of a written batch
 * quietly and publishes the ring once for the batch. Sent one at a time,
 * each received before the next goes, so every batch is one message. */
Test(spare, each_written_batch_comes_back_to_the_sender_as_spares, .timeout = 60)
{
	zr_ctx *ctx;
	zr_socket *push, *pull;
	char ep[128], buf[8];

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	sopt_int(pull, ZR_RCVTIMEO, 10000);
	sock_bind_connect(pull, "tcp://127.0.0.1:*", push, ep, sizeof ep);
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(zr_send_bytes(push, "spare", 5, 0), 0);
		cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, 0), 5, "message %d", i);
		spare_comes_back(push, "written", i);
	}
	sock_pair_free(ctx, push, pull);
}

/* The same for a publisher's messages that match nobody: the route gives
 * them back itself (no connection's batch publishes the ring after it). */
Test(spare, an_unmatched_publish_comes_back_to_the_sender_as_a_spare, .timeout = 60)
{
	zr_ctx *ctx;
	zr_socket *pub;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUB, &pub), 0);
	cr_assert_eq(zr_bind(pub, "tcp://127.0.0.1:*"), 0);
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(zr_send_bytes(pub, "nobody", 6, 0), 0);
		spare_comes_back(pub, "dropped", i);
	}
	zr_socket_close(pub);
	zr_ctx_free(ctx);
}

/* A z85 key option. */
static void
key_opt(zr_socket *s, int opt, const char *z85)
{
	cr_assert_eq(zr_setsockopt(s, opt, z85, strlen(z85)), 0, "option %d", opt);
}

/* 64 KiB message n: its number, then octet i = (n + i) & 0xff. */
static void
big_fill(uint8_t *p, size_t len, unsigned n)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((n + i) & 0xff);
	memcpy(p, &n, sizeof n);
}

static void
big_check(const uint8_t *p, size_t len, unsigned n)
{
	unsigned got;

	memcpy(&got, p, sizeof got);
	cr_assert_eq(got, n, "message %u arrived as %u", n, got);
	for (size_t i = sizeof n; i < len; i++)
		if (p[i] != (uint8_t)((n + i) & 0xff))
			cr_assert_fail("message %u: octet %zu is %u", n, i, p[i]);
}

/*
 * A large message's buffer, once the app has read the message out, goes
 * back to the io thread (rx_bufs) and takes the next large frame: a plain
 * one is received into it, and under CURVE it is the connection's next
 * receive buffer, which the next box, opened in place, then leaves to its
 * message. No malloc on one thread and free on the other per message. Sent
 * one at a time, each read before the next goes: after each read the ring
 * holds the buffer just given back, and no more (the io thread took the one
 * before for the next message). Both ways of reading out give buffers back:
 * a copy (zr_recv_bytes) and a kept message that takes each new one's
 * buffer (zr_recv_into). Every octet of every message arrives as sent,
 * though each buffer is used again.
 */
static void
large_buffers_come_back(bool curve)
{
	enum {
		SIZE = 64 * 1024,
		N = 12
	};
	static uint8_t out[SIZE], in[SIZE + 1];
	char srv_pub[ZR_CURVE_KEY_Z85_LEN + 1], srv_sec[ZR_CURVE_KEY_Z85_LEN + 1];
	char cli_pub[ZR_CURVE_KEY_Z85_LEN + 1], cli_sec[ZR_CURVE_KEY_Z85_LEN + 1];
	zr_ctx *ctx;
	zr_socket *push, *pull;
	zr_msg *kept;
	char ep[128];
	int one = 1;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	if (curve) {
		cr_assert_eq(zr_curve_keypair(srv_pub, srv_sec), 0);
		cr_assert_eq(zr_curve_keypair(cli_pub, cli_sec), 0);
		cr_assert_eq(zr_setsockopt(pull, ZR_CURVE_SERVER, &one, sizeof one), 0);
		key_opt(pull, ZR_CURVE_SECRETKEY, srv_sec);
		key_opt(push, ZR_CURVE_SERVERKEY, srv_pub);
		key_opt(push, ZR_CURVE_PUBLICKEY, cli_pub);
		key_opt(push, ZR_CURVE_SECRETKEY, cli_sec);
	}
	sopt_int(pull, ZR_RCVTIMEO, 10000);
	sock_bind_connect(pull, "tcp://127.0.0.1:*", push, ep, sizeof ep);
	cr_assert_eq(zr_msg_new(&kept), 0);
	for (unsigned n = 0; n < 2 * N; n++) {
		size_t held;

		big_fill(out, SIZE, n);
		cr_assert_eq(zr_send_bytes(push, out, SIZE, 0), 0, "message %u", n);
		if (n < N) {
			cr_assert_eq(zr_recv_bytes(pull, in, sizeof in, 0), SIZE, "message %u", n);
			big_check(in, SIZE, n);
		} else {
			size_t len;
			const uint8_t *f;

			cr_assert_eq(zr_recv_into(pull, kept, 0), 0, "message %u", n);
			f = zr_msg_frame(kept, 0, &len);
			cr_assert_eq(len, SIZE, "message %u", n);
			big_check(f, len, n);
		}
		held = zr__spsc_count(&pull->rx_bufs);
		/* The first read out of a kept message gives back the copy's
		 * own (small) buffer: from the second on, a large one. */
		if (n > 0 && n != N)
			cr_assert_eq(held, 1, "message %u: %zu buffers given back and not taken", n,
			             held);
	}
	zr_msg_free(kept);
	sock_pair_free(ctx, push, pull);
}

Test(spare, a_large_buffer_read_out_takes_the_next_large_frame, .timeout = 60)
{
	large_buffers_come_back(false);
}

Test(spare, a_large_curve_buffer_read_out_is_the_next_box_buffer, .timeout = 60)
{
	large_buffers_come_back(true);
}
