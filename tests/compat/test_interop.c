/*
 * Interop: a program on the drop-in (this one, linked to compat's
 * libzmq.so.5) and a pyzmq process on the system's libzmq 4.3
 * (tests/compat/peers/libzmq_peer.py), both directions, over tcp:// and
 * ipc://, with NULL and CURVE security. The peer reports which libzmq it
 * loaded, and the test checks that it is not the drop-in.
 *
 * A missing interpreter or pyzmq fails the test: these are the project's
 * proof of interoperability and must not skip.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zmq.h"

#ifndef ZR_SOURCE_DIR
#error "tests/CMakeLists.txt defines ZR_SOURCE_DIR"
#endif
#ifndef ZR_PYTHON
#define ZR_PYTHON "/usr/bin/python3"
#endif

#define PEER ZR_SOURCE_DIR "/tests/compat/peers/libzmq_peer.py"
#define WAIT_MS 20000

struct peer {
	pid_t pid;
	FILE *out;
};

/* Starts the peer on the system libzmq: without LD_LIBRARY_PATH or
 * LD_PRELOAD, which could point its pyzmq at the drop-in or a sanitizer. */
static void
peer_start(struct peer *p, char *const argv[])
{
	int fds[2];
	char line[512];

	cr_assert_eq(pipe(fds), 0);
	p->pid = fork();
	cr_assert_geq(p->pid, 0);
	if (p->pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		unsetenv("LD_LIBRARY_PATH");
		unsetenv("LD_PRELOAD");
		execv(ZR_PYTHON, argv);
		_exit(127);
	}
	close(fds[1]);
	p->out = fdopen(fds[0], "r");
	cr_assert_not_null(p->out);
	cr_assert_not_null(fgets(line, sizeof line, p->out),
	                   "the peer did not start: install python3-zmq (" ZR_PYTHON ")");
	cr_assert(strncmp(line, "libzmq ", 7) == 0, "peer said: %s", line);
	cr_assert_null(strstr(line, "/compat/"), "the peer loaded the drop-in: %s", line);
}

static void
peer_line(struct peer *p, char *buf, size_t cap)
{
	cr_assert_not_null(fgets(buf, (int)cap, p->out), "the peer said nothing");
	buf[strcspn(buf, "\n")] = '\0';
}

