/*
 * Guards on a bound socket: the connection cap (ZR_CONNS_MAX), the accept
 * back-off when descriptors run out, routing ids a peer cannot guess, and
 * the proof that one socket serves 10,000 connections at once.
 *
 * The storm and the 10,000 run the server in a child process (fork), so its
 * descriptor limit, CPU time and memory are its own: the test reads them
 * from /proc/<pid>. The clients there are raw TCP sockets speaking ZMTP
 * through the codec's public functions (zmtp.h).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <zring/zmtp.h>
#include <zring/zring.h>

#include "sock_helpers.h"

#define WAIT_MS 20000

/* ---- helpers -------------------------------------------------------------- */

/* The port of "tcp://127.0.0.1:PORT". */
static int
port_of(const char *ep)
{
	const char *colon = strrchr(ep, ':');

	cr_assert_not_null(colon, "endpoint %s", ep);
	return atoi(colon + 1);
}

/* A TCP socket towards 127.0.0.1:port; nonblocking if asked (the connect is
 * then in progress). */
static int
tcp_dial(int port, bool nonblocking)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);

	cr_assert_geq(fd, 0, "socket: %s", strerror(errno));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		cr_assert_eq(errno, EINPROGRESS, "connect: %s", strerror(errno));
	return fd;
}

/* Reads up to cap octets within ms: the count, 0 at EOF, -errno. */
static ssize_t
read_within(int fd, void *buf, size_t cap, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ssize_t n;

	if (poll(&p, 1, ms) <= 0)
		return -ETIMEDOUT;
	n = read(fd, buf, cap);
	return n < 0 ? -errno : n;
}

/* A zring server's greeting: 64 octets sent as soon as it accepts. */
static bool
got_greeting(int fd)
{
	uint8_t buf[64];
	size_t have = 0;

	while (have < sizeof buf) {
		ssize_t n = read_within(fd, buf + have, sizeof buf - have, WAIT_MS);

		if (n <= 0)
			return false;
		have += (size_t)n;
	}
	return zr_zmtp_greeting_parse(buf, sizeof buf, NULL) == ZR_OK;
}

/* The next event of type (others are skipped), or a failed test. */
static struct zr_event
expect_event(zr_socket *s, int type)
{
	struct zr_event ev;

	for (;;) {
		int rc = zr_monitor_recv(s, &ev, WAIT_MS);

		cr_assert_eq(rc, 0, "no event 0x%x within %d ms: %s", type, WAIT_MS,
		             zr_strerror(rc));
		if (ev.type == type)
			return ev;
	}
}

static void
raise_nofile(rlim_t want)
{
	struct rlimit rl;

	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < want) {
		rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
		cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	}
}

/* utime + stime of a process, in seconds of CPU (/proc/<pid>/stat). */
static double
cpu_seconds(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long ut = 0, st = 0;
	FILE *f;
	char *p;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	cr_assert_not_null(fgets(buf, sizeof buf, f));
	fclose(f);
	p = strrchr(buf, ')'); /* the name may hold spaces */
	cr_assert_not_null(p);
	/* after ")": state(3) ... utime is field 14, stime 15 */
	cr_assert_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st),
	             2);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Resident set of this process, bytes (/proc/self/statm). */
static long
rss_self(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f == NULL)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = -1;
	fclose(f);
	return rss < 0 ? -1 : rss * sysconf(_SC_PAGESIZE);
}

static void
write_all(int fd, const void *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(90);
		p = (const char *)p + w;
		n -= (size_t)w;
	}
}

static bool
read_all(int fd, void *p, size_t n, int ms)
{
	while (n > 0) {
		ssize_t r = read_within(fd, p, n, ms);

		if (r <= 0)
			return false;
		p = (char *)p + r;
		n -= (size_t)r;
	}
	return true;
}

/* ---- CONNS_MAX ------------------------------------------------------------ */

