/*
 * Wire compatibility of the TLS adapter with OpenSSL's own tools over
 * loopback TCP: `openssl s_client` against an adapter server (plain and
 * mutual TLS, and a TLS 1.2-only client refused), and an adapter client
 * against `openssl s_server -rev`. The test drives the adapter over a
 * non-blocking socket with poll(2), the way the engine will over io_uring:
 * ciphertext between the socket and the session, plaintext in and out.
 */
#include "tls_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static struct tt_certs certs;

static void
setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	tt_certs_make(&certs);
}

static void
teardown(void)
{
	tt_certs_remove(&certs);
}

TestSuite(tls_interop, .init = setup, .fini = teardown, .timeout = 180);

/* Generous: the machine is loaded and ASan is slow; only a hang hits it. */
#define WAIT_MS 60000

struct child {
	pid_t pid;
	int in, out; /* its stdin (we write), its stdout (we read) */
};

static void
child_spawn(struct child *ch, char *const argv[], const char *errlog)
{
	ch->pid = tt_spawn(argv, errlog, &ch->in, &ch->out);
}

/* Reads the child's stdout to EOF (it exits when its connection closes). */
static size_t
child_read_all(struct child *ch, char *buf, size_t cap)
{
	size_t n = 0;
	struct pollfd p = {.fd = ch->out, .events = POLLIN};

	while (n + 1 < cap && poll(&p, 1, WAIT_MS) == 1) {
		ssize_t r = read(ch->out, buf + n, cap - 1 - n);

		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	return n;
}

static int
child_wait(struct child *ch)
{
	int st = 0;

	close(ch->in);
	close(ch->out);
	cr_assert_eq(waitpid(ch->pid, &st, 0), ch->pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void
errlog_dump(const char *name)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "cat '%s' >&2", tt_path(&certs, name));
	(void)!system(cmd);
}

static int
listen_loopback(uint16_t *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(fd, 1), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static int
accept_one(int lfd)
{
	struct pollfd p = {.fd = lfd, .events = POLLIN};
	int fd;

	cr_assert_eq(poll(&p, 1, WAIT_MS), 1, "nobody connected");
	fd = accept(lfd, NULL, NULL);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	return fd;
}

/* Sends all the ciphertext the session has (from its own buffer: the
 * zero-copy span), waiting for room in the socket when needed. */
static void
net_flush(int fd, struct zr__tls *t)
{
	struct iovec iov;

	while (zr__tls_send_iov(t, &iov) == 1) {
		ssize_t n = send(fd, iov.iov_base, iov.iov_len, MSG_NOSIGNAL);

		if (n < 0 && errno == EAGAIN) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};

			cr_assert_eq(poll(&p, 1, WAIT_MS), 1, "socket never drained");
			continue;
		}
		if (n < 0)
			return; /* the peer went away; the test's checks say why */
		(void)zr__tls_send_ack(t, (size_t)n);
	}
}

/* One round: flush, then wait for ciphertext and let it land in the
 * session's own buffer (the zero-copy span). Returns the bytes received,
 * 0 on EOF, -1 when nothing came within the wait. */
static ssize_t
net_step(int fd, struct zr__tls *t, int wait_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	size_t room;
	uint8_t *dst;
	ssize_t n;

	net_flush(fd, t);
	if (poll(&p, 1, wait_ms) != 1)
		return -1;
	dst = zr__tls_recv_buf(t, &room);
	if (dst == NULL)
		return -1; /* full: the caller reads plaintext first */
	n = recv(fd, dst, room, 0);
	if (n > 0)
		(void)zr__tls_recv_ack(t, (size_t)n);
	return n < 0 ? -1 : n;
}

/* Runs t until `want` bytes of plaintext came (or the session failed, or
 * the peer closed). Returns the bytes in buf. */
static size_t
net_read(int fd, struct zr__tls *t, char *buf, size_t want)
{
	size_t have = 0;
	int idle = 0;

	while (have < want && idle < WAIT_MS / 100) {
		ssize_t r = zr__tls_read(t, buf + have, want - have);

		if (r < 0)
			break;
		if (r > 0) {
			have += (size_t)r;
			continue;
		}
		r = net_step(fd, t, 100);
		if (r == 0)
			break;
		idle = r < 0 ? idle + 1 : 0;
	}
	return have;
}

