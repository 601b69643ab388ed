/*
 * Interop: our Z85 and CURVE key helpers against libzmq 4.3, live.
 *
 * Each test writes its requests to a file and runs
 * tests/interop/peers/keys_peer.py on it as a child process; the peer answers
 * every request with what pyzmq's zmq.utils.z85, libzmq's own zmq_z85_encode
 * / zmq_z85_decode, zmq.curve_public and zmq.curve_keypair say. So every
 * assertion compares our bytes with libzmq's, computed in another process.
 *
 * A missing interpreter or pyzmq fails the test with what to install: these
 * tests are the project's proof of interoperability and must not skip.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zring/zmtp.h>

#ifndef ZR_SOURCE_DIR
#error "tests/CMakeLists.txt defines ZR_SOURCE_DIR"
#endif
#ifndef ZR_PYTHON
#define ZR_PYTHON "/usr/bin/python3"
#endif

#define PEER_SCRIPT ZR_SOURCE_DIR "/tests/interop/peers/keys_peer.py"
#define Z85_ALPHABET \
	"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
#define MAX_LINES 1024
#define LINE_MAX_LEN 2048

/* One batch of requests and the peer's answers (per test process). */
static FILE *req;
static char req_path[] = "/tmp/zr-keys-peer-XXXXXX";
static char *answers[MAX_LINES];
static size_t n_req, n_answers;

static void
batch_open(void)
{
	int fd = mkstemp(req_path);

	cr_assert_geq(fd, 0, "mkstemp: %s", strerror(errno));
	req = fdopen(fd, "w");
	cr_assert_not_null(req);
}

static void
batch_fini(void)
{
	for (size_t i = 0; i < n_answers; i++)
		free(answers[i]);
	if (req != NULL)
		fclose(req);
	unlink(req_path);
}

TestSuite(keys_pyzmq, .init = batch_open, .fini = batch_fini, .timeout = 60);

static void batch_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
batch_add(const char *fmt, ...)
{
	va_list ap;

	cr_assert_lt(n_req, (size_t)MAX_LINES);
	va_start(ap, fmt);
	vfprintf(req, fmt, ap);
	va_end(ap);
	fputc('\n', req);
	n_req++;
}

/* Runs the peer over every request added so far; one answer per request. */
static void
batch_run(void)
{
	char cmd[512], buf[LINE_MAX_LEN];
	FILE *p;
	int status;

	cr_assert_eq(fclose(req), 0);
	req = NULL;
	snprintf(cmd, sizeof(cmd), "'%s' '%s' < '%s'", ZR_PYTHON, PEER_SCRIPT, req_path);
	p = popen(cmd, "r");
	cr_assert_not_null(p, "popen: %s", strerror(errno));
	while (fgets(buf, sizeof(buf), p) != NULL) {
		buf[strcspn(buf, "\n")] = '\0';
		cr_assert(strncmp(buf, "FATAL", 5) != 0, "%s (install Debian python3-zmq for %s)",
		          buf, ZR_PYTHON);
		cr_assert_lt(n_answers, (size_t)MAX_LINES);
		answers[n_answers++] = strdup(buf);
	}
	status = pclose(p);
	cr_assert_eq(status, 0, "%s exited with status %d", PEER_SCRIPT, status);
	cr_assert_eq(n_answers, n_req, "peer answered %zu of %zu requests", n_answers, n_req);
}

/* The i-th answer split on spaces: its op word and up to two fields. */
static void
answer_fields(size_t i, const char *op, char *a, size_t a_cap, char *b, size_t b_cap)
{
	char *save, *tok, copy[LINE_MAX_LEN];

	snprintf(copy, sizeof(copy), "%s", answers[i]);
	tok = strtok_r(copy, " ", &save);
	cr_assert_str_eq(tok, op, "answer %zu: '%s'", i, answers[i]);
	tok = strtok_r(NULL, " ", &save);
	cr_assert_not_null(tok, "answer %zu: '%s'", i, answers[i]);
	snprintf(a, a_cap, "%s", tok);
	if (b != NULL) {
		tok = strtok_r(NULL, " ", &save);
		cr_assert_not_null(tok, "answer %zu: '%s'", i, answers[i]);
		snprintf(b, b_cap, "%s", tok);
	}
}