Test(engine_guard, conns_max_has_a_finite_default_and_refuses_negative_values)
{
	zr_ctx *ctx;
	zr_socket *s;
	int v = -1;
	size_t len = sizeof v;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_ROUTER, &s), 0);
	cr_assert_eq(zr_getsockopt(s, ZR_CONNS_MAX, &v, &len), 0);
	cr_assert_eq(v, ZR_CONNS_MAX_DEFAULT);
	cr_assert_gt(v, 10000, "the default must let 10,000 peers in");
	v = -2;
	cr_assert_eq(zr_setsockopt(s, ZR_CONNS_MAX, &v, sizeof v), -EINVAL);
	v = 0;
	cr_assert_eq(zr_setsockopt(s, ZR_CONNS_MAX, &v, sizeof v), -EINVAL);
	v = -1; /* no limit */
	cr_assert_eq(zr_setsockopt(s, ZR_CONNS_MAX, &v, sizeof v), 0);
	v = 3;
	cr_assert_eq(zr_setsockopt(s, ZR_CONNS_MAX, &v, sizeof v), 0);
	len = sizeof v;
	cr_assert_eq(zr_getsockopt(s, ZR_CONNS_MAX, &v, &len), 0);
	cr_assert_eq(v, 3);
	zr_socket_close(s);
	zr_ctx_free(ctx);
}

Test(engine_guard, a_connection_over_conns_max_is_closed_at_once_and_one_that_goes_makes_room)
{
	zr_ctx *ctx;
	zr_socket *pull;
	char ep[128];
	struct zr_event ev;
	uint8_t buf[64];
	int a, b, c, d;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PULL, &pull), 0);
	sopt_int(pull, ZR_CONNS_MAX, 2);
	sopt_int(pull, ZR_LINGER, 0);
	cr_assert_eq(zr_socket_monitor(pull, ZR_EVENT_ACCEPTED | ZR_EVENT_ACCEPT_FAILED), 0);
	cr_assert_eq(zr_bind(pull, "tcp://127.0.0.1:0"), 0);
	endpoint_of(pull, ep, sizeof ep);

	a = tcp_dial(port_of(ep), false);
	cr_assert(got_greeting(a), "the first connection is served");
	expect_event(pull, ZR_EVENT_ACCEPTED);
	b = tcp_dial(port_of(ep), false);
	cr_assert(got_greeting(b), "the second connection is served");
	expect_event(pull, ZR_EVENT_ACCEPTED);

	/* The third is over the cap: closed at once, with the reason. */
	c = tcp_dial(port_of(ep), false);
	cr_assert_leq(read_within(c, buf, sizeof buf, WAIT_MS), 0, "a third one is not served");
	ev = expect_event(pull, ZR_EVENT_ACCEPT_FAILED);
	cr_assert_eq(ev.value, -ECONNREFUSED);
	cr_assert_not_null(strstr(ev.reason, "CONNS_MAX (2)"), "reason: %s", ev.reason);
	close(c);

	/* One goes: a new one is served again. */
	close(a);
	for (int tries = 0;; tries++) {
		d = tcp_dial(port_of(ep), false);
		if (got_greeting(d))
			break;
		close(d);
		cr_assert_lt(tries, 200, "no room after a connection went");
		usleep(50 * 1000); /* the server may not have seen a's end yet */
	}
	close(b);
	close(d);
	zr_socket_close(pull);
	zr_ctx_free(ctx);
}

/* ---- routing ids ---------------------------------------------------------- */

#define RID_PEERS 64