static void
net_write(int fd, struct zr__tls *t, const char *s)
{
	size_t len = strlen(s), off = 0;

	while (off < len) {
		ssize_t r = zr__tls_write(t, s + off, len - off);

		cr_assert_geq(r, 0, "%s", zr__tls_error(t));
		off += (size_t)r;
		net_flush(fd, t);
	}
	while (zr__tls_flush(t) == 1)
		net_flush(fd, t);
	net_flush(fd, t);
}

/* openssl s_client -> adapter server; with `mutual` the server requires a
 * client certificate and s_client presents one. */
static void
s_client_talks_to_us(bool mutual, bool tls12)
{
	struct zr__tls_config cfg = {.server = true, .allow_tls12 = tls12};
	struct zr__tls_ctx *sc;
	struct zr__tls *s;
	char connect[64], got[256], out[4096];
	uint16_t port;
	int lfd = listen_loopback(&port), fd;
	struct child ch;
	char *argv[24];
	int a = 0;

	cfg.cert_file = tt_path(&certs, "server.pem");
	cfg.key_file = tt_path(&certs, "server.key");
	cfg.ca_file = mutual ? tt_path(&certs, "ca.pem") : NULL;
	sc = tt_ctx(&cfg);
	s = tt_session(sc, NULL);
	snprintf(connect, sizeof(connect), "127.0.0.1:%u", (unsigned)port);
	argv[a++] = "openssl";
	argv[a++] = "s_client";
	argv[a++] = "-connect";
	argv[a++] = connect;
	argv[a++] = "-CAfile";
	argv[a++] = (char *)tt_path(&certs, "ca.pem");
	argv[a++] = "-verify_return_error";
	argv[a++] = "-verify_ip";
	argv[a++] = "127.0.0.1";
	argv[a++] = "-quiet"; /* data only on stdout; also waits for the server to close */
	if (tls12)
		argv[a++] = "-tls1_2";
	if (mutual) {
		argv[a++] = "-cert";
		argv[a++] = (char *)tt_path(&certs, "client.pem");
		argv[a++] = "-key";
		argv[a++] = (char *)tt_path(&certs, "client.key");
	}
	argv[a] = NULL;
	child_spawn(&ch, argv, tt_path(&certs, "s_client.err"));
	fd = accept_one(lfd);
	cr_assert_eq(write(ch.in, "ping from s_client\n", 19), 19);

	if (net_read(fd, s, got, 19) != 19) {
		errlog_dump("s_client.err");
		cr_assert_fail("server got %s (%s)",
		               zr__tls_done(s) ? "too little" : "no handshake", zr__tls_error(s));
	}
	cr_assert_arr_eq(got, "ping from s_client\n", 19);
	cr_assert_str_eq(zr__tls_version(s), tls12 ? "TLSv1.2" : "TLSv1.3");
	if (mutual)
		cr_assert_str_eq(zr__tls_peer_subject(s), "CN=client one,O=zring test");
	else
		cr_assert_null(zr__tls_peer_subject(s));
	net_write(fd, s, "pong from zring\n");
	zr__tls_close(s);
	net_flush(fd, s);
	close(fd);
	child_read_all(&ch, out, sizeof(out));
	cr_assert_str_eq(out, "pong from zring\n");
	cr_assert_eq(child_wait(&ch), 0);
	close(lfd);
	zr__tls_free(s);
	zr__tls_ctx_free(sc);
}

Test(tls_interop, openssl_s_client_completes_a_handshake_and_both_directions_carry_bytes)
{
	s_client_talks_to_us(false, false);
}

Test(tls_interop, openssl_s_client_with_a_client_certificate_is_named_by_its_subject)
{
	s_client_talks_to_us(true, false);
}

Test(tls_interop, a_tls12_client_is_served_when_the_server_allows_tls12)
{
	s_client_talks_to_us(true, true);
}

