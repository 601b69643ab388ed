/*
 * zring's tls:// against other TLS implementations: `openssl s_client`
 * completes the handshake with a zring PULL and reads its ZMTP greeting; a
 * pyzmq (libzmq) PUSH reaches a zring tls:// PULL through a stunnel client,
 * the way libzmq users add TLS today. Also: backpressure holds through TLS
 * (a PULL that is not read stops a PUSH; what is queued stays bounded).
 */
#include "engine/engine_util.h"
#include "tls/tls_test.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

static struct tt_certs tp_certs;
static pid_t tp_child = -1;

static void
tp_init(void)
{
	signal(SIGPIPE, SIG_IGN);
	tt_certs_make(&tp_certs);
}

static void
tp_fini(void)
{
	if (tp_child > 0) {
		kill(tp_child, SIGTERM);
		waitpid(tp_child, NULL, 0);
		tp_child = -1;
	}
	et_teardown();
	tt_certs_remove(&tp_certs);
}

static const char *
tp_path(const char *name)
{
	return tt_path(&tp_certs, name);
}

static void
tp_text(zr_socket *s, int opt, const char *v)
{
	cr_assert_eq(zr_setsockopt(s, opt, v, strlen(v)), 0, "setsockopt %d", opt);
}

/* A zring PULL on tls://127.0.0.1:* with the test server certificate;
 * returns its port. */
static int
tp_pull(zr_socket **out)
{
	zr_socket *s = et_zopen(0, ZR_PULL);
	char ep[256];
	size_t len = sizeof ep;

	tp_text(s, ZR_TLS_CERT, tp_path("server.pem"));
	tp_text(s, ZR_TLS_KEY, tp_path("server.key"));
	cr_assert_eq(zr_bind(s, "tls://127.0.0.1:*"), 0);
	cr_assert_eq(zr_getsockopt(s, ZR_LAST_ENDPOINT, ep, &len), 0);
	*out = s;
	return atoi(strrchr(ep, ':') + 1);
}

TestSuite(tls_peers, .init = tp_init, .fini = tp_fini, .timeout = 180);

/* Spawns argv with stdout to a pipe (returned) and stderr to errlog;
 * stdin is a pipe kept open in *in_fd. */
static int
tp_spawn(char *const argv[], const char *errlog, int *in_fd)
{
	int out_fd;

	tp_child = tt_spawn(argv, errlog, in_fd, &out_fd);
	return out_fd;
}

/* openssl s_client verifies zring's certificate (CA, name), completes the
 * handshake and reads the ZMTP greeting's signature: 0xFF, 8 octets, 0x7F. */
Test(tls_peers, openssl_s_client_reads_greeting)
{
	zr_socket *pull;
	char connect[64];
	uint8_t got[64];
	size_t have = 0;
	int in_fd, out_fd;

	snprintf(connect, sizeof connect, "127.0.0.1:%d", tp_pull(&pull));
	char *argv[] = {"openssl",
	                "s_client",
	                "-connect",
	                connect,
	                "-servername",
	                "localhost",
	                "-verify_hostname",
	                "localhost",
	                "-CAfile",
	                (char *)tp_path("ca.pem"),
	                "-verify_return_error",
	                "-tls1_3",
	                "-quiet",
	                NULL};
	out_fd = tp_spawn(argv, tp_path("s_client.log"), &in_fd);
	while (have < 10) {
		struct pollfd p = {.fd = out_fd, .events = POLLIN};
		ssize_t n;

		cr_assert_gt(poll(&p, 1, 60000), 0, "s_client printed %zu octets in 60 s (see %s)",
		             have, tp_path("s_client.log"));
		n = read(out_fd, got + have, sizeof got - have);
		cr_assert_gt(n, 0, "s_client ended after %zu octets (see %s)", have,
		             tp_path("s_client.log"));
		have += (size_t)n;
	}
	cr_assert_eq(got[0], 0xff, "greeting octet 0: %#x", got[0]);
	cr_assert_eq(got[9], 0x7f, "greeting octet 9: %#x", got[9]);
	close(in_fd);
	close(out_fd);
}

/* A free loopback TCP port (the kernel's pick; released for the caller). */
static int
tp_free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

/* Message i of the stunnel test: its size, and octet k is (i + k) % 251. */
#define TP_N 1000
static size_t
tp_size(int i)
{
	if (i % 100 == 99)
		return 1000000;
	if (i % 10 == 5)
		return 20000;
	return (size_t)(i % 7);
}