Test(engine_guard, generated_routing_ids_are_random_not_sequential)
{
	static zr_socket *dealers[RID_PEERS];
	uint8_t ids[RID_PEERS][5];
	zr_ctx *ctx;
	zr_socket *router;
	char ep[128];
	int consecutive = 0, one_bit = 0;

	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_ROUTER, &router), 0);
	sopt_int(router, ZR_RCVTIMEO, WAIT_MS);
	sopt_int(router, ZR_LINGER, 0);
	cr_assert_eq(zr_bind(router, "tcp://127.0.0.1:0"), 0);
	endpoint_of(router, ep, sizeof ep);
	/* One at a time, so the ids are given in this order. */
	for (int i = 0; i < RID_PEERS; i++) {
		zr_msg *m;
		size_t len;
		const uint8_t *id;

		cr_assert_eq(zr_socket_open(ctx, ZR_DEALER, &dealers[i]), 0);
		sopt_int(dealers[i], ZR_LINGER, 0);
		cr_assert_eq(zr_connect(dealers[i], ep), 0);
		cr_assert_eq(zr_send_bytes(dealers[i], "x", 1, 0), 0);
		cr_assert_eq(zr_recv(router, &m, 0), 0, "request %d", i);
		id = zr_msg_frame(m, 0, &len);
		cr_assert_eq(len, 5u, "0x00 and four octets, as libzmq's");
		cr_assert_eq(id[0], 0);
		memcpy(ids[i], id, 5);
		zr_msg_free(m);
	}
	for (int i = 0; i < RID_PEERS; i++) {
		for (int j = 0; j < i; j++)
			cr_assert_neq(memcmp(ids[i], ids[j], 5), 0, "ids %d and %d are equal", i,
			              j);
	}
	for (int i = 1; i < RID_PEERS; i++) {
		uint32_t p = (uint32_t)ids[i - 1][1] << 24 | (uint32_t)ids[i - 1][2] << 16 |
		             (uint32_t)ids[i - 1][3] << 8 | ids[i - 1][4];
		uint32_t n = (uint32_t)ids[i][1] << 24 | (uint32_t)ids[i][2] << 16 |
		             (uint32_t)ids[i][3] << 8 | ids[i][4];

		consecutive += n == p + 1;
		one_bit += __builtin_popcount(n ^ p) <= 1;
	}
	/* Random 32-bit ids: either happens by chance about once in 2^26 runs. */
	cr_assert_eq(consecutive, 0, "%d ids follow their predecessor", consecutive);
	cr_assert_eq(one_bit, 0, "%d ids differ from the previous in one bit", one_bit);
	for (int i = 0; i < RID_PEERS; i++)
		zr_socket_close(dealers[i]);
	zr_socket_close(router);
	zr_ctx_free(ctx);
}

/* ---- accept back-off: teardown while a retry is pending -------------------- */

#define BACKOFF_CLIENTS 4

/*
 * Puts a PULL's listener into back-off in this process: the clients'
 * sockets are made first, every descriptor but one below a limit is taken
 * and the limit lowered; the bind takes the last one. The accept, armed
 * after that (io_uring reads the limit when it is armed), fails with EMFILE.
 */
struct starve {
	int fds[4096];
	int n;
	struct rlimit saved;
};

static void
starve_begin(struct starve *st, zr_socket *pull, char *ep, size_t cap)
{
	int clients[BACKOFF_CLIENTS], top = 0, last;
	struct rlimit low;
	struct zr_event ev;

	for (int i = 0; i < BACKOFF_CLIENTS; i++) {
		clients[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		cr_assert_geq(clients[i], 0);
		st->fds[st->n++] = clients[i];
		if (clients[i] > top)
			top = clients[i];
	}
	/* Fill every hole below the clients, and one past them. */
	for (;;) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		cr_assert_geq(fd, 0);
		cr_assert_lt(st->n, 4096);
		st->fds[st->n++] = fd;
		if (fd > top)
			break;
	}
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &st->saved), 0);
	last = st->fds[--st->n];
	close(last); /* the one the listening socket gets */
	low = st->saved;
	low.rlim_cur = (rlim_t)last + 1;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	cr_assert_eq(zr_bind(pull, "tcp://127.0.0.1:0"), 0);
	endpoint_of(pull, ep, cap);
	for (int i = 0; i < BACKOFF_CLIENTS; i++) {
		struct sockaddr_in sa = {.sin_family = AF_INET,
		                         .sin_port = htons((uint16_t)port_of(ep))};

		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		cr_assert_eq(connect(clients[i], (struct sockaddr *)&sa, sizeof sa), 0,
		             "connect: %s", strerror(errno));
	}
	ev = expect_event(pull, ZR_EVENT_ACCEPT_FAILED);
	cr_assert_eq(ev.value, -EMFILE, "value %d (%s)", ev.value, ev.reason);
	cr_assert_not_null(strstr(ev.reason, "too many open files"), "reason: %s", ev.reason);
	cr_assert_not_null(strstr(ev.reason, "retrying in 100 ms"), "reason: %s", ev.reason);
}

static void
starve_end(struct starve *st)
{
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &st->saved), 0);
	for (int i = 0; i < st->n; i++)
		close(st->fds[i]);
	st->n = 0;
}

/* A new context (*ctx) with a monitored PULL bound at ep whose listener is
 * starved of descriptors and backing off; starve_end(st) gives them back. */
