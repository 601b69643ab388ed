/*
 * The TLS adapter (engine/tls.c) with two sessions back to back in memory:
 * handshakes, plaintext round trips split every way, mutual TLS, and each
 * failure with the words it must give. Certificates come from the openssl
 * command at test time (make_certs.sh), a fresh set per test.
 */
#include "tls_util.h"

#include <criterion/parameterized.h>
#include <malloc.h>
#include <openssl/crypto.h>

static struct tt_certs certs;

static void
setup(void)
{
	tt_certs_make(&certs);
}

static void
teardown(void)
{
	tt_certs_remove(&certs);
}

TestSuite(tls_adapter, .init = setup, .fini = teardown, .timeout = 120);

/* ----------------------------------------------------------------------- */
/* Handshakes that succeed */

Test(tls_adapter, handshake_completes_on_tls13_and_names_the_server)
{
	struct zr__tls_ctx *sc = tt_server(&certs, "server", false);
	struct zr__tls_ctx *cc = tt_client(&certs, NULL);
	struct zr__tls *s = tt_session(sc, NULL), *c = tt_session(cc, "localhost");

	cr_assert_gt(zr__tls_pending(c), 0, "a client's ClientHello is ready at once");
	cr_assert_eq(zr__tls_pending(s), 0);
	cr_assert_not(zr__tls_done(c));
	tt_pump(c, s);
	cr_assert(zr__tls_done(c), "client: %s", zr__tls_error(c));
	cr_assert(zr__tls_done(s), "server: %s", zr__tls_error(s));
	cr_assert_str_eq(zr__tls_version(c), "TLSv1.3");
	cr_assert_str_eq(zr__tls_version(s), "TLSv1.3");
	cr_assert_str_eq(zr__tls_peer_subject(c), "CN=localhost");
	cr_assert_null(zr__tls_peer_subject(s), "no client certificate was asked for");
	cr_assert_eq(zr__tls_failure(c), ZR__TLS_OK);
	cr_assert_str_eq(zr__tls_error(c), "");
	zr__tls_free(c);
	zr__tls_free(s);
	zr__tls_ctx_free(cc);
	zr__tls_ctx_free(sc);
}

Test(tls_adapter, ip_address_is_checked_against_ip_subject_alt_names)
{
	struct zr__tls_ctx *sc = tt_server(&certs, "server", false);
	struct zr__tls_ctx *cc = tt_client(&certs, NULL);
	static const char *const good[] = {"127.0.0.1", "localhost"};
	static const char *const bad[] = {"127.0.0.2", "[::1]", "::1", "localhost.localdomain"};
	size_t i;

	for (i = 0; i < ZR_ARRAY_LEN(good); i++) {
		struct zr__tls *s = tt_session(sc, NULL), *c = tt_session(cc, good[i]);

		tt_pump(c, s);
		cr_assert(zr__tls_done(c), "%s: %s", good[i], zr__tls_error(c));
		cr_assert(zr__tls_done(s), "%s: %s", good[i], zr__tls_error(s));
		zr__tls_free(c);
		zr__tls_free(s);
	}
	for (i = 0; i < ZR_ARRAY_LEN(bad); i++) {
		struct zr__tls *s = tt_session(sc, NULL), *c = tt_session(cc, bad[i]);

		tt_pump(c, s);
		cr_assert_not(zr__tls_done(c), "%s accepted", bad[i]);
		cr_assert_eq(zr__tls_failure(c), ZR__TLS_NAME_MISMATCH, "%s: %s", bad[i],
		             zr__tls_error(c));
		cr_assert_not_null(strstr(zr__tls_error(c), "name mismatch"), "%s",
		                   zr__tls_error(c));
		zr__tls_free(c);
		zr__tls_free(s);
	}
	zr__tls_ctx_free(cc);
	zr__tls_ctx_free(sc);
}

Test(tls_adapter, allowing_tls12_still_negotiates_tls13)
{
	struct zr__tls_config scfg = {.server = true, .allow_tls12 = true};
	struct zr__tls_config ccfg = {.verify = -1};
	struct zr__tls_ctx *sc, *cc;
	struct zr__tls *s, *c;

	scfg.cert_file = tt_path(&certs, "server.pem");
	scfg.key_file = tt_path(&certs, "server.key");
	ccfg.ca_file = tt_path(&certs, "ca.pem");
	sc = tt_ctx(&scfg);
	cc = tt_ctx(&ccfg);
	/* Both allow 1.2 and prefer 1.3. */
	s = tt_session(sc, NULL);
	c = tt_session(cc, "localhost");
	tt_pump(c, s);
	cr_assert(zr__tls_done(c), "%s", zr__tls_error(c));
	cr_assert_str_eq(zr__tls_version(c), "TLSv1.3");
	zr__tls_free(c);
	zr__tls_free(s);
	zr__tls_ctx_free(sc);
	zr__tls_ctx_free(cc);
}