/* pyzmq PUSH -> stunnel (client mode, verifying zring's certificate) ->
 * zring PULL on tls://: every message, byte for byte, in order, no more. */
Test(tls_peers, pyzmq_push_through_stunnel)
{
	zr_socket *pull;
	int zport = tp_pull(&pull), sport = tp_free_port(), in_fd, out_fd;
	static uint8_t buf[1000001];
	char script[1024], conf[128];
	FILE *f;

	snprintf(conf, sizeof conf, "%s", tp_path("stunnel.conf"));
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f,
	        "foreground = yes\n"
	        "pid =\n"
	        "output = %s\n"
	        "debug = notice\n"
	        "[zring]\n"
	        "client = yes\n"
	        "accept = 127.0.0.1:%d\n"
	        "connect = 127.0.0.1:%d\n"
	        "CAfile = %s\n"
	        "verifyChain = yes\n"
	        "checkHost = localhost\n"
	        "sslVersionMin = TLSv1.3\n",
	        tp_path("stunnel.log"), sport, zport, tp_path("ca.pem"));
	fclose(f);
	char *sargv[] = {"stunnel4", conf, NULL};
	out_fd = tp_spawn(sargv, tp_path("stunnel.err"), &in_fd);
	/* stunnel is listening once its port refuses no more. */
	for (uint64_t deadline = zt_now_ms() + ET_WAIT_MS;;) {
		struct sockaddr_in a = {.sin_family = AF_INET,
		                        .sin_port = htons((uint16_t)sport),
		                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		int rc = connect(fd, (struct sockaddr *)&a, sizeof a);

		close(fd);
		if (rc == 0)
			break;
		cr_assert_lt(zt_now_ms(), deadline, "stunnel never listened (see %s)",
		             tp_path("stunnel.log"));
		usleep(20000);
	}
	snprintf(script, sizeof script,
	         "import zmq\n"
	         "base = bytes(k %% 251 for k in range(1000251))\n"
	         "def size(i):\n"
	         "    return 1000000 if i %% 100 == 99 else 20000 if i %% 10 == 5 else i %% 7\n"
	         "c = zmq.Context()\n"
	         "s = c.socket(zmq.PUSH)\n"
	         "s.connect('tcp://127.0.0.1:%d')\n"
	         "for i in range(%d):\n"
	         "    s.send(base[i %% 251:i %% 251 + size(i)])\n"
	         "s.close(linger=60000)\n"
	         "c.term()\n",
	         sport, TP_N);
	f = fopen(tp_path("push.py"), "w");
	cr_assert_not_null(f);
	fputs(script, f);
	fclose(f);
	{
		char cmd[512];

		snprintf(cmd, sizeof cmd, "'%s' '%s' >'%s' 2>&1 &", ZR_PYTHON, tp_path("push.py"),
		         tp_path("push.log"));
		cr_assert_eq(system(cmd), 0);
	}
	et_zopt_int(pull, ZR_RCVTIMEO, 60000);
	for (int i = 0; i < TP_N; i++) {
		int rc = zr_recv_bytes(pull, buf, sizeof buf, 0);

		cr_assert_eq(rc, (int)tp_size(i), "message %d: %d octets, want %zu (see %s)", i, rc,
		             tp_size(i), tp_path("stunnel.log"));
		for (size_t k = 0; k < (size_t)rc; k++)
			cr_assert_eq(buf[k], (uint8_t)(((size_t)i + k) % 251),
			             "message %d octet %zu", i, k);
	}
	et_zopt_int(pull, ZR_RCVTIMEO, ET_QUIET_MS);
	cr_assert_eq(zr_recv_bytes(pull, buf, sizeof buf, 0), -EAGAIN, "a message past the last");
	close(in_fd);
	close(out_fd);
}

/* Writes a stunnel configuration with one service and starts stunnel in
 * the foreground; returns once its accept port takes connections. */
static void
tp_stunnel(const char *service, int accept_port)
{
	char conf[128];
	int in_fd, out_fd;
	FILE *f;

	snprintf(conf, sizeof conf, "%s", tp_path("stunnel.conf"));
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f, "foreground = yes\npid =\noutput = %s\ndebug = notice\n%s",
	        tp_path("stunnel.log"), service);
	fclose(f);
	char *argv[] = {"stunnel4", conf, NULL};
	out_fd = tp_spawn(argv, tp_path("stunnel.err"), &in_fd);
	(void)out_fd;
	for (uint64_t deadline = zt_now_ms() + ET_WAIT_MS;;) {
		struct sockaddr_in a = {.sin_family = AF_INET,
		                        .sin_port = htons((uint16_t)accept_port),
		                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		int rc = connect(fd, (struct sockaddr *)&a, sizeof a);

		close(fd);
		if (rc == 0)
			break;
		cr_assert_lt(zt_now_ms(), deadline, "stunnel never listened (see %s)",
		             tp_path("stunnel.log"));
		usleep(20000);
	}
}