static zr_socket *
backoff_begin(struct starve *st, zr_ctx **ctx, char *ep, size_t cap)
{
	zr_socket *pull;

	cr_assert_eq(zr_ctx_new(ctx), 0);
	cr_assert_eq(zr_socket_open(*ctx, ZR_PULL, &pull), 0);
	sopt_int(pull, ZR_LINGER, 0);
	cr_assert_eq(zr_socket_monitor(pull, ZR_EVENT_ACCEPT_FAILED | ZR_EVENT_ACCEPTED |
	                                             ZR_EVENT_CLOSED),
	             0);
	starve_begin(st, pull, ep, cap);
	return pull;
}

Test(engine_guard, a_listener_backing_off_after_emfile_resumes_when_descriptors_come_back)
{
	static struct starve st;
	zr_ctx *ctx;
	zr_socket *pull;
	char ep[128];
	struct zr_event ev;
	int accepted = 0;

	pull = backoff_begin(&st, &ctx, ep, sizeof ep);
	/* Still failing at the next try: the pause doubles. */
	ev = expect_event(pull, ZR_EVENT_ACCEPT_FAILED);
	cr_assert_not_null(strstr(ev.reason, "retrying in 200 ms"), "reason: %s", ev.reason);
	starve_end(&st);
	/* Descriptors are back: the clients waiting in the backlog get in. */
	while (accepted < BACKOFF_CLIENTS) {
		ev = expect_event(pull, ZR_EVENT_ACCEPTED);
		accepted++;
	}
	zr_socket_close(pull);
	zr_ctx_free(ctx);
}

Test(engine_guard, unbind_while_the_accept_backs_off_closes_the_listener)
{
	static struct starve st;
	zr_ctx *ctx;
	zr_socket *pull;
	char ep[128];

	pull = backoff_begin(&st, &ctx, ep, sizeof ep);
	cr_assert_eq(zr_unbind(pull, ep), 0);
	expect_event(pull, ZR_EVENT_CLOSED);
	starve_end(&st);
	/* Nothing listens there any more (the retry did not re-arm it). */
	{
		struct sockaddr_in sa = {.sin_family = AF_INET,
		                         .sin_port = htons((uint16_t)port_of(ep))};
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), -1);
		cr_assert_eq(errno, ECONNREFUSED, "connect: %s", strerror(errno));
		close(fd);
	}
	zr_socket_close(pull);
	zr_ctx_free(ctx);
}

Test(engine_guard, close_and_term_while_the_accept_backs_off_free_everything)
{
	static struct starve st;
	zr_ctx *ctx;
	zr_socket *pull;
	char ep[128];

	pull = backoff_begin(&st, &ctx, ep, sizeof ep);
	zr_socket_close(pull);
	zr_ctx_free(ctx); /* the retry timer must not outlive the listener (ASan) */
	starve_end(&st);
}

Test(engine_guard, term_alone_while_the_accept_backs_off_frees_everything)
{
	static struct starve st;
	zr_ctx *ctx;
	zr_socket *pull;
	char ep[128];

	pull = backoff_begin(&st, &ctx, ep, sizeof ep);
	zr_ctx_free(ctx); /* closes the socket the app left open */
	starve_end(&st);
	(void)pull;
}

/* ---- a server in a child process -------------------------------------------- */

struct child {
	pid_t pid;
	int ctl; /* parent -> child: one command octet */
	int res; /* child -> parent: the endpoint, then reports */
	char ep[128];
};

struct report {
	long msgs;     /* messages received */
	long distinct; /* distinct payload indices received */
	long fails;    /* ACCEPT_FAILED events */
	long rss_before, rss_now;
	char first_reason[ZR_EVENT_REASON_MAX];
};

#define CHILD_MAX_IDS 16384

/* The child: a PULL on tcp://127.0.0.1:0 counting what arrives, at most
 * nofile descriptors; answers 'r' with a report and ends at 'q'. */