Test(tls_adapter, pem_text_works_like_files)
{
	static char cert[8192], key[8192], ca[8192];
	const char *names[] = {"server.pem", "server.key", "ca.pem"};
	char *bufs[] = {cert, key, ca};
	size_t lens[3];
	struct zr__tls_ctx *sc, *cc;
	struct zr__tls *s, *c;

	for (int i = 0; i < 3; i++) {
		FILE *f = fopen(tt_path(&certs, names[i]), "rb");

		cr_assert_not_null(f);
		lens[i] = fread(bufs[i], 1, 8192, f);
		fclose(f);
		cr_assert_gt(lens[i], 0);
	}
	sc = tt_ctx(&(struct zr__tls_config){.server = true,
	                                     .cert_pem = cert,
	                                     .cert_pem_len = lens[0],
	                                     .key_pem = key,
	                                     .key_pem_len = lens[1]});
	cc = tt_ctx(&(struct zr__tls_config){.verify = -1, .ca_pem = ca, .ca_pem_len = lens[2]});
	s = tt_session(sc, NULL);
	c = tt_session(cc, "localhost");
	tt_pump(c, s);
	cr_assert(zr__tls_done(c), "%s", zr__tls_error(c));
	cr_assert(zr__tls_done(s), "%s", zr__tls_error(s));
	zr__tls_free(c);
	zr__tls_free(s);
	zr__tls_ctx_free(sc);
	zr__tls_ctx_free(cc);
}

Test(tls_adapter, mutual_tls_exposes_the_client_subject)
{
	struct zr__tls_ctx *sc = tt_server(&certs, "server", true);
	struct zr__tls_ctx *cc = tt_client(&certs, "client");
	struct zr__tls *s = tt_session(sc, NULL), *c = tt_session(cc, "localhost");

	tt_pump(c, s);
	cr_assert(zr__tls_done(c), "%s", zr__tls_error(c));
	cr_assert(zr__tls_done(s), "%s", zr__tls_error(s));
	/* RFC 2253 lists the most specific RDN first. */
	cr_assert_str_eq(zr__tls_peer_subject(s), "CN=client one,O=zring test");
	cr_assert_str_eq(zr__tls_peer_subject(c), "CN=localhost");
	zr__tls_free(c);
	zr__tls_free(s);
	zr__tls_ctx_free(cc);
	zr__tls_ctx_free(sc);
}

Test(tls_adapter, client_without_verification_accepts_any_server_and_still_names_it)
{
	struct zr__tls_ctx *sc = tt_server(&certs, "rogue", false);
	struct zr__tls_ctx *cc = tt_ctx(&(struct zr__tls_config){.verify = 0});
	struct zr__tls *s = tt_session(sc, NULL), *c = tt_session(cc, NULL);

	tt_pump(c, s);
	cr_assert(zr__tls_done(c), "%s", zr__tls_error(c));
	cr_assert_str_eq(zr__tls_peer_subject(c), "CN=localhost");
	zr__tls_free(c);
	zr__tls_free(s);
	zr__tls_ctx_free(cc);
	zr__tls_ctx_free(sc);
}

/* ----------------------------------------------------------------------- */
/* Plaintext */

/* One session pair, handshake done. */
struct pair {
	struct zr__tls_ctx *sc, *cc;
	struct zr__tls *s, *c;
};

static void
pair_open(struct pair *p)
{
	p->sc = tt_server(&certs, "server", false);
	p->cc = tt_client(&certs, NULL);
	p->s = tt_session(p->sc, NULL);
	p->c = tt_session(p->cc, "localhost");
	tt_pump(p->c, p->s);
	cr_assert(zr__tls_done(p->c) && zr__tls_done(p->s), "%s / %s", zr__tls_error(p->c),
	          zr__tls_error(p->s));
}

static void
pair_close(struct pair *p)
{
	zr__tls_free(p->c);
	zr__tls_free(p->s);
	zr__tls_ctx_free(p->cc);
	zr__tls_ctx_free(p->sc);
}

/* A ZMTP 3.1 NULL greeting: what crosses first on every connection. */
static const uint8_t greeting[64] = {0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 3, 1, 'N', 'U', 'L', 'L'};

/* Sends the greeting from `from` as three records (10, 1 and 53 bytes), then
 * feeds the ciphertext to `to` cut at `split` (the whole when split is past
 * the end) and reads plaintext after each part. */
static void
greeting_split(struct zr__tls *from, struct zr__tls *to, size_t split, size_t *total)
{
	static const size_t parts[] = {10, 1, 53};
	uint8_t wire[1024], got[128];
	size_t off = 0, wlen, have = 0;

	for (size_t i = 0; i < ZR_ARRAY_LEN(parts); i++) {
		cr_assert_eq(zr__tls_write(from, greeting + off, parts[i]), (ssize_t)parts[i]);
		off += parts[i];
	}
	wlen = zr__tls_pull(from, wire, sizeof(wire));
	cr_assert_lt(wlen, sizeof(wire));
	cr_assert_eq(zr__tls_pending(from), 0);
	*total = wlen;
	if (split > wlen)
		split = wlen;
	for (int step = 0; step < 2; step++) {
		const uint8_t *p = step == 0 ? wire : wire + split;
		size_t n = step == 0 ? split : wlen - split;
		ssize_t r;

		if (n > 0)
			cr_assert_eq(zr__tls_feed(to, p, n), (ssize_t)n);
		while ((r = zr__tls_read(to, got + have, sizeof(got) - have)) > 0)
			have += (size_t)r;
		cr_assert_eq(r, 0, "read: %zd %s", r, zr__tls_error(to));
	}
	cr_assert_eq(have, sizeof(greeting), "split %zu", split);
	cr_assert_arr_eq(got, greeting, sizeof(greeting), "split %zu", split);
}