/* zring PUSH on tls:// -> stunnel (server mode, the test certificate) ->
 * pyzmq PULL: every message, byte for byte, in order, checked by the pyzmq
 * side, which then sees nothing more. */
Test(tls_peers, zring_push_through_stunnel_to_pyzmq)
{
	int sport = tp_free_port(), pyport = tp_free_port();
	zr_socket *push = et_zopen(0, ZR_PUSH);
	static uint8_t msg[1000000];
	char service[512], script[1024], cmd[512], ep[64], line[256] = "";
	FILE *f, *py;

	snprintf(service, sizeof service,
	         "[zring]\naccept = 127.0.0.1:%d\nconnect = 127.0.0.1:%d\ncert = %s\nkey = %s\n"
	         "sslVersionMin = TLSv1.3\n",
	         sport, pyport, tp_path("server.pem"), tp_path("server.key"));
	tp_stunnel(service, sport);
	snprintf(script, sizeof script,
	         "import sys, zmq\n"
	         "def size(i):\n"
	         "    return 1000000 if i %% 100 == 99 else 20000 if i %% 10 == 5 else i %% 7\n"
	         "base = bytes(k %% 251 for k in range(1000251))\n"
	         "c = zmq.Context()\n"
	         "s = c.socket(zmq.PULL)\n"
	         "s.setsockopt(zmq.RCVTIMEO, 60000)\n"
	         "s.bind('tcp://127.0.0.1:%d')\n"
	         "print('BOUND', flush=True)\n"
	         "for i in range(%d):\n"
	         "    m = s.recv()\n"
	         "    if m != base[i %% 251:i %% 251 + size(i)]:\n"
	         "        print('BAD', i, len(m), flush=True); sys.exit(1)\n"
	         "s.setsockopt(zmq.RCVTIMEO, 400)\n"
	         "try:\n"
	         "    s.recv(); print('EXTRA', flush=True)\n"
	         "except zmq.Again:\n"
	         "    print('OK', %d, flush=True)\n",
	         pyport, TP_N, TP_N);
	f = fopen(tp_path("pull.py"), "w");
	cr_assert_not_null(f);
	fputs(script, f);
	fclose(f);
	snprintf(cmd, sizeof cmd, "'%s' '%s' 2>'%s'", ZR_PYTHON, tp_path("pull.py"),
	         tp_path("pull.err"));
	py = popen(cmd, "r");
	cr_assert_not_null(py);
	cr_assert_not_null(fgets(line, sizeof line, py), "pyzmq PULL did not start (see %s)",
	                   tp_path("pull.err"));
	cr_assert_str_eq(line, "BOUND\n");
	tp_text(push, ZR_TLS_CA, tp_path("ca.pem"));
	snprintf(ep, sizeof ep, "tls://localhost:%d", sport);
	cr_assert_eq(zr_connect(push, ep), 0);
	for (int i = 0; i < TP_N; i++) {
		size_t n = tp_size(i);

		for (size_t k = 0; k < n; k++)
			msg[k] = (uint8_t)(((size_t)i + k) % 251);
		cr_assert_eq(zr_send_bytes(push, msg, n, 0), 0, "send %d", i);
	}
	line[0] = '\0';
	(void)!fgets(line, sizeof line, py);
	cr_assert_eq(pclose(py), 0, "pyzmq PULL: %s (see %s, %s)", line, tp_path("pull.err"),
	             tp_path("stunnel.log"));
	cr_assert_str_eq(line, "OK 1000\n");
}

/* A TLS 1.2 client (s_client -tls1_2) is served when the zring server's
 * TLS_VERSION_MIN is 1.2, and refused with the default (1.3). */