static void
child_serve(int ctl, int res, rlim_t nofile)
{
	static uint8_t seen[CHILD_MAX_IDS];
	struct report rep = {0};
	struct rlimit rl;
	zr_ctx *ctx;
	zr_socket *pull;
	char ep[128] = {0}, buf[64]; /* ep goes whole down the pipe */
	size_t len = sizeof ep;
	int t = 20, zero = 0;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		_exit(80);
	rl.rlim_cur = nofile < rl.rlim_max ? nofile : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		_exit(81);
	if (zr_ctx_new(&ctx) < 0 || zr_socket_open(ctx, ZR_PULL, &pull) < 0)
		_exit(82);
	zr_setsockopt(pull, ZR_RCVTIMEO, &t, sizeof t);
	zr_setsockopt(pull, ZR_LINGER, &zero, sizeof zero);
	zr_socket_monitor(pull, ZR_EVENT_ACCEPT_FAILED);
	if (zr_bind(pull, "tcp://127.0.0.1:0") < 0 ||
	    zr_getsockopt(pull, ZR_LAST_ENDPOINT, ep, &len) < 0)
		_exit(83);
	rep.rss_before = rss_self();
	write_all(res, ep, sizeof ep);
	for (;;) {
		struct zr_event ev;
		struct pollfd p = {.fd = ctl, .events = POLLIN};
		int n = zr_recv_bytes(pull, buf, sizeof buf - 1, 0);
		char cmd;

		if (n >= 0) {
			long id;

			rep.msgs++;
			buf[n < (int)sizeof buf - 1 ? n : (int)sizeof buf - 1] = '\0';
			id = strtol(buf, NULL, 10);
			if (id >= 0 && id < CHILD_MAX_IDS && !seen[id]) {
				seen[id] = 1;
				rep.distinct++;
			}
		}
		while (zr_monitor_recv(pull, &ev, 0) == 0) {
			if (ev.type == ZR_EVENT_ACCEPT_FAILED && rep.fails++ == 0)
				memcpy(rep.first_reason, ev.reason, sizeof ev.reason);
		}
		if (poll(&p, 1, 0) <= 0)
			continue;
		if (read(ctl, &cmd, 1) != 1 || cmd == 'q')
			break;
		rep.rss_now = rss_self();
		write_all(res, &rep, sizeof rep);
	}
	zr_socket_close(pull);
	zr_ctx_free(ctx);
	_exit(0);
}