Test(tls_adapter, greeting_sized_records_round_trip_split_at_every_boundary)
{
	for (int dir = 0; dir < 2; dir++) {
		size_t total = SIZE_MAX;

		for (size_t split = 0; split <= total; split++) {
			struct pair p;
			size_t t;

			pair_open(&p);
			if (dir == 0)
				greeting_split(p.c, p.s, split, &t);
			else
				greeting_split(p.s, p.c, split, &t);
			cr_assert(total == SIZE_MAX || t == total, "record sizes vary");
			total = t;
			pair_close(&p);
		}
		/* Three records of TLS 1.3 with AEAD: 3 x (5 + 16 + 1) of
		 * overhead, so every split has been both mid-header and mid-body. */
		cr_assert_eq(total, 64 + 3 * 22, "ciphertext of %zu bytes", total);
	}
}

/* xorshift64*, seeded and printed, so a failing run can be replayed. */
static uint64_t
rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

static size_t
rng_upto(uint64_t *s, size_t max)
{
	return 1 + (size_t)(rng_next(s) % max);
}

/* One direction of a bulk transfer: what to send, what came out. */
struct flow {
	struct zr__tls *tx, *rx;
	const uint8_t *src;
	uint8_t *dst;
	size_t len, sent, got;
	uint8_t carry[ZR__TLS_BUF_OUT];
	size_t carry_len;
};

static bool
flow_step(struct flow *f, uint64_t *rng, bool copy)
{
	bool progress = false;
	uint8_t buf[4096];
	ssize_t r;

	if (f->sent < f->len) {
		/* Several iovecs, so records straddle them. */
		struct iovec iov[3];
		size_t left = f->len - f->sent, off = f->sent;
		int n = 0;

		for (; n < 3 && left > 0; n++) {
			size_t k = rng_upto(rng, 20000);

			if (k > left)
				k = left;
			iov[n].iov_base = (void *)(uintptr_t)(f->src + off);
			iov[n].iov_len = k;
			off += k;
			left -= k;
		}
		r = zr__tls_writev(f->tx, iov, n);
		cr_assert_geq(r, 0, "writev: %s", zr__tls_error(f->tx));
		f->sent += (size_t)r;
		progress |= r > 0;
	} else {
		progress |= zr__tls_flush(f->tx) == 1;
	}
	cr_assert_leq(zr__tls_pending(f->tx), ZR__TLS_BUF_OUT,
	              "outbound ciphertext over its bound");
	progress |=
		(copy ? tt_move_copy(f->tx, f->rx, f->carry, &f->carry_len, rng_upto(rng, 40000))
	              : tt_move(f->tx, f->rx, rng_upto(rng, 40000))) > 0;
	for (;;) {
		size_t cap = rng_upto(rng, sizeof(buf));

		r = zr__tls_read(f->rx, buf, cap);
		cr_assert_geq(r, 0, "read: %s", zr__tls_error(f->rx));
		if (r == 0)
			break;
		cr_assert_leq(f->got + (size_t)r, f->len, "more plaintext than was sent");
		memcpy(f->dst + f->got, buf, (size_t)r);
		f->got += (size_t)r;
		progress = true;
	}
	return progress;
}

static void
bulk_both_ways(bool copy)
{
	const size_t len = 1u << 20;
	uint64_t seed = 0x9E3779B97F4A7C15ULL ^ (uint64_t)copy, rng = seed;
	uint8_t *a = malloc(len), *b = malloc(len), *ra = malloc(len), *rb = malloc(len);
	struct flow *up = calloc(1, sizeof(*up)), *down = calloc(1, sizeof(*down));
	struct pair p;
	int idle = 0;

	cr_assert(a && b && ra && rb && up && down);
	cr_log_info("bulk transfer seed %#llx", (unsigned long long)seed);
	for (size_t i = 0; i < len; i++) {
		a[i] = (uint8_t)rng_next(&rng);
		b[i] = (uint8_t)(i * 7 + 3);
	}
	pair_open(&p);
	*up = (struct flow){.tx = p.c, .rx = p.s, .src = a, .dst = ra, .len = len};
	*down = (struct flow){.tx = p.s, .rx = p.c, .src = b, .dst = rb, .len = len};
	while (up->got < len || down->got < len) {
		bool moved = flow_step(up, &rng, copy);

		moved |= flow_step(down, &rng, copy);
		idle = moved ? 0 : idle + 1;
		cr_assert_lt(idle, 100, "stalled: up %zu/%zu, down %zu/%zu", up->got, up->sent,
		             down->got, down->sent);
	}
	cr_assert_arr_eq(ra, a, len);
	cr_assert_arr_eq(rb, b, len);
	pair_close(&p);
	free(a);
	free(b);
	free(ra);
	free(rb);
	free(up);
	free(down);
}