static void
to_hex(char *out, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	if (n == 0) {
		strcpy(out, "-");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

/* xorshift32: deterministic inputs, the same on every run. */
static uint32_t
next_u32(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

#define N_BUFS 256
#define BUF_MAX 128

Test(keys_pyzmq, z85_text_is_the_same_as_pyzmq_and_libzmq_for_many_inputs)
{
	static uint8_t data[N_BUFS][BUF_MAX];
	static size_t len[N_BUFS];
	uint32_t seed = 0x2545f491u;

	for (size_t i = 0; i < N_BUFS; i++) {
		char hex[2 * BUF_MAX + 1];

		len[i] = (i % (BUF_MAX / 4 + 1)) * 4; /* 0, 4, ... 128 */
		for (size_t j = 0; j < len[i]; j++)
			data[i][j] = (uint8_t)next_u32(&seed);
		if (i == 1)
			memset(data[i], 0xFF, len[i]);
		to_hex(hex, data[i], len[i]);
		batch_add("enc %s", len[i] ? hex : "");
	}
	batch_run();
	for (size_t i = 0; i < N_BUFS; i++) {
		char ours[BUF_MAX / 4 * 5 + 1], py[LINE_MAX_LEN], lz[LINE_MAX_LEN];
		int rc = zr_z85_encode(ours, sizeof(ours), data[i], len[i]);

		cr_assert_eq(rc, (int)(len[i] / 4 * 5));
		answer_fields(i, "enc", py, sizeof(py), lz, sizeof(lz));
		if (len[i] == 0)
			strcpy(ours, "-");
		cr_assert_str_eq(ours, py, "input %zu: ours vs pyzmq", i);
		cr_assert_str_eq(ours, lz, "input %zu: ours vs libzmq", i);
	}
}

Test(keys_pyzmq, z85_decoding_is_the_same_as_pyzmq_and_libzmq_for_our_texts)
{
	static char texts[N_BUFS][BUF_MAX / 4 * 5 + 1];
	static uint8_t data[N_BUFS][BUF_MAX];
	static size_t len[N_BUFS];
	uint32_t seed = 0x9e3779b9u;

	for (size_t i = 0; i < N_BUFS; i++) {
		len[i] = (i % (BUF_MAX / 4 + 1)) * 4;
		for (size_t j = 0; j < len[i]; j++)
			data[i][j] = (uint8_t)next_u32(&seed);
		cr_assert_geq(zr_z85_encode(texts[i], sizeof(texts[i]), data[i], len[i]), 0);
		batch_add("dec %s", texts[i]);
	}
	batch_run();
	for (size_t i = 0; i < N_BUFS; i++) {
		char want[2 * BUF_MAX + 1], py[LINE_MAX_LEN], lz[LINE_MAX_LEN];
		uint8_t back[BUF_MAX];

		cr_assert_eq(zr_z85_decode(back, sizeof(back), texts[i], strlen(texts[i])),
		             (int)len[i]);
		cr_assert_arr_eq(back, data[i], len[i]);
		to_hex(want, data[i], len[i]);
		answer_fields(i, "dec", py, sizeof(py), lz, sizeof(lz));
		cr_assert_str_eq(py, want, "text %zu '%s': pyzmq", i, texts[i]);
		if (len[i] == 0) {
			/* The one difference, on purpose: libzmq refuses the empty
			 * text (it wants at least one group); we decode it, as
			 * pyzmq does, to no octets: the inverse of encoding none. */
			cr_assert_str_eq(lz, "ERR");
			continue;
		}
		cr_assert_str_eq(lz, want, "text %zu '%s': libzmq", i, texts[i]);
	}
}

Test(keys_pyzmq, z85_refuses_exactly_the_texts_libzmq_refuses)
{
	/* Every printable or control character outside the alphabet (no NUL,
	 * CR or LF: the request file is lines), overflowing groups, and the
	 * values right at the 32-bit edge, which both must accept. */
	static char texts[256][16];
	size_t n = 0;

	for (int c = 1; c < 128; c++) {
		if (c == '\n' || c == '\r' || strchr(Z85_ALPHABET, c) != NULL)
			continue;
		snprintf(texts[n++], sizeof(texts[0]), "Hello%corld", c);
	}
	static const char *const edges[] = {
		"%nSc0", "%nSc1", "%nSd0",      "%o000",      "$0000", "#0000",     "%%%%%",
		"#####", "@####", "00000%%%%%", "%nSc0%nSc0", "Hell",  "HelloWorl",
	}; /* (the empty text: see the test above) */
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
		snprintf(texts[n++], sizeof(texts[0]), "%s", edges[i]);
	for (size_t i = 0; i < n; i++)
		batch_add("dec %s", texts[i]);
	batch_run();

	size_t refused = 0;
	for (size_t i = 0; i < n; i++) {
		char py[LINE_MAX_LEN], lz[LINE_MAX_LEN], ours_hex[32];
		uint8_t back[16];
		int rc = zr_z85_decode(back, sizeof(back), texts[i], strlen(texts[i]));

		answer_fields(i, "dec", py, sizeof(py), lz, sizeof(lz));
		if (rc < 0) {
			cr_assert_eq(rc, -EINVAL);
			cr_assert_str_eq(lz, "ERR", "'%s': we refuse, libzmq gives %s", texts[i],
			                 lz);
			cr_assert_str_eq(py, "ERR", "'%s': we refuse, pyzmq gives %s", texts[i],
			                 py);
			refused++;
		} else {
			to_hex(ours_hex, back, (size_t)rc);
			cr_assert_str_eq(lz, ours_hex, "'%s': libzmq", texts[i]);
			cr_assert_str_eq(py, ours_hex, "'%s': pyzmq", texts[i]);
		}
	}
	/* 40 foreign characters, 8 overflowing texts, 2 bad lengths; "%nSc0",
	 * "@####" and "%nSc0%nSc0" are the largest values that fit. */
	cr_assert_eq(refused, 40 + 8 + 2);
}

#define N_KEYS 32

Test(keys_pyzmq, our_key_pairs_have_the_public_key_libzmq_derives)
{
	char pub[N_KEYS][41], sec[N_KEYS][41];

	for (size_t i = 0; i < N_KEYS; i++) {
		cr_assert_eq(zr_curve_keypair(pub[i], sec[i]), 0);
		batch_add("pub %s", sec[i]);
	}
	batch_run();
	for (size_t i = 0; i < N_KEYS; i++) {
		char theirs[LINE_MAX_LEN];

		answer_fields(i, "pub", theirs, sizeof(theirs), NULL, 0);
		cr_assert_str_eq(pub[i], theirs, "secret %s", sec[i]);
	}
}

Test(keys_pyzmq, libzmq_key_pairs_decode_and_rederive_their_public_key)
{
	for (size_t i = 0; i < N_KEYS; i++)
		batch_add("pair");
	batch_run();
	for (size_t i = 0; i < N_KEYS; i++) {
		char pub[LINE_MAX_LEN], sec[LINE_MAX_LEN], ours[41], again[41];
		uint8_t pk[32], sk[32];

		answer_fields(i, "pair", pub, sizeof(pub), sec, sizeof(sec));
		cr_assert_eq(zr_curve_key_decode(pk, pub), 0, "public %s", pub);
		cr_assert_eq(zr_curve_key_decode(sk, sec), 0, "secret %s", sec);
		cr_assert_eq(zr_curve_public(ours, sec), 0);
		cr_assert_str_eq(ours, pub, "secret %s", sec);
		/* and our text for the same octets is libzmq's text */
		cr_assert_eq(zr_curve_key_encode(again, sk), 0);
		cr_assert_str_eq(again, sec);
	}
}