static void
child_start(struct child *c, rlim_t nofile)
{
	int ctl[2], res[2];

	cr_assert_eq(pipe2(ctl, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(res, O_CLOEXEC), 0);
	fflush(NULL);
	c->pid = fork();
	cr_assert_geq(c->pid, 0);
	if (c->pid == 0) {
		close(ctl[1]);
		close(res[0]);
		child_serve(ctl[0], res[1], nofile);
	}
	close(ctl[0]);
	close(res[1]);
	c->ctl = ctl[1];
	c->res = res[0];
	cr_assert(read_all(c->res, c->ep, sizeof c->ep, WAIT_MS), "the server child said nothing");
}

static struct report
child_report(struct child *c)
{
	struct report r;

	cr_assert_eq(write(c->ctl, "r", 1), 1);
	cr_assert(read_all(c->res, &r, sizeof r, WAIT_MS), "no report from the server child");
	return r;
}

static void
child_stop(struct child *c)
{
	int status = 0;

	cr_assert_eq(write(c->ctl, "q", 1), 1);
	cr_assert_eq(waitpid(c->pid, &status, 0), c->pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "server child status 0x%x",
	          (unsigned)status);
	close(c->ctl);
	close(c->res);
}

/* ---- the EMFILE storm --------------------------------------------------------- */

#define STORM_NOFILE 64
#define STORM_CLIENTS 184
#define STORM_WINDOW_US (3 * 1000 * 1000)

/*
 * 184 connections at a server allowed 64 descriptors. Before the back-off,
 * its io thread re-armed the failed accept at once and burnt a core (2.94 s
 * of CPU in 3 s, measured); now it sleeps between tries. The window is a
 * span to measure CPU over, not an assertion on time.
 */
Test(engine_guard, an_emfile_storm_costs_little_cpu_and_few_events_then_service_resumes,
     .timeout = 120)
{
	static int fds[STORM_CLIENTS];
	struct child c;
	struct report r;
	double cpu0, cpu1;
	zr_ctx *ctx;
	zr_socket *push;

	raise_nofile(1024);
	child_start(&c, STORM_NOFILE);
	for (int i = 0; i < STORM_CLIENTS; i++)
		fds[i] = tcp_dial(port_of(c.ep), true);
	/* The first failure is there once the server reports it. */
	for (int tries = 0;; tries++) {
		r = child_report(&c);
		if (r.fails > 0)
			break;
		cr_assert_lt(tries, WAIT_MS / 50, "the server never ran out of descriptors");
		usleep(50 * 1000);
	}
	cpu0 = cpu_seconds(c.pid);
	usleep(STORM_WINDOW_US);
	cpu1 = cpu_seconds(c.pid);
	r = child_report(&c);
	fprintf(stderr,
	        "emfile storm: server CPU %.3f s over %.1f s, %ld ACCEPT_FAILED events (%s)\n",
	        cpu1 - cpu0, STORM_WINDOW_US / 1e6, r.fails, r.first_reason);
	cr_assert_lt(cpu1 - cpu0, 0.5, "the server used %.3f s of CPU during the storm",
	             cpu1 - cpu0);
	cr_assert_not_null(strstr(r.first_reason, "too many open files"), "reason: %s",
	                   r.first_reason);
	cr_assert_not_null(strstr(r.first_reason, "retrying in 100 ms"), "reason: %s",
	                   r.first_reason);
	/* One per pause (100, 200, 400, 800 ms, then each second): a few. */
	cr_assert_leq(r.fails, 20, "%ld ACCEPT_FAILED events for %d connections", r.fails,
	              STORM_CLIENTS);

	/* The storm ends: the server takes a real peer again. */
	for (int i = 0; i < STORM_CLIENTS; i++)
		close(fds[i]);
	cr_assert_eq(zr_ctx_new(&ctx), 0);
	cr_assert_eq(zr_socket_open(ctx, ZR_PUSH, &push), 0);
	sopt_int(push, ZR_LINGER, 0);
	cr_assert_eq(zr_connect(push, c.ep), 0);
	cr_assert_eq(zr_send_bytes(push, "7", 1, 0), 0);
	for (int tries = 0;; tries++) {
		r = child_report(&c);
		if (r.msgs > 0)
			break;
		cr_assert_lt(tries, 60 * 1000 / 50, "the server never served again");
		usleep(50 * 1000);
	}
	cr_assert_eq(r.msgs, 1);
	zr_socket_close(push);
	zr_ctx_free(ctx);
	child_stop(&c);
}

/* ---- 10,000 connections ------------------------------------------------------- */

#define TENK 10000
#define TENK_INFLIGHT 256 /* dials not yet greeted, at most */

struct tenk_conn {
	int fd;
	bool sent;
	uint16_t have;
	uint8_t in[192]; /* the server's greeting and READY */
};

/* Our side of a ZMTP 3.0 NULL handshake as PUSH, then one message: i. */
static size_t
tenk_hello(uint8_t *out, size_t cap, int i)
{
	uint8_t props[64], hdr[ZR_ZMTP_HEADER_MAX];
	char body[16];
	int n = zr_zmtp_greeting_encode(out, 0, ZR_MECH_NULL, false), pl, h, b;
	size_t len;

	cr_assert_eq(n, ZR_ZMTP_GREETING_SIZE);
	len = (size_t)n;
	pl = zr_zmtp_prop_encode(props, sizeof props, "Socket-Type", (const uint8_t *)"PUSH", 4);
	cr_assert_gt(pl, 0);
	n = zr_zmtp_cmd_encode(out + len, cap - len, "READY", props, (size_t)pl);
	cr_assert_gt(n, 0);
	len += (size_t)n;
	b = snprintf(body, sizeof body, "%d", i);
	h = zr_zmtp_frame_header(hdr, (uint64_t)b, 0);
	cr_assert_gt(h, 0);
	cr_assert_leq(len + (size_t)h + (size_t)b, cap);
	memcpy(out + len, hdr, (size_t)h);
	memcpy(out + len + (size_t)h, body, (size_t)b);
	return len + (size_t)h + (size_t)b;
}

/* The server's greeting and whole READY arrived (and are well-formed). */
static int
tenk_greeted(const struct tenk_conn *c)
{
	size_t body;

	if (c->have < ZR_ZMTP_GREETING_SIZE + 2)
		return 0;
	if (zr_zmtp_greeting_parse(c->in, ZR_ZMTP_GREETING_SIZE, NULL) != ZR_OK)
		return -1;
	if (!(c->in[64] & ZR_ZMTP_COMMAND) || (c->in[64] & ZR_ZMTP_LONG))
		return -1;
	body = c->in[65];
	if (c->have < ZR_ZMTP_GREETING_SIZE + 2 + body)
		return 0;
	return body >= 6 && memcmp(c->in + 66, "\x05READY", 6) == 0 ? 1 : -1;
}

Test(engine_guard, one_socket_serves_ten_thousand_concurrent_connections, .timeout = 600)
{
	static struct tenk_conn conns[TENK];
	struct epoll_event evs[256];
	struct rlimit rl;
	struct child c;
	struct report r;
	int ep, opened = 0, pending = 0, greeted = 0;
	long long deadline;

	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max < TENK + 256)
		cr_skip_test("the hard RLIMIT_NOFILE is %lu; 10,000 connections need %d",
		             (unsigned long)rl.rlim_max, TENK + 256);
	raise_nofile(TENK + 256);
	child_start(&c, TENK + 256);
	ep = epoll_create1(EPOLL_CLOEXEC);
	cr_assert_geq(ep, 0);
	deadline = (long long)time(NULL) + 480;

	/* A bounded number of dials in flight, so the listen backlog never
	 * overflows into SYN retries. */
	while (greeted < TENK) {
		while (opened < TENK && pending < TENK_INFLIGHT) {
			struct epoll_event e = {.events = EPOLLIN | EPOLLOUT,
			                        .data.u32 = (uint32_t)opened};

			conns[opened].fd = tcp_dial(port_of(c.ep), true);
			cr_assert_eq(epoll_ctl(ep, EPOLL_CTL_ADD, conns[opened].fd, &e), 0);
			opened++;
			pending++;
		}
		int n = epoll_wait(ep, evs, 256, 1000);

		cr_assert_geq(n, 0);
		cr_assert_lt((long long)time(NULL), deadline, "%d of %d greeted", greeted, TENK);
		for (int k = 0; k < n; k++) {
			uint32_t i = evs[k].data.u32;
			struct tenk_conn *t = &conns[i];
			int g;

			if (evs[k].events & (EPOLLERR | EPOLLHUP))
				cr_assert_fail("connection %u failed (events 0x%x)", i,
				               evs[k].events);
			if (!t->sent && (evs[k].events & EPOLLOUT)) {
				uint8_t hello[160];
				size_t len = tenk_hello(hello, sizeof hello, (int)i);
				struct epoll_event e = {.events = EPOLLIN, .data.u32 = i};

				cr_assert_eq(write(t->fd, hello, len), (ssize_t)len,
				             "connection %u", i);
				t->sent = true;
				cr_assert_eq(epoll_ctl(ep, EPOLL_CTL_MOD, t->fd, &e), 0);
			}
			if (!(evs[k].events & EPOLLIN))
				continue;
			ssize_t got = read(t->fd, t->in + t->have, sizeof t->in - t->have);

			cr_assert_gt(got, 0, "connection %u: %s", i,
			             got < 0 ? strerror(errno) : "EOF");
			t->have = (uint16_t)(t->have + got);
			g = tenk_greeted(t);
			cr_assert_geq(g, 0, "connection %u: not a zring greeting and READY", i);
			if (g == 1) {
				cr_assert_eq(epoll_ctl(ep, EPOLL_CTL_DEL, t->fd, NULL), 0);
				greeted++;
				pending--;
			}
		}
	}
	/* Every connection is open and handshaken; the server has each message. */
	for (int tries = 0;; tries++) {
		r = child_report(&c);
		if (r.distinct == TENK)
			break;
		cr_assert_lt(tries, 120 * 1000 / 100, "the server has %ld of %d messages",
		             r.distinct, TENK);
		usleep(100 * 1000);
	}
	cr_assert_eq(r.msgs, TENK, "one message per connection");
	fprintf(stderr,
	        "10k connections: server RSS %.1f MiB before, %.1f MiB with 10,000 open: "
	        "%.1f KiB per connection\n",
	        (double)r.rss_before / 1048576.0, (double)r.rss_now / 1048576.0,
	        (double)(r.rss_now - r.rss_before) / TENK / 1024.0);
	/* Not under ASan, whose shadow and quarantine add their own. */
#if defined(__SANITIZE_ADDRESS__)
#define TENK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TENK_ASAN 1
#endif
#endif
#ifndef TENK_ASAN
	cr_assert_lt((r.rss_now - r.rss_before) / TENK, 64 * 1024, "%ld bytes per connection",
	             (r.rss_now - r.rss_before) / TENK);
#endif
	for (int i = 0; i < TENK; i++)
		close(conns[i].fd);
	close(ep);
	child_stop(&c);
}