Test(tls_adapter, large_payloads_round_trip_both_ways_through_zero_copy_calls)
{
	bulk_both_ways(false);
}

Test(tls_adapter, large_payloads_round_trip_both_ways_through_copying_calls)
{
	bulk_both_ways(true);
}

/* An io_uring recv may be in flight into the recv span while the engine
 * reads plaintext, which empties (and rewinds) the inbound ring. */
Test(tls_adapter, recv_span_survives_plaintext_reads_while_in_flight)
{
	struct pair p;
	uint8_t wire[256], got[16], *span;
	size_t room, n;

	pair_open(&p);
	cr_assert_eq(zr__tls_write(p.c, "abc", 3), 3);
	n = zr__tls_pull(p.c, wire, sizeof(wire));
	cr_assert_eq(zr__tls_feed(p.s, wire, n), (ssize_t)n);
	span = zr__tls_recv_buf(p.s, &room); /* "the recv is armed" */
	cr_assert_not_null(span);
	cr_assert_eq(zr__tls_read(p.s, got, sizeof(got)), 3, "%s", zr__tls_error(p.s));
	cr_assert_arr_eq(got, "abc", 3);
	/* The next record lands in the span handed out before the read. */
	cr_assert_eq(zr__tls_write(p.c, "defgh", 5), 5);
	n = zr__tls_pull(p.c, wire, sizeof(wire));
	cr_assert_leq(n, room);
	memcpy(span, wire, n);
	cr_assert_eq(zr__tls_recv_ack(p.s, n), 0);
	cr_assert_eq(zr__tls_read(p.s, got, sizeof(got)), 5, "%s", zr__tls_error(p.s));
	cr_assert_arr_eq(got, "defgh", 5);
	pair_close(&p);
}

/* A send may be in flight from the send span while more is encrypted. */
Test(tls_adapter, send_span_survives_more_writes_while_in_flight)
{
	struct pair p;
	const uint8_t *span;
	uint8_t copy[256], got[16];
	size_t len;
	uint8_t *dst;
	size_t room;

	pair_open(&p);
	cr_assert_eq(zr__tls_write(p.c, "abc", 3), 3);
	span = zr__tls_send_buf(p.c, &len);
	cr_assert_not_null(span);
	cr_assert_leq(len, sizeof(copy));
	memcpy(copy, span, len);
	cr_assert_eq(zr__tls_write(p.c, "defgh", 5), 5);
	cr_assert_arr_eq(span, copy, len, "the span in flight changed");
	dst = zr__tls_recv_buf(p.s, &room);
	memcpy(dst, span, len);
	cr_assert_eq(zr__tls_send_ack(p.c, len), 0);
	cr_assert_eq(zr__tls_recv_ack(p.s, len), 0);
	tt_move(p.c, p.s, SIZE_MAX);
	cr_assert_eq(zr__tls_read(p.s, got, sizeof(got)), 3);
	cr_assert_eq(zr__tls_read(p.s, got + 3, sizeof(got) - 3), 5);
	cr_assert_arr_eq(got, "abcdefgh", 8);
	pair_close(&p);
}

/* OpenSSL's allocator hooks count what it allocates once the session is up:
 * the adapter adds nothing per message, and OpenSSL 3.0's record layer
 * allocates 4 small WPACKET blocks per record it writes (crypto/packet.c),
 * so that is the ceiling asserted. */
static unsigned long ossl_allocs;

static void *
ossl_count_malloc(size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	ossl_allocs++;
	return malloc(n);
}

static void *
ossl_count_realloc(void *p, size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	ossl_allocs++;
	return realloc(p, n);
}

static void
ossl_count_free(void *p, const char *file, int line)
{
	(void)file;
	(void)line;
	free(p);
}

/* OpenSSL accepts allocator hooks only before its first allocation in the
 * process, so they are installed before main (they only count). */
static bool ossl_counting;

__attribute__((constructor)) static void
ossl_count_install(void)
{
	ossl_counting = CRYPTO_set_mem_functions(ossl_count_malloc, ossl_count_realloc,
	                                         ossl_count_free) == 1;
}

Test(tls_adapter, steady_state_allocates_only_openssls_per_record_blocks)
{
	static uint8_t msg[64 * 1024], got[16 * 1024];
	static const size_t sizes[] = {64, sizeof(msg)};
	struct pair p;

	cr_assert(ossl_counting, "OpenSSL allocated before main");
	pair_open(&p);
	for (size_t k = 0; k < ZR_ARRAY_LEN(sizes); k++) {
		size_t len = sizes[k], records = 0, rcvd = 0;
		unsigned long before = ossl_allocs;

		for (int i = 0; i < 200; i++) {
			size_t off = 0;

			records += (len + ZR__TLS_STAGE - 1) / ZR__TLS_STAGE;
			while (off < len) {
				ssize_t w = zr__tls_write(p.c, msg + off, len - off), r;

				cr_assert_geq(w, 0);
				off += (size_t)w;
				(void)zr__tls_flush(p.c);
				tt_move(p.c, p.s, SIZE_MAX);
				while ((r = zr__tls_read(p.s, got, sizeof(got))) > 0)
					rcvd += (size_t)r;
				cr_assert_geq(r, 0);
			}
		}
		while (rcvd < 200 * len) {
			ssize_t r;

			(void)zr__tls_flush(p.c);
			tt_move(p.c, p.s, SIZE_MAX);
			while ((r = zr__tls_read(p.s, got, sizeof(got))) > 0)
				rcvd += (size_t)r;
		}
		cr_log_info("%zu-byte messages: %lu OpenSSL allocations for %zu records", len,
		            ossl_allocs - before, records);
		cr_assert_leq(ossl_allocs - before, 4 * records, "%lu allocations for %zu records",
		              ossl_allocs - before, records);
	}
	pair_close(&p);
}

