/*
 * Zero-copy messages and reused receive messages: zr_msg_new_data (the
 * caller's bytes, a free callback once zring is done with them),
 * zr_msg_set_free, zr_recv_into (one message received into again and again).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zring/zring.h>

#include "ctx_fixture.h"
#include "sock_helpers.h"

CTX_SUITE(zerocopy, 60);

struct freed {
	atomic_int n;
	void *data; /* what the last call was given */
};

static void
on_free(void *data, void *hint)
{
	struct freed *f = hint;

	f->data = data;
	atomic_fetch_add(&f->n, 1);
}

static void
wait_freed(struct freed *f, int want)
{
	for (int i = 0; i < WAIT_MS && atomic_load(&f->n) < want; i++)
		sleep_ms(1);
	cr_assert_eq(atomic_load(&f->n), want);
}

Test(zerocopy, new_data_is_the_callers_bytes)
{
	static char body[] = "not copied";
	struct freed f = {0};
	zr_msg *m;
	size_t len;

	cr_assert_eq(zr_msg_new_data(&m, NULL, 1, on_free, &f), -EINVAL);
	cr_assert_eq(zr_msg_new_data(&m, body, sizeof body, on_free, &f), 0);
	cr_assert_eq(zr_msg_frames(m), 1);
	cr_assert_eq(zr_msg_frame(m, 0, &len), body);
	cr_assert_eq(len, sizeof body);
	cr_assert_eq(zr_msg_set_free(m, on_free, &f), -EBUSY);
	zr_msg_free(m);
	cr_assert_eq(atomic_load(&f.n), 1);
	cr_assert_eq(f.data, body);
}

/* A frame added to it: the bytes are copied first, and let go at once. */
Test(zerocopy, add_copies_then_frees)
{
	static char body[] = "first";
	struct freed f = {0};
	zr_msg *m;
	size_t len;
	const char *p;

	cr_assert_eq(zr_msg_new_data(&m, body, 5, on_free, &f), 0);
	cr_assert_eq(zr_msg_add(m, "second", 6), 0);
	cr_assert_eq(atomic_load(&f.n), 1);
	p = zr_msg_frame(m, 0, &len);
	cr_assert_neq(p, body);
	cr_assert(len == 5 && memcmp(p, "first", 5) == 0);
	p = zr_msg_frame(m, 1, &len);
	cr_assert(len == 6 && memcmp(p, "second", 6) == 0);
	zr_msg_free(m);
	cr_assert_eq(atomic_load(&f.n), 1);
}

/* Sent: freed once written, not before a peer could take it. */
Test(zerocopy, freed_after_sent)
{
	static char body[50000];
	struct freed f = {0}, g = {0};
	zr_socket *push = ctx_open(ZR_PUSH), *pull;
	char ep[128];
	zr_msg *m;
	size_t len;

	memset(body, 'b', sizeof body);
	snprintf(ep, sizeof ep, "ipc:///tmp/zring-zerocopy-%d", (int)getpid());
	cr_assert_eq(zr_connect(push, ep), 0);
	cr_assert_eq(zr_msg_new_data(&m, body, sizeof body, on_free, &f), 0);
	cr_assert_eq(zr_send(push, &m, ZR_DONTWAIT), 0);
	cr_assert_null(m);
	/* a copied message, watched */
	cr_assert_eq(zr_msg_new(&m), 0);
	cr_assert_eq(zr_msg_add(m, "watched", 7), 0);
	cr_assert_eq(zr_msg_set_free(m, on_free, &g), 0);
	cr_assert_eq(zr_send(push, &m, ZR_DONTWAIT), 0);
	cr_assert_eq(atomic_load(&f.n), 0, "freed before any peer could take it");
	cr_assert_eq(atomic_load(&g.n), 0);
	pull = ctx_open(ZR_PULL);
	cr_assert_eq(zr_bind(pull, ep), 0);
	cr_assert_eq(zr_recv(pull, &m, 0), 0);
	cr_assert(memcmp(zr_msg_frame(m, 0, &len), body, sizeof body) == 0);
	cr_assert_eq(len, sizeof body);
	zr_msg_free(m);
	cr_assert_eq(zr_recv(pull, &m, 0), 0);
	zr_msg_free(m);
	wait_freed(&f, 1);
	cr_assert_eq(f.data, body);
	wait_freed(&g, 1);
	cr_assert_null(g.data);
	zr_socket_close(push);
	zr_socket_close(pull);
}

/* One message received into again and again: small, large, many frames;
 * its properties follow the message. */