static int
tp_s_client_12(int port, uint8_t *got, size_t cap)
{
	char connect[64];
	size_t have = 0;
	int in_fd, out_fd;

	snprintf(connect, sizeof connect, "127.0.0.1:%d", port);
	char *argv[] = {"openssl",
	                "s_client",
	                "-connect",
	                connect,
	                "-servername",
	                "localhost",
	                "-CAfile",
	                (char *)tp_path("ca.pem"),
	                "-verify_return_error",
	                "-tls1_2",
	                "-quiet",
	                NULL};
	out_fd = tp_spawn(argv, tp_path("s_client12.log"), &in_fd);
	while (have < cap) {
		struct pollfd p = {.fd = out_fd, .events = POLLIN};
		ssize_t n;

		cr_assert_gt(poll(&p, 1, 60000), 0, "s_client: nothing in 60 s");
		n = read(out_fd, got + have, cap - have);
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	close(in_fd);
	close(out_fd);
	kill(tp_child, SIGTERM);
	waitpid(tp_child, NULL, 0);
	tp_child = -1;
	return (int)have;
}

Test(tls_peers, tls12_only_when_allowed)
{
	zr_socket *pull13, *pull12 = et_zopen(0, ZR_PULL);
	char ep[256];
	size_t len = sizeof ep;
	uint8_t got[10];
	int port12;

	tp_text(pull12, ZR_TLS_CERT, tp_path("server.pem"));
	tp_text(pull12, ZR_TLS_KEY, tp_path("server.key"));
	et_zopt_int(pull12, ZR_TLS_VERSION_MIN, ZR_TLS_V12);
	cr_assert_eq(zr_bind(pull12, "tls://127.0.0.1:*"), 0);
	cr_assert_eq(zr_getsockopt(pull12, ZR_LAST_ENDPOINT, ep, &len), 0);
	port12 = atoi(strrchr(ep, ':') + 1);
	cr_assert_eq(tp_s_client_12(port12, got, sizeof got), 10);
	cr_assert(got[0] == 0xff && got[9] == 0x7f);
	/* The default server: the 1.2 client reads nothing. */
	cr_assert_eq(tp_s_client_12(tp_pull(&pull13), got, sizeof got), 0);
}

/*
 * Backpressure through TLS: a PULL whose app does not read stops the PUSH
 * (its sends time out) after a bounded number of messages: the queues'
 * HWMs, the session's rings and the kernel buffers, which are fixed here.
 * Reading then delivers every message sent, in order.
 */
Test(tls_peers, stalled_pull_stops_the_sender)
{
	enum {
		SIZE = 16384,
		BOUND = 400
	};
	zr_socket *pull = et_zopen(0, ZR_PULL), *push = et_zopen(1, ZR_PUSH);
	static uint8_t msg[SIZE], got[SIZE + 1];
	char ep[256];
	size_t len = sizeof ep;
	int sent = 0;

	et_zopt_int(pull, ZR_RCVHWM, 10);
	et_zopt_int(pull, ZR_RCVBUF, 65536);
	et_zopt_int(push, ZR_SNDHWM, 10);
	et_zopt_int(push, ZR_SNDBUF, 65536);
	et_zopt_int(push, ZR_SNDTIMEO, 1000);
	tp_text(pull, ZR_TLS_CERT, tp_path("server.pem"));
	tp_text(pull, ZR_TLS_KEY, tp_path("server.key"));
	cr_assert_eq(zr_bind(pull, "tls://127.0.0.1:*"), 0);
	cr_assert_eq(zr_getsockopt(pull, ZR_LAST_ENDPOINT, ep, &len), 0);
	tp_text(push, ZR_TLS_CA, tp_path("ca.pem"));
	cr_assert_eq(zr_connect(push, ep), 0);
	for (;;) {
		int rc;

		memset(msg, (int)(sent & 0xff), SIZE);
		memcpy(msg, &sent, sizeof sent);
		rc = zr_send_bytes(push, msg, SIZE, 0);
		if (rc == -EAGAIN)
			break;
		cr_assert_eq(rc, 0);
		sent++;
		cr_assert_lt(sent, BOUND, "the sender was never stopped: %d messages of %d octets",
		             sent, SIZE);
	}
	cr_log_info("stopped after %d messages of %d octets", sent, SIZE);
	for (int i = 0; i < sent; i++) {
		int rc = zr_recv_bytes(pull, got, sizeof got, 0), id;

		cr_assert_eq(rc, SIZE, "message %d", i);
		memcpy(&id, got, sizeof id);
		cr_assert_eq(id, i, "message %d arrived as %d", i, id);
		cr_assert_eq(got[SIZE - 1], (uint8_t)(i & 0xff));
	}
}