Test(tls_adapter, full_buffers_push_back_instead_of_growing)
{
	struct pair p;
	static uint8_t big[256 * 1024];
	ssize_t w, f;
	size_t room, fed = 0;
	uint8_t wire[4096];

	pair_open(&p);
	/* Nobody sends: writes stop at the outbound bound. */
	w = zr__tls_write(p.c, big, sizeof(big));
	cr_assert_gt(w, 0);
	cr_assert_lt((size_t)w, sizeof(big), "accepted %zd with nowhere to put it", w);
	cr_assert_leq(zr__tls_pending(p.c), ZR__TLS_BUF_OUT);
	cr_assert_eq(zr__tls_write(p.c, big, sizeof(big)), 0);
	/* Nobody reads: the inbound side stops taking ciphertext at its bound. */
	for (;;) {
		size_t n = zr__tls_pull(p.c, wire, sizeof(wire));

		if (n == 0)
			break;
		f = zr__tls_feed(p.s, wire, n);
		cr_assert_geq(f, 0);
		fed += (size_t)f;
		if ((size_t)f < n)
			break;
	}
	cr_assert_leq(fed, ZR__TLS_BUF_IN);
	cr_assert_null(zr__tls_recv_buf(p.s, &room));
	cr_assert_eq(room, 0);
	cr_assert_eq(zr__tls_feed(p.s, wire, 1), 0);
	pair_close(&p);
}

Test(tls_adapter, nothing_is_written_before_the_handshake_is_done)
{
	struct zr__tls_ctx *sc = tt_server(&certs, "server", false);
	struct zr__tls_ctx *cc = tt_client(&certs, NULL);
	struct zr__tls *s = tt_session(sc, NULL), *c = tt_session(cc, "localhost");
	uint8_t buf[16];

	cr_assert_eq(zr__tls_write(c, greeting, sizeof(greeting)), 0);
	cr_assert_eq(zr__tls_read(s, buf, sizeof(buf)), 0);
	tt_pump(c, s);
	cr_assert_eq(zr__tls_write(c, greeting, sizeof(greeting)), (ssize_t)sizeof(greeting));
	zr__tls_free(c);
	zr__tls_free(s);
	zr__tls_ctx_free(cc);
	zr__tls_ctx_free(sc);
}

Test(tls_adapter, close_notify_reads_as_shutdown)
{
	struct pair p;
	uint8_t buf[16];

	pair_open(&p);
	cr_assert_eq(zr__tls_write(p.c, "bye", 3), 3);
	cr_assert_eq(zr__tls_close(p.c), 0);
	tt_move(p.c, p.s, SIZE_MAX);
	cr_assert_eq(zr__tls_read(p.s, buf, sizeof(buf)), 3, "data before close_notify arrives");
	cr_assert_eq(zr__tls_read(p.s, buf, sizeof(buf)), -ESHUTDOWN);
	cr_assert_eq(zr__tls_failure(p.s), ZR__TLS_CLOSED);
	cr_assert_eq(zr__tls_read(p.s, buf, sizeof(buf)), -ESHUTDOWN, "sticky");
	/* The answer to a close_notify is ours. */
	cr_assert_eq(zr__tls_pending(p.s), 0);
	cr_assert_eq(zr__tls_close(p.s), 0);
	cr_assert_gt(zr__tls_pending(p.s), 0);
	tt_move(p.s, p.c, SIZE_MAX);
	cr_assert_eq(zr__tls_read(p.c, buf, sizeof(buf)), -ESHUTDOWN);
	pair_close(&p);
}

#if defined(__SANITIZE_ADDRESS__)
#define TT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TT_ASAN 1
#endif
#endif

#ifndef TT_ASAN
/* Moves len bytes of plaintext from tx to rx. */
static void
transfer(struct zr__tls *tx, struct zr__tls *rx, const uint8_t *buf, size_t len)
{
	static uint8_t got[16 * 1024];
	size_t sent = 0, rcvd = 0;

	while (rcvd < len) {
		ssize_t w = zr__tls_write(tx, buf + sent, len - sent);
		ssize_t r;

		cr_assert_geq(w, 0);
		sent += (size_t)w;
		(void)zr__tls_flush(tx);
		tt_move(tx, rx, SIZE_MAX);
		while ((r = zr__tls_read(rx, got, sizeof(got))) > 0)
			rcvd += (size_t)r;
		cr_assert_geq(r, 0);
	}
}
#endif