Test(zerocopy, recv_into_reuses)
{
	zr_socket *push = ctx_open(ZR_PUSH), *pull = ctx_open(ZR_PULL);
	static char big[100000];
	char ep[256];
	zr_msg *in, *m;
	size_t len;

	memset(big, 'B', sizeof big);
	sock_bind_connect(pull, "tcp://127.0.0.1:0", push, ep, sizeof ep);
	cr_assert_eq(zr_msg_new(&in), 0);
	for (int round = 0; round < 3; round++) {
		cr_assert_eq(zr_send_bytes(push, "small", 5, 0), 0);
		cr_assert_eq(zr_send_bytes(push, big, sizeof big, 0), 0);
		cr_assert_eq(zr_msg_new(&m), 0);
		for (int i = 0; i < 6; i++)
			cr_assert_eq(zr_msg_add(m, "abcdef", (size_t)i), 0);
		cr_assert_eq(zr_send(push, &m, 0), 0);

		cr_assert_eq(zr_recv_into(pull, in, 0), 0);
		cr_assert_eq(zr_msg_frames(in), 1);
		cr_assert(memcmp(zr_msg_frame(in, 0, &len), "small", 5) == 0 && len == 5);
		cr_assert_not_null(zr_msg_gets(in, "Peer-Address"));
		cr_assert_eq(zr_recv_into(pull, in, 0), 0);
		cr_assert_eq(zr_msg_frames(in), 1);
		cr_assert(memcmp(zr_msg_frame(in, 0, &len), big, sizeof big) == 0);
		cr_assert_eq(len, sizeof big);
		cr_assert_not_null(zr_msg_gets(in, "Peer-Address"));
		cr_assert_eq(zr_recv_into(pull, in, 0), 0);
		cr_assert_eq(zr_msg_frames(in), 6);
		for (size_t i = 0; i < 6; i++) {
			cr_assert(memcmp(zr_msg_frame(in, i, &len), "abcdef", i) == 0);
			cr_assert_eq(len, i);
		}
	}
	/* Small after small, the usual stream: each replaces the last whole
	 * (a shorter one leaves nothing of the longer), frames and all. */
	cr_assert_eq(zr_send_bytes(push, "first, the longer one", 21, 0), 0);
	cr_assert_eq(zr_msg_new(&m), 0);
	cr_assert_eq(zr_msg_add(m, "ab", 2), 0);
	cr_assert_eq(zr_msg_add(m, "", 0), 0);
	cr_assert_eq(zr_msg_add(m, "cde", 3), 0);
	cr_assert_eq(zr_send(push, &m, 0), 0);
	cr_assert_eq(zr_send_bytes(push, "z", 1, 0), 0);
	cr_assert_eq(zr_recv_into(pull, in, 0), 0);
	cr_assert_eq(zr_msg_frames(in), 1);
	cr_assert(memcmp(zr_msg_frame(in, 0, &len), "first, the longer one", 21) == 0 && len == 21);
	cr_assert_eq(zr_recv_into(pull, in, 0), 0);
	cr_assert_eq(zr_msg_frames(in), 3);
	cr_assert_eq(zr_msg_size(in), 5);
	cr_assert(memcmp(zr_msg_frame(in, 0, &len), "ab", 2) == 0 && len == 2);
	cr_assert_not_null(zr_msg_frame(in, 1, &len));
	cr_assert_eq(len, 0);
	cr_assert(memcmp(zr_msg_frame(in, 2, &len), "cde", 3) == 0 && len == 3);
	cr_assert_not_null(zr_msg_gets(in, "Peer-Address"));
	cr_assert_eq(zr_recv_into(pull, in, 0), 0);
	cr_assert_eq(zr_msg_frames(in), 1);
	cr_assert_eq(zr_msg_size(in), 1);
	cr_assert(memcmp(zr_msg_frame(in, 0, &len), "z", 1) == 0 && len == 1);
	cr_assert_not_null(zr_msg_gets(in, "Peer-Address"));
	/* Nothing there: -EAGAIN, and the message is as it was. */
	cr_assert_eq(zr_recv_into(pull, in, ZR_DONTWAIT), -EAGAIN);
	cr_assert_eq(zr_msg_frames(in), 1);
	zr_msg_free(in);
	zr_socket_close(push);
	zr_socket_close(pull);
}

/* inproc hands the message over by pointer: the receiver reads the
 * sender's bytes, which are freed when the receiver lets go. */
Test(zerocopy, inproc_passes_the_bytes)
{
	zr_socket *push = ctx_open(ZR_PUSH), *pull = ctx_open(ZR_PULL);
	static char body[4000];
	struct freed f = {0};
	zr_msg *m, *in;

	memset(body, 'i', sizeof body);
	cr_assert_eq(zr_bind(pull, "inproc://zerocopy"), 0);
	cr_assert_eq(zr_connect(push, "inproc://zerocopy"), 0);
	cr_assert_eq(zr_msg_new_data(&m, body, sizeof body, on_free, &f), 0);
	cr_assert_eq(zr_send(push, &m, 0), 0);
	cr_assert_eq(zr_msg_new(&in), 0);
	cr_assert_eq(zr_recv_into(pull, in, 0), 0);
	cr_assert_eq(zr_msg_frame(in, 0, NULL), body);
	cr_assert_eq(atomic_load(&f.n), 0);
	/* The next message takes its place: the first one's bytes go. */
	cr_assert_eq(zr_send_bytes(push, "next", 4, 0), 0);
	cr_assert_eq(zr_recv_into(pull, in, 0), 0);
	wait_freed(&f, 1);
	cr_assert_eq(f.data, body);
	zr_msg_free(in);
	zr_socket_close(push);
	zr_socket_close(pull);
}