Test(tls_interop, a_tls12_only_client_is_refused_with_no_version_in_common)
{
	struct zr__tls_ctx *sc = tt_server(&certs, "server", false);
	struct zr__tls *s = tt_session(sc, NULL);
	char connect[64], out[4096], buf[16];
	uint16_t port;
	int lfd = listen_loopback(&port), fd;
	struct child ch;

	snprintf(connect, sizeof(connect), "127.0.0.1:%u", (unsigned)port);
	child_spawn(
		&ch,
		(char *[]){"openssl", "s_client", "-connect", connect, "-tls1_2", "-quiet", NULL},
		tt_path(&certs, "s_client.err"));
	fd = accept_one(lfd);
	(void)net_read(fd, s, buf, sizeof(buf));
	cr_assert_eq(zr__tls_failure(s), ZR__TLS_VERSION, "%d %s", zr__tls_failure(s),
	             zr__tls_error(s));
	cr_assert_not_null(strstr(zr__tls_error(s), "no TLS version in common"), "%s",
	                   zr__tls_error(s));
	cr_log_info("%s", zr__tls_error(s));
	net_flush(fd, s); /* the protocol_version alert */
	close(fd);
	child_read_all(&ch, out, sizeof(out));
	cr_assert_neq(child_wait(&ch), 0, "s_client should report the failed handshake");
	close(lfd);
	zr__tls_free(s);
	zr__tls_ctx_free(sc);
}

Test(tls_interop, adapter_client_talks_to_openssl_s_server)
{
	struct zr__tls_ctx *cc = tt_client(&certs, NULL);
	struct zr__tls *c = tt_session(cc, "localhost");
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	char line[256], got[64];
	struct child ch;
	size_t n = 0;
	unsigned port = 0;
	int fd;

	child_spawn(&ch,
	            (char *[]){"openssl", "s_server", "-4", "-accept", "0", "-naccept", "1", "-rev",
	                       "-cert", (char *)tt_path(&certs, "server.pem"), "-key",
	                       (char *)tt_path(&certs, "server.key"), NULL},
	            tt_path(&certs, "s_server.err"));
	/* It prints "ACCEPT 0.0.0.0:<port>" once it listens. */
	while (port == 0 && n + 1 < sizeof(line)) {
		struct pollfd p = {.fd = ch.out, .events = POLLIN};
		ssize_t r;
		char *at;

		cr_assert_eq(poll(&p, 1, WAIT_MS), 1, "s_server printed no ACCEPT line");
		r = read(ch.out, line + n, sizeof(line) - 1 - n);
		cr_assert_gt(r, 0, "s_server exited");
		n += (size_t)r;
		line[n] = '\0';
		if ((at = strstr(line, "ACCEPT 0.0.0.0:")) != NULL && strchr(at, '\n') != NULL)
			port = (unsigned)atoi(at + 15);
	}
	cr_assert_gt(port, 0);
	sa.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(fcntl(fd, F_SETFL, O_NONBLOCK), 0);

	/* The ClientHello is pending from zr__tls_new; the handshake runs inside
	 * net_read. s_server -rev sends each line back reversed. */
	for (int i = 0; i < 100 && !zr__tls_done(c) && zr__tls_failure(c) == ZR__TLS_OK; i++)
		(void)net_step(fd, c, 100);
	cr_assert(zr__tls_done(c), "%s", zr__tls_error(c));
	cr_assert_str_eq(zr__tls_peer_subject(c), "CN=localhost");
	net_write(fd, c, "hello zring\n");
	n = net_read(fd, c, got, 12);
	if (n != 12)
		errlog_dump("s_server.err");
	cr_assert_eq(n, 12, "%s", zr__tls_error(c));
	cr_assert_arr_eq(got, "gnirz olleh\n", 12);
	zr__tls_close(c);
	net_flush(fd, c);
	close(fd);
	(void)child_read_all(&ch, line, sizeof(line));
	cr_assert_eq(child_wait(&ch), 0);
	zr__tls_free(c);
	zr__tls_ctx_free(cc);
}