/* What a connection costs once its buffers have been used in both
 * directions: the bounds in tls.h plus OpenSSL's own state, measured with
 * mallinfo2 over many sessions. Contexts are shared by all the connections
 * of an endpoint, so they are made before the measurement, and a first pair
 * warms up OpenSSL's one-time tables. */
Test(tls_adapter, a_session_holds_bounded_memory_after_traffic)
{
#ifdef TT_ASAN
	cr_skip_test("mallinfo2 does not see ASan's allocator");
#else
	enum {
		PAIRS = 32
	};
	static uint8_t buf[64 * 1024];
	struct zr__tls_ctx *sc = tt_server(&certs, "server", false), *cc = tt_client(&certs, NULL);
	struct zr__tls *s[PAIRS + 1], *c[PAIRS + 1];
	struct mallinfo2 before = {0}, after;
	size_t per;

	for (int i = 0; i <= PAIRS; i++) {
		if (i == 1)
			before = mallinfo2();
		s[i] = tt_session(sc, NULL);
		c[i] = tt_session(cc, "localhost");
		tt_pump(c[i], s[i]);
		cr_assert(zr__tls_done(c[i]) && zr__tls_done(s[i]));
		transfer(c[i], s[i], buf, sizeof(buf));
		transfer(s[i], c[i], buf, sizeof(buf));
	}
	after = mallinfo2();
	per = (after.uordblks - before.uordblks) / (2 * PAIRS);
	cr_log_info("heap per TLS session after 64 KiB each way: %zu bytes (bounds: %zu in, %zu "
	            "out, %zu stage)",
	            per, ZR__TLS_BUF_IN, ZR__TLS_BUF_OUT, ZR__TLS_STAGE);
	/* The three bounds, OpenSSL's two record buffers (about 17 KiB each)
	 * and some 30 KiB for the SSL object, the peer's certificate and the
	 * handshake's leftovers. */
	cr_assert_lt(per, ZR__TLS_BUF_IN + ZR__TLS_BUF_OUT + ZR__TLS_STAGE + 64 * 1024,
	             "%zu bytes per session", per);
	for (int i = 0; i <= PAIRS; i++) {
		zr__tls_free(c[i]);
		zr__tls_free(s[i]);
	}
	zr__tls_ctx_free(cc);
	zr__tls_ctx_free(sc);
#endif
}

/* ----------------------------------------------------------------------- */
/* Failures, with their words */

/* Runs a handshake meant to fail; the side that judged is `judge`, the
 * other must learn why from the alert. */
static void
expect_fail(struct zr__tls_ctx *sc, struct zr__tls_ctx *cc, const char *name, bool client_judges,
            enum zr__tls_fail kind, const char *words, const char *alert_words)
{
	struct zr__tls *s = tt_session(sc, NULL), *c = tt_session(cc, name);
	struct zr__tls *judge = client_judges ? c : s, *other = client_judges ? s : c;
	uint8_t buf[16];

	tt_pump(c, s);
	cr_assert_eq(zr__tls_failure(judge), kind, "judge: %d %s", zr__tls_failure(judge),
	             zr__tls_error(judge));
	cr_assert_not_null(strstr(zr__tls_error(judge), words), "judge said \"%s\"",
	                   zr__tls_error(judge));
	cr_assert_eq(zr__tls_read(judge, buf, sizeof(buf)), -EPROTO, "sticky");
	cr_assert_eq(zr__tls_feed(judge, buf, 1), -EPROTO, "sticky");
	cr_assert_not(zr__tls_done(judge));
	cr_assert_eq(zr__tls_failure(other), ZR__TLS_ALERT, "other: %d %s", zr__tls_failure(other),
	             zr__tls_error(other));
	cr_assert_not_null(strstr(zr__tls_error(other), "alert received"), "other said \"%s\"",
	                   zr__tls_error(other));
	cr_assert_not_null(strstr(zr__tls_error(other), alert_words), "other said \"%s\"",
	                   zr__tls_error(other));
	cr_log_info("judge: %s | other: %s", zr__tls_error(judge), zr__tls_error(other));
	zr__tls_free(c);
	zr__tls_free(s);
}

Test(tls_adapter, untrusted_server_is_an_unknown_ca)
{
	struct zr__tls_ctx *sc = tt_server(&certs, "rogue", false), *cc = tt_client(&certs, NULL);

	expect_fail(sc, cc, "localhost", true, ZR__TLS_UNKNOWN_CA, "unknown CA: self-signed",
	            "unknown CA");
	zr__tls_ctx_free(sc);
	zr__tls_ctx_free(cc);
}

Test(tls_adapter, certificate_for_another_name_is_a_name_mismatch)
{
	struct zr__tls_ctx *sc = tt_server(&certs, "other", false), *cc = tt_client(&certs, NULL);

	expect_fail(sc, cc, "localhost", true, ZR__TLS_NAME_MISMATCH,
	            "name mismatch: hostname mismatch (the certificate is not for \"localhost\")",
	            "bad certificate");
	zr__tls_ctx_free(sc);
	zr__tls_ctx_free(cc);
}