static int
peer_wait(struct peer *p)
{
	int status = 0;

	fclose(p->out);
	cr_assert_eq(waitpid(p->pid, &status, 0), p->pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void *
sock_new(void *ctx, int type)
{
	void *s = zmq_socket(ctx, type);
	int t = WAIT_MS;
	int zero = 0;

	cr_assert_not_null(s);
	zmq_setsockopt(s, ZMQ_RCVTIMEO, &t, sizeof t);
	zmq_setsockopt(s, ZMQ_SNDTIMEO, &t, sizeof t);
	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
	return s;
}

/* Sends 3 multipart requests to the peer's REP, checks the echoes, ends it. */
static void
drive_rep(void *req)
{
	static unsigned char big[256 * 81];
	zmq_msg_t m;

	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (unsigned char)i;
	for (int i = 0; i < 3; i++) {
		char head[16];
		size_t blen = (size_t)(i * 40 + 1) * 256;
		int n = snprintf(head, sizeof head, "q%d", i);

		cr_assert_eq(zmq_send(req, head, (size_t)n, ZMQ_SNDMORE), n);
		cr_assert_eq(zmq_send(req, big, blen, 0), (int)blen);
		zmq_msg_init(&m);
		cr_assert_eq(zmq_msg_recv(&m, req, 0), n, "no echo: %s", zmq_strerror(errno));
		cr_assert(memcmp(zmq_msg_data(&m), head, (size_t)n) == 0);
		cr_assert(zmq_msg_more(&m));
		cr_assert_eq(zmq_msg_recv(&m, req, 0), (int)blen);
		cr_assert(memcmp(zmq_msg_data(&m), big, blen) == 0);
		cr_assert(!zmq_msg_more(&m));
		zmq_msg_close(&m);
	}
	cr_assert_eq(zmq_send(req, "END", 3, 0), 3);
}

/* Echoes the peer's REQ 3 times; the requests carry user_id as their
 * "User-Id" (NULL: none). */
static void
serve_req_as(void *rep, const char *user_id)
{
	for (int i = 0; i < 3; i++) {
		zmq_msg_t parts[8];
		int n = 0;

		do {
			cr_assert_lt(n, 8);
			zmq_msg_init(&parts[n]);
			cr_assert_geq(zmq_msg_recv(&parts[n], rep, 0), 0, "no request: %s",
			              zmq_strerror(errno));
			if (user_id != NULL) {
				const char *v = zmq_msg_gets(&parts[n], "User-Id");

				cr_assert_not_null(v, "no User-Id");
				cr_assert_str_eq(v, user_id);
			}
		} while (zmq_msg_more(&parts[n++]));
		cr_assert_eq(n, 3);
		for (int k = 0; k < n; k++)
			cr_assert_geq(zmq_msg_send(&parts[k], rep, k + 1 < n ? ZMQ_SNDMORE : 0), 0);
	}
}

static void
serve_req(void *rep)
{
	serve_req_as(rep, NULL);
}

static void
to_libzmq(const char *endpoint, int curve)
{
	char spub[41], ssec[41], cpub[41], csec[41];
	char *argv[] = {ZR_PYTHON, PEER,     "rep-bind", (char *)endpoint,
	                "curve",   "server", ssec,       NULL};
	struct peer p;
	char bound[256];
	void *ctx = zmq_ctx_new();
	void *req = sock_new(ctx, ZMQ_REQ);

	cr_assert_eq(zmq_curve_keypair(spub, ssec), 0);
	cr_assert_eq(zmq_curve_keypair(cpub, csec), 0);
	if (!curve)
		argv[4] = NULL;
	peer_start(&p, argv);
	peer_line(&p, bound, sizeof bound);
	if (curve) {
		cr_assert_eq(zmq_setsockopt(req, ZMQ_CURVE_SERVERKEY, spub, 40), 0);
		cr_assert_eq(zmq_setsockopt(req, ZMQ_CURVE_PUBLICKEY, cpub, 40), 0);
		cr_assert_eq(zmq_setsockopt(req, ZMQ_CURVE_SECRETKEY, csec, 40), 0);
	}
	cr_assert_eq(zmq_connect(req, bound), 0, "connect %s: %s", bound, zmq_strerror(errno));
	drive_rep(req);
	cr_assert_eq(peer_wait(&p), 0);
	zmq_close(req);
	zmq_ctx_term(ctx);
}

static void
from_libzmq(const char *endpoint, int curve)
{
	char spub[41], ssec[41], cpub[41], csec[41];
	char bound[256];
	size_t len = sizeof bound;
	char line[64];
	struct peer p;
	void *ctx = zmq_ctx_new();
	void *rep = sock_new(ctx, ZMQ_REP);
	int one = 1;

	cr_assert_eq(zmq_curve_keypair(spub, ssec), 0);
	cr_assert_eq(zmq_curve_keypair(cpub, csec), 0);
	if (curve) {
		cr_assert_eq(zmq_setsockopt(rep, ZMQ_CURVE_SERVER, &one, sizeof one), 0);
		cr_assert_eq(zmq_setsockopt(rep, ZMQ_CURVE_SECRETKEY, ssec, 40), 0);
	}
	cr_assert_eq(zmq_bind(rep, endpoint), 0, "%s", zmq_strerror(errno));
	cr_assert_eq(zmq_getsockopt(rep, ZMQ_LAST_ENDPOINT, bound, &len), 0);
	{
		char *argv[] = {ZR_PYTHON, PEER, "req-connect", bound, "curve",
		                "client",  spub, cpub,          csec,  NULL};

		if (!curve)
			argv[4] = NULL;
		peer_start(&p, argv);
	}
	serve_req(rep);
	peer_line(&p, line, sizeof line);
	cr_assert_str_eq(line, "done 0");
	cr_assert_eq(peer_wait(&p), 0);
	zmq_close(rep);
	zmq_ctx_term(ctx);
}

static void
ipc_path(char *buf, size_t cap, const char *tag)
{
	snprintf(buf, cap, "ipc:///tmp/zr-compat-%s-%ld", tag, (long)getpid());
}

Test(compat_interop, tcp_to_libzmq)
{
	to_libzmq("tcp://127.0.0.1:*", 0);
}
Test(compat_interop, tcp_from_libzmq)
{
	from_libzmq("tcp://127.0.0.1:*", 0);
}
Test(compat_interop, curve_tcp_to_libzmq)
{
	to_libzmq("tcp://127.0.0.1:*", 1);
}
Test(compat_interop, curve_tcp_from_libzmq)
{
	from_libzmq("tcp://127.0.0.1:*", 1);
}

Test(compat_interop, ipc_to_libzmq)
{
	char ep[128];

	ipc_path(ep, sizeof ep, "to");
	to_libzmq(ep, 0);
	unlink(ep + 6);
}

Test(compat_interop, ipc_from_libzmq)
{
	char ep[128];

	ipc_path(ep, sizeof ep, "from");
	from_libzmq(ep, 0);
	unlink(ep + 6);
}

Test(compat_interop, curve_ipc_from_libzmq)
{
	char ep[128];

	ipc_path(ep, sizeof ep, "cfrom");
	from_libzmq(ep, 1);
	unlink(ep + 6);
}

/* ---- ZAP: a handler on the drop-in decides about libzmq clients ----------------- */

struct zap_handler {
	void *rep;
	pthread_t th;
	atomic_int stop;
	char curve_ok[41]; /* the accepted CURVE client's public key, Z85 */
	int requests;
};

static void *
zap_main(void *arg)
{
	struct zap_handler *h = arg;

	while (!atomic_load(&h->stop)) {
		char f[8][256];
		size_t len[8];
		int n = 0, more = 1, status;
		const char *user = "";
		char key[41] = "";

		while (more && n < 8) {
			int k = zmq_recv(h->rep, f[n], sizeof f[n] - 1, 0);
			size_t ml = sizeof more;

			if (k < 0)
				break;
			len[n] = (size_t)k < sizeof f[n] - 1 ? (size_t)k : sizeof f[n] - 1;
			f[n][len[n]] = '\0';
			zmq_getsockopt(h->rep, ZMQ_RCVMORE, &more, &ml);
			n++;
		}
		if (n == 0)
			continue; /* RCVTIMEO: look at stop */
		h->requests++;
		status = 400;
		if (n == 8 && strcmp(f[5], "PLAIN") == 0 && strcmp(f[6], "admin") == 0 &&
		    strcmp(f[7], "secret") == 0) {
			status = 200;
			user = "admin";
		}
		if (n == 7 && strcmp(f[5], "CURVE") == 0 && len[6] == 32 &&
		    zmq_z85_encode(key, (const uint8_t *)f[6], 32) != NULL &&
		    strcmp(key, h->curve_ok) == 0) {
			status = 200;
			user = "curve-client";
		}
		zmq_send(h->rep, "1.0", 3, ZMQ_SNDMORE);
		zmq_send(h->rep, f[1], len[1], ZMQ_SNDMORE);
		zmq_send(h->rep, status == 200 ? "200" : "400", 3, ZMQ_SNDMORE);
		zmq_send(h->rep, "", 0, ZMQ_SNDMORE);
		zmq_send(h->rep, user, strlen(user), ZMQ_SNDMORE);
		zmq_send(h->rep, "", 0, 0);
	}
	return NULL;
}

static void
zap_start(struct zap_handler *h, void *ctx)
{
	int t = 100, zero = 0;

	h->rep = zmq_socket(ctx, ZMQ_REP);
	cr_assert_not_null(h->rep);
	zmq_setsockopt(h->rep, ZMQ_RCVTIMEO, &t, sizeof t);
	zmq_setsockopt(h->rep, ZMQ_LINGER, &zero, sizeof zero);
	cr_assert_eq(zmq_bind(h->rep, "inproc://zeromq.zap.01"), 0);
	cr_assert_eq(pthread_create(&h->th, NULL, zap_main, h), 0);
}

static void
zap_stop(struct zap_handler *h)
{
	atomic_store(&h->stop, 1);
	pthread_join(h->th, NULL);
	zmq_close(h->rep);
}

/* The drop-in's REP (PLAIN or CURVE server, ZAP handler of its own) and a
 * libzmq REQ; good: its credentials are the handler's to accept. */
static void
zap_from_libzmq(int curve, int good)
{
	char spub[41], ssec[41], cpub[41], csec[41];
	char bound[256], line[64];
	size_t len = sizeof bound;
	struct zap_handler h;
	struct peer p;
	void *ctx = zmq_ctx_new();
	void *rep = sock_new(ctx, ZMQ_REP);
	int one = 1;

	memset(&h, 0, sizeof h);
	cr_assert_eq(zmq_curve_keypair(spub, ssec), 0);
	cr_assert_eq(zmq_curve_keypair(cpub, csec), 0);
	if (good)
		memcpy(h.curve_ok, cpub, sizeof cpub);
	zap_start(&h, ctx);
	if (curve) {
		cr_assert_eq(zmq_setsockopt(rep, ZMQ_CURVE_SERVER, &one, sizeof one), 0);
		cr_assert_eq(zmq_setsockopt(rep, ZMQ_CURVE_SECRETKEY, ssec, 40), 0);
	} else {
		cr_assert_eq(zmq_setsockopt(rep, ZMQ_PLAIN_SERVER, &one, sizeof one), 0);
	}
	cr_assert_eq(zmq_bind(rep, "tcp://127.0.0.1:*"), 0, "%s", zmq_strerror(errno));
	cr_assert_eq(zmq_getsockopt(rep, ZMQ_LAST_ENDPOINT, bound, &len), 0);
	{
		char *mode = good ? "req-connect" : "req-refused";
		char *cargv[] = {ZR_PYTHON, PEER, mode, bound, "curve",
		                 "client",  spub, cpub, csec,  NULL};
		char *pargv[] = {ZR_PYTHON, PEER,     mode,    bound,
		                 "plain",   "client", "admin", good ? "secret" : "wrong",
		                 NULL};

		peer_start(&p, curve ? cargv : pargv);
	}
	if (good) {
		serve_req_as(rep, curve ? "curve-client" : "admin");
		peer_line(&p, line, sizeof line);
		cr_assert_str_eq(line, "done 0");
	} else {
		peer_line(&p, line, sizeof line);
		/* libzmq's CURVE client reports the status; its PLAIN client a
		 * protocol error (see zring.h, zr_socket_set_auth). */
		if (curve)
			cr_assert_str_eq(line, "refused 16384 400");
		else
			cr_assert(strncmp(line, "refused ", 8) == 0 &&
			                  strcmp(line, "refused none") != 0,
			          "%s", line);
	}
	cr_assert_eq(peer_wait(&p), 0);
	cr_assert_geq(h.requests, 1, "the handler was never asked");
	zap_stop(&h);
	zmq_close(rep);
	zmq_ctx_term(ctx);
}

Test(compat_interop, zap_plain_from_libzmq_accepted)
{
	zap_from_libzmq(0, 1);
}
Test(compat_interop, zap_plain_from_libzmq_refused)
{
	zap_from_libzmq(0, 0);
}
Test(compat_interop, zap_curve_from_libzmq_accepted)
{
	zap_from_libzmq(1, 1);
}
Test(compat_interop, zap_curve_from_libzmq_refused)
{
	zap_from_libzmq(1, 0);
}