Test(tls_adapter, expired_certificate_says_expired)
{
	struct zr__tls_ctx *sc = tt_server(&certs, "expired", false), *cc = tt_client(&certs, NULL);

	expect_fail(sc, cc, "localhost", true, ZR__TLS_EXPIRED,
	            "certificate expired: certificate has expired", "certificate expired");
	zr__tls_ctx_free(sc);
	zr__tls_ctx_free(cc);
}

Test(tls_adapter, server_with_a_ca_requires_a_client_certificate)
{
	struct zr__tls_ctx *sc = tt_server(&certs, "server", true), *cc = tt_client(&certs, NULL);

	expect_fail(sc, cc, "localhost", false, ZR__TLS_NO_PEER_CERT, "no client certificate",
	            "alert received: certificate required");
	zr__tls_ctx_free(sc);
	zr__tls_ctx_free(cc);
}

Test(tls_adapter, client_certificate_from_an_unknown_ca_is_refused)
{
	struct zr__tls_ctx *sc = tt_server(&certs, "server", true),
			   *cc = tt_client(&certs, "rogue");

	expect_fail(sc, cc, "localhost", false, ZR__TLS_UNKNOWN_CA, "unknown CA", "unknown CA");
	zr__tls_ctx_free(sc);
	zr__tls_ctx_free(cc);
}

Test(tls_adapter, expired_client_certificate_is_refused)
{
	struct zr__tls_ctx *sc = tt_server(&certs, "server", true),
			   *cc = tt_client(&certs, "expired");

	expect_fail(sc, cc, "localhost", false, ZR__TLS_EXPIRED, "certificate expired",
	            "certificate expired");
	zr__tls_ctx_free(sc);
	zr__tls_ctx_free(cc);
}

Test(tls_adapter, plain_zmtp_greeting_is_named_as_such_on_either_side)
{
	struct zr__tls_ctx *sc = tt_server(&certs, "server", false), *cc = tt_client(&certs, NULL);

	for (int side = 0; side < 2; side++) {
		struct zr__tls *t = tt_session(side == 0 ? sc : cc, side == 0 ? NULL : "localhost");
		uint8_t *dst;
		size_t room;

		/* The server through feed, the client through recv_buf/ack. */
		if (side == 0) {
			cr_assert_eq(zr__tls_feed(t, greeting, sizeof(greeting)), -EPROTO);
		} else {
			dst = zr__tls_recv_buf(t, &room);
			cr_assert_geq(room, 10);
			memcpy(dst, greeting, 10);
			cr_assert_eq(zr__tls_recv_ack(t, 10), -EPROTO);
		}
		cr_assert_eq(zr__tls_failure(t), ZR__TLS_NOT_TLS);
		cr_assert_str_eq(zr__tls_error(t), "not TLS: peer speaks plain ZMTP, not TLS");
		zr__tls_free(t);
	}
	zr__tls_ctx_free(sc);
	zr__tls_ctx_free(cc);
}

Test(tls_adapter, other_non_tls_bytes_are_named_not_tls)
{
	struct zr__tls_ctx *sc = tt_server(&certs, "server", false), *cc = tt_client(&certs, NULL);
	struct zr__tls *s = tt_session(sc, NULL), *c = tt_session(cc, "localhost");
	static const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char reply[] = "HTTP/1.1 400 Bad Request\r\n\r\n";

	cr_assert_eq(zr__tls_feed(s, http, sizeof(http) - 1), -EPROTO);
	cr_assert_eq(zr__tls_failure(s), ZR__TLS_NOT_TLS, "%s", zr__tls_error(s));
	cr_assert_not_null(strstr(zr__tls_error(s), "not TLS"), "%s", zr__tls_error(s));
	cr_log_info("server: %s", zr__tls_error(s));
	/* A client that sent its ClientHello and got an HTTP answer. */
	cr_assert_eq(zr__tls_feed(c, reply, sizeof(reply) - 1), -EPROTO);
	cr_assert_eq(zr__tls_failure(c), ZR__TLS_NOT_TLS, "%s", zr__tls_error(c));
	cr_log_info("client: %s", zr__tls_error(c));
	zr__tls_free(s);
	zr__tls_free(c);
	zr__tls_ctx_free(sc);
	zr__tls_ctx_free(cc);
}

Test(tls_adapter, garbage_after_the_first_record_is_a_protocol_error_not_not_tls)
{
	struct zr__tls_ctx *sc = tt_server(&certs, "server", false), *cc = tt_client(&certs, NULL);
	struct zr__tls *s = tt_session(sc, NULL), *c = tt_session(cc, "localhost");
	static const uint8_t junk[] = {0x16, 0x09, 0x09, 0x00, 0x05, 1, 2, 3, 4, 5};

	/* The server has the ClientHello and waits for the client's Finished;
	 * a record of a bogus version comes instead. */
	tt_move(c, s, SIZE_MAX);
	cr_assert_gt(zr__tls_pending(s), 0);
	cr_assert_eq(zr__tls_feed(s, junk, sizeof(junk)), -EPROTO);
	cr_assert_eq(zr__tls_failure(s), ZR__TLS_PROTOCOL, "%d %s", zr__tls_failure(s),
	             zr__tls_error(s));
	cr_log_info("%s", zr__tls_error(s));
	zr__tls_free(s);
	zr__tls_free(c);
	zr__tls_ctx_free(sc);
	zr__tls_ctx_free(cc);
}

Test(tls_adapter, bad_configurations_are_refused_with_reasons)
{
	struct zr__tls_ctx *ctx = (struct zr__tls_ctx *)0x1;
	char err[256];
	struct zr__tls *t = NULL;

	cr_assert_eq(
		zr__tls_ctx_new(&ctx, &(struct zr__tls_config){.server = true}, err, sizeof(err)),
		-EINVAL);
	cr_assert_not_null(strstr(err, "needs a certificate"), "%s", err);
	cr_assert_eq(zr__tls_ctx_new(&ctx,
	                             &(struct zr__tls_config){.server = true,
	                                                      .cert_file = "/nonexistent/c.pem",
	                                                      .key_file = "/nonexistent/c.key"},
	                             err, sizeof(err)),
	             -ENOENT);
	cr_assert_not_null(strstr(err, "/nonexistent/c.pem"), "%s", err);
	cr_assert_eq(
		zr__tls_ctx_new(&ctx,
	                        &(struct zr__tls_config){.server = true,
	                                                 .cert_file = tt_path(&certs, "server.pem"),
	                                                 .key_file = tt_path(&certs, "other.key")},
	                        err, sizeof(err)),
		-EBADMSG);
	cr_assert_not_null(strstr(err, "does not match"), "%s", err);
	cr_assert_eq(
		zr__tls_ctx_new(&ctx,
	                        &(struct zr__tls_config){.server = true,
	                                                 .cert_file = tt_path(&certs, "server.key"),
	                                                 .key_file = tt_path(&certs, "server.key")},
	                        err, sizeof(err)),
		-EBADMSG);
	cr_assert_not_null(strstr(err, "no start line"), "%s", err);
	cr_assert_eq(zr__tls_ctx_new(&ctx,
	                             &(struct zr__tls_config){.ca_pem = "not PEM", .ca_pem_len = 7},
	                             err, sizeof(err)),
	             -EBADMSG);
	cr_assert_eq(ctx, (struct zr__tls_ctx *)0x1, "*out untouched on failure");
	/* A verifying client must be told which name to expect. */
	ctx = tt_client(&certs, NULL);
	cr_assert_eq(zr__tls_new(&t, ctx, NULL), -EINVAL);
	cr_assert_eq(zr__tls_new(&t, ctx, ""), -EINVAL);
	zr__tls_ctx_free(ctx);
}

/* ----------------------------------------------------------------------- */
/* No session */

Test(tls_adapter, sniff_tells_a_client_hello_from_a_greeting)
{
	static const uint8_t hello[] = {0x16, 0x03, 0x01, 0x02, 0x00};

	cr_assert_eq(zr__tls_sniff(hello, sizeof(hello)), 1);
	cr_assert_eq(zr__tls_sniff(hello, 1), -EAGAIN);
	cr_assert_eq(zr__tls_sniff(hello, 0), -EAGAIN);
	cr_assert_eq(zr__tls_sniff(greeting, sizeof(greeting)), 0);
	cr_assert_eq(zr__tls_sniff((const uint8_t *)"\x16\xFF", 2), 0);
}

Test(tls_adapter, ktls_detection_reads_the_ulp_list)
{
	char path[128];
	FILE *f;
	int sys;

	/* What the kernel writes there: the ULPs it has, space-separated,
	 * one line ("mptcp" on the development machine, "espintcp mptcp tls"
	 * with kTLS). Only the whole word "tls" counts. */
	static const struct {
		const char *text;
		int want;
	} cases[] = {
		{"mptcp tls\n", 1},          {"tls\n", 1},   {"tls", 1},
		{"espintcp tls mptcp\n", 1}, {"mptcp\n", 0}, {"mptcp tlsx\n", 0},
		{"ktls tls_hw\n", 0},        {"", 0},        {"\n", 0},
		{"mptcp\ttls\n", 1},
	};

	snprintf(path, sizeof(path), "%s/ulp", certs.dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		f = fopen(path, "w");
		cr_assert_not_null(f);
		fputs(cases[i].text, f);
		fclose(f);
		cr_assert_eq(zr__tls_ktls_kernel(path), cases[i].want, "\"%s\"", cases[i].text);
	}
	cr_assert_eq(zr__tls_ktls_kernel("/nonexistent/ulp"), -ENOENT);
	sys = zr__tls_ktls_kernel(NULL);
	cr_log_info("kTLS: kernel %s, OpenSSL %s",
	            sys == 1   ? "yes"
	            : sys == 0 ? "no"
	                       : "unknown (no ulp list)",
	            zr__tls_ktls_openssl() ? "yes" : "no");
	cr_assert(sys == 0 || sys == 1 || sys == -ENOENT, "%d", sys);
}
