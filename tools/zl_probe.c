/*
 * zring tools — `zring probe`: a conformance and robustness tester for any
 * ZMTP 3.x peer (libzmq, JeroMQ, NetMQ, zmq.rs, embedded stacks, zring).
 *
 *   zring probe [options] ENDPOINT           the case catalogue
 *   zring probe --fuzz [--seconds N] [--seed S] [--out DIR] ENDPOINT
 *   zring probe --replay FILE ENDPOINT       play a fuzz finding back
 *   zring probe --self [--count N]           our codec against pyzmq
 *
 * The runner: learn the peer (its socket type from its READY unless --type,
 * whether it answers PING), run each case of the catalogue
 * (probe/pr_cases.c) and, after every case, the liveness oracle (a fresh
 * connection completes the handshake and, for a peer that answers PINGs, a
 * PING gets its PONG). Everything goes over plain sockets with the codec of
 * <zring/zmtp.h>; nothing here uses the engine.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include <zring/error.h>
#include <zring/zmtp.h>

#include "probe/pr_mutate.h"
#include "probe/probe.h"
#include "zl_args.h"
#include "zl_probe.h"

static const char probe_usage_head[] =
	"usage: zring probe [options] ENDPOINT\n"
	"       zring probe --fuzz [--seconds N] [--seed S] [--out DIR] ENDPOINT\n"
	"       zring probe --replay FILE ENDPOINT\n"
	"       zring probe --self [--count N]\n"
	"\n"
	"Tests the ZMTP 3.x peer at ENDPOINT (tcp://HOST:PORT or ipc://PATH) with a\n"
	"catalogue of named cases (greeting, metadata, framing, commands, heartbeats,\n"
	"subscriptions, PLAIN, CURVE, resources). Each gets a verdict: pass, lenient\n"
	"(accepted what it should refuse, harmless), violation, crash (the peer\n"
	"stopped accepting connections), hang (no answer within the limit), degraded\n"
	"(a fresh well-behaved connection is no longer served), or skipped.\n"
	"\n"
	"options:\n";

/* The options, one row each: zl_args reads them and prints the help. */
enum probe_opt {
	PROBE_ARG_LISTEN,
	PROBE_ARG_TYPE,
	PROBE_ARG_MECHANISM,
	PROBE_ARG_USERNAME,
	PROBE_ARG_PASSWORD,
	PROBE_ARG_SERVER_KEY,
	PROBE_ARG_PUBLIC_KEY,
	PROBE_ARG_SECRET_KEY,
	PROBE_ARG_PEER_HS_IVL,
	PROBE_ARG_PEER_HB_TMO,
	PROBE_ARG_PID,
	PROBE_ARG_LIMIT,
	PROBE_ARG_CASE,
	PROBE_ARG_LIST,
	PROBE_ARG_JSON,
	PROBE_ARG_QUIET,
	PROBE_ARG_FUZZ,
	PROBE_ARG_SECONDS,
	PROBE_ARG_SEED,
	PROBE_ARG_OUT,
	PROBE_ARG_REPLAY,
	PROBE_ARG_SELF,
	PROBE_ARG_COUNT,
	PROBE_ARG_HELP,
};

static const struct zl_opt probe_opts[] = {
	{PROBE_ARG_LISTEN, "listen", 0, NULL,
         "bind ENDPOINT and let the peer under test connect in\n"
         "(with --mechanism plain or curve: the probe is the server);\n"
         "port 0 binds a free port: stderr says which"},
	{PROBE_ARG_TYPE, "type", 0, "TYPE",
         "the peer's socket type (default: read from its READY;\n"
         "needed with PLAIN and CURVE)"},
	{PROBE_ARG_MECHANISM, "mechanism", 0, "M", "null (default), plain or curve"},
	{PROBE_ARG_USERNAME, "username", 0, "U", "PLAIN: the user name the peer accepts"},
	{PROBE_ARG_PASSWORD, "password", 0, "P", "PLAIN: the password the peer accepts"},
	{PROBE_ARG_SERVER_KEY, "server-key", 0, "Z85", "CURVE: the peer's public key"},
	{PROBE_ARG_PUBLIC_KEY, "public-key", 0, "Z85",
         "CURVE: our public key (default: a new key pair)"},
	{PROBE_ARG_SECRET_KEY, "secret-key", 0, "Z85",
         "CURVE: our secret key; with --listen the server's\n"
         "(its public key is printed)"},
	{PROBE_ARG_PEER_HS_IVL, "peer-handshake-ivl", 0, "MS",
         "the peer's handshake timeout (enables the\n"
         "trickle, silent and slowloris cases)"},
	{PROBE_ARG_PEER_HS_IVL, "handshake-ivl", 0, "MS", NULL},
	{PROBE_ARG_PEER_HB_TMO, "peer-heartbeat-timeout", 0, "MS",
         "the peer's heartbeat timeout (enables\n"
         "heartbeat.silent-peer)"},
	{PROBE_ARG_PID, "pid", 0, "PID",
         "the peer's process: crash = gone, flood cases report and\n"
         "bound its memory (VmRSS from /proc); 0: unknown"},
	{PROBE_ARG_LIMIT, "limit", 0, "MS", "how long a case waits for an answer (default 1000)"},
	{PROBE_ARG_CASE, "case", 0, "PREFIX", "run only the cases whose name starts with PREFIX"},
	{PROBE_ARG_LIST, "list", 0, NULL, "print the catalogue and exit"},
	{PROBE_ARG_JSON, "json", 0, "FILE", "write the report as JSON too"},
	{PROBE_ARG_QUIET, "quiet", 0, NULL, "no table, only the summary line"},
	{PROBE_ARG_FUZZ, "fuzz", 0, NULL,
         "mutate valid conversations; every finding is written\n"
         "to DIR (--out) as probe-*.repro"},
	{PROBE_ARG_SECONDS, "seconds", 0, "N", "--fuzz: for N seconds (default 10)"},
	{PROBE_ARG_SEED, "seed", 0, "S", "--fuzz: from seed S (default: the time)"},
	{PROBE_ARG_OUT, "out", 0, "DIR", "--fuzz: where the findings go (default .)"},
	{PROBE_ARG_REPLAY, "replay", 0, "FILE", "play a reproducer back and judge it like a case"},
	{PROBE_ARG_SELF, "self", 0, NULL,
         "check our codec against a libzmq peer (pyzmq), byte\n"
         "for byte; also what `zring probe` alone does"},
	{PROBE_ARG_COUNT, "count", 0, "N", "--self: messages per check (default 1000)"},
	{PROBE_ARG_HELP, "help", 'h', NULL, "print this help"},
};

static const char probe_usage_tail[] =
	"\n"
	"exit status: 0 no violation, crash, hang or degradation; 1 some; 2 the peer\n"
	"could not be reached; 3 a bad command line.\n";

/* ---- the JSON report -------------------------------------------------------- */

static void
json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

struct result {
	int verdict;
	char obs[400];
	unsigned ms;
};

/* ---- the peer under test ------------------------------------------------------ */

static int
compatible_type(int peer)
{
	static const int pairs[][2] = {
		{ZR_PAIR, ZR_PAIR},       {ZR_PUB, ZR_SUB},        {ZR_SUB, ZR_PUB},
		{ZR_REQ, ZR_REP},         {ZR_REP, ZR_REQ},        {ZR_DEALER, ZR_DEALER},
		{ZR_ROUTER, ZR_DEALER},   {ZR_PULL, ZR_PUSH},      {ZR_PUSH, ZR_PULL},
		{ZR_XPUB, ZR_SUB},        {ZR_XSUB, ZR_PUB},       {ZR_SERVER, ZR_CLIENT},
		{ZR_CLIENT, ZR_SERVER},   {ZR_RADIO, ZR_DISH},     {ZR_DISH, ZR_RADIO},
		{ZR_GATHER, ZR_SCATTER},  {ZR_SCATTER, ZR_GATHER}, {ZR_PEER, ZR_PEER},
		{ZR_CHANNEL, ZR_CHANNEL},
	};
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		if (pairs[i][0] == peer)
			return pairs[i][1];
	return ZR_DEALER;
}

/*
 * With --listen: the endpoint the probe really listens on, on stderr
 * ("zring probe: listening on tcp://127.0.0.1:41234"), so that a script can
 * bind port 0 and learn the port. A port picked beforehand and bound later
 * can be taken in between by any connection's local port.
 */
static void
say_listening(const struct pr_ctx *c, const char *endpoint)
{
	struct sockaddr_storage a;
	socklen_t al = sizeof(a);
	char host[INET6_ADDRSTRLEN];

	if (getsockname(c->t.listen_fd, (struct sockaddr *)&a, &al) != 0 ||
	    (a.ss_family != AF_INET && a.ss_family != AF_INET6)) {
		fprintf(stderr, "zring probe: listening on %s\n", endpoint); /* ipc:// */
		return;
	}
	if (a.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&a;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		fprintf(stderr, "zring probe: listening on tcp://%s:%u\n", host,
		        (unsigned)ntohs(in->sin_port));
	} else {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&a;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		fprintf(stderr, "zring probe: listening on tcp://[%s]:%u\n", host,
		        (unsigned)ntohs(in6->sin6_port));
	}
}

/* Learns the peer's type (NULL: from its READY), ZMTP version and whether it
 * answers PING. Returns 0 or a negative code (unreachable). */
static int
learn_peer(struct pr_ctx *c, char *why, size_t cap)
{
	struct pr_opts *o = c->o;
	struct pr_conn k;
	int rc;

	if (o->peer_type < 0) {
		/* Its READY only: ours (of a type it may refuse) is never sent, so
		 * a connecting peer just sees an unfinished handshake and
		 * reconnects as usual. */
		static const uint8_t nothing[1];
		struct pr_hs hs = {.frame = nothing, .frame_len = 0};
		rc = pr_open(c, &k, o->listen ? 10000 : 2000);
		if (rc < 0) {
			snprintf(why, cap, "cannot connect: %s", strerror(-rc));
			return rc;
		}
		rc = pr_handshake(c, &k, &hs);
		if (k.peer_type < 0) {
			snprintf(why, cap, "no READY from the peer (%s)",
			         rc == -EPIPE ? "closed" : zr_strerror(rc));
			pr_close(&k);
			return rc < 0 ? rc : -EPROTO;
		}
		o->peer_type = k.peer_type;
		pr_close(&k);
		if (o->listen)
			zl_sleep_ms(50);
	}
	o->our_type = compatible_type(o->peer_type);
	rc = pr_open(c, &k, o->listen ? 10000 : 2000);
	if (rc < 0) {
		snprintf(why, cap, "cannot connect: %s", strerror(-rc));
		return rc;
	}
	rc = pr_handshake(c, &k, NULL);
	if (rc < 0) {
		snprintf(why, cap, "handshake as %s failed: %s%s%s", zr_socktype_name(o->our_type),
		         rc == -EPIPE ? "closed" : zr_strerror(rc), k.got_error ? ", ERROR " : "",
		         k.got_error ? k.peer_error : "");
		pr_close(&k);
		return rc;
	}
	c->peer_minor = k.peer_minor;
	if (k.peer_minor >= 1) {
		rc = pr_send_ping(&k, 0, "hello", 5);
		c->peer_pongs = rc == 0 && pr_pump(&k, o->limit_ms, true) == 1;
	}
	pr_close(&k);
	return 0;
}

static const char *
skip_reason(const struct pr_ctx *c, const struct pr_case *k)
{
	const struct pr_opts *o = c->o;

	if ((k->flags & PRF_NULL) && o->mechanism != ZR_MECH_NULL)
		return "skipped: NULL mechanism only";
	if ((k->flags & PRF_PLAIN) && o->mechanism != ZR_MECH_PLAIN)
		return "skipped: needs --mechanism plain";
	if ((k->flags & PRF_PLAIN) && o->listen)
		return "skipped: plays the PLAIN client (not with --listen)";
	if ((k->flags & PRF_PLAIN_SERVER) && (!o->listen || o->mechanism != ZR_MECH_PLAIN))
		return "skipped: needs --listen --mechanism plain";
	if ((k->flags & PRF_CURVE) && o->mechanism != ZR_MECH_CURVE)
		return "skipped: needs --mechanism curve";
	if ((k->flags & PRF_CURVE) && o->listen)
		return "skipped: plays the CURVE client (not with --listen)";
	if ((k->flags & PRF_CURVE_SERVER) && (!o->listen || o->mechanism != ZR_MECH_CURVE))
		return "skipped: needs --listen --mechanism curve";
	if ((k->flags & PRF_HSIVL) && o->peer_hs_ivl == 0)
		return "skipped: needs --peer-handshake-ivl";
	if ((k->flags & PRF_HBTMO) && o->peer_hb_tmo == 0)
		return "skipped: needs --peer-heartbeat-timeout";
	if ((k->flags & PRF_CONNECT) && o->listen)
		return "skipped: opens connections (not with --listen)";
	if ((k->flags & PRF_V31) && c->peer_minor < 1)
		return "skipped: the peer speaks ZMTP 3.0";
	return NULL;
}

static void
summary_counts(const struct result *r, size_t n, unsigned counts[PR_VERDICTS])
{
	memset(counts, 0, sizeof(unsigned) * PR_VERDICTS);
	for (size_t i = 0; i < n; i++)
		counts[r[i].verdict]++;
}

static void
print_summary(FILE *f, const unsigned n[PR_VERDICTS])
{
	fprintf(f,
	        "probe: %u pass, %u lenient, %u violations, %u crashes, %u hangs, %u degraded"
	        ", %u skipped\n",
	        n[PR_PASS], n[PR_LENIENT], n[PR_VIOLATION], n[PR_CRASH], n[PR_HANG], n[PR_DEGRADED],
	        n[PR_SKIP]);
}

static int
exit_status(const unsigned n[PR_VERDICTS])
{
	return n[PR_VIOLATION] + n[PR_CRASH] + n[PR_HANG] + n[PR_DEGRADED] > 0 ? ZL_PROBE_FINDINGS
	                                                                       : ZL_PROBE_OK;
}

static int
write_json(const struct pr_ctx *c, const char *path, const struct pr_case *const *cases,
           const struct result *r, size_t n, const unsigned counts[PR_VERDICTS])
{
	FILE *f = fopen(path, "w");

	if (f == NULL) {
		fprintf(stderr, "zring probe: %s: %s\n", path, strerror(errno));
		return -1;
	}
	fprintf(f, "{\n  \"endpoint\": ");
	json_str(f, c->o->endpoint);
	fprintf(f, ",\n  \"peer_type\": ");
	json_str(f, zr_socktype_name(c->o->peer_type));
	fprintf(f, ",\n  \"peer_minor\": %u,\n  \"peer_answers_ping\": %s,\n", c->peer_minor,
	        c->peer_pongs ? "true" : "false");
	fprintf(f, "  \"summary\": {");
	for (int v = 0; v < PR_VERDICTS; v++)
		fprintf(f, "%s\"%s\": %u", v ? ", " : "", pr_verdict_name(v), counts[v]);
	fprintf(f, "},\n  \"cases\": [\n");
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "    {\"name\": ");
		json_str(f, cases[i]->name);
		fprintf(f, ", \"group\": ");
		json_str(f, cases[i]->group);
		fprintf(f, ", \"rfc\": ");
		json_str(f, cases[i]->rfc);
		fprintf(f, ", \"expected\": ");
		json_str(f, cases[i]->expected);
		fprintf(f, ", \"verdict\": \"%s\", \"ms\": %u, \"observed\": ",
		        pr_verdict_name(r[i].verdict), r[i].ms);
		json_str(f, r[i].obs);
		fprintf(f, "}%s\n", i + 1 < n ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	return fclose(f) == 0 ? 0 : -1;
}

static int
run_catalogue(struct pr_ctx *c)
{
	const struct pr_opts *o = c->o;
	const struct pr_case **sel = calloc(pr_case_count, sizeof(*sel));
	struct result *res = calloc(pr_case_count, sizeof(*res));
	bool tty = isatty(2) && !o->quiet;
	const char *crashed = NULL;
	unsigned counts[PR_VERDICTS];
	size_t n = 0;

	if (sel == NULL || res == NULL) {
		free(sel);
		free(res);
		return ZL_PROBE_UNREACHABLE;
	}
	for (size_t i = 0; i < pr_case_count; i++)
		if (o->only == NULL || strncmp(pr_cases[i].name, o->only, strlen(o->only)) == 0)
			sel[n++] = &pr_cases[i];
	if (!o->quiet)
		printf("zring probe: %s, peer %s (ZMTP 3.%u, %s), %zu cases\n", o->endpoint,
		       zr_socktype_name(o->peer_type), c->peer_minor,
		       c->peer_pongs ? "answers PING" : "no PONG: liveness = handshake", n);
	for (size_t i = 0; i < n; i++) {
		const struct pr_case *k = sel[i];
		const char *skip = skip_reason(c, k);
		struct result *r = &res[i];
		uint64_t t0 = zl_now_ms();

		if (tty)
			fprintf(stderr, "\r\033[K[%zu/%zu] %s ...", i + 1, n, k->name);
		c->obs[0] = '\0';
		if (crashed != NULL) {
			r->verdict = PR_SKIP;
			snprintf(r->obs, sizeof(r->obs), "not run: the peer crashed at %s",
			         crashed);
			continue;
		}
		if (skip != NULL) {
			r->verdict = PR_SKIP;
			snprintf(r->obs, sizeof(r->obs), "%s", skip);
			continue;
		}
		r->verdict = k->fn(c, k);
		if (o->listen)
			zl_sleep_ms(20);
		char why[160];
		int live = (k->flags & PRF_NO_ORACLE) ? PR_PASS : pr_live(c, why, sizeof(why));
		if (live != PR_PASS && r->verdict != PR_CRASH) {
			r->verdict = live;
			pr_obs(c, "oracle: %s", why);
		} else if (r->verdict == PR_CRASH && live == PR_PASS) {
			/* The case could not connect but the oracle can: transient. */
			r->verdict = PR_DEGRADED;
		}
		if (r->verdict == PR_CRASH)
			crashed = k->name;
		r->ms = (unsigned)(zl_now_ms() - t0);
		snprintf(r->obs, sizeof(r->obs), "%s", c->obs);
	}
	if (tty)
		fprintf(stderr, "\r\033[K");
	if (!o->quiet) {
		const char *group = "";
		for (size_t i = 0; i < n; i++) {
			if (strcmp(group, sel[i]->group) != 0) {
				group = sel[i]->group;
				printf("\n%s\n", group);
			}
			printf("  %-30s %-9s %s\n", sel[i]->name, pr_verdict_name(res[i].verdict),
			       res[i].obs);
		}
		printf("\n");
	}
	summary_counts(res, n, counts);
	print_summary(stdout, counts);
	if (o->json != NULL)
		write_json(c, o->json, sel, res, n, counts);
	free(sel);
	free(res);
	return exit_status(counts);
}

/* ---- fuzzing ------------------------------------------------------------------- */

/* A valid conversation of our type, as the codec writes it. */
static size_t
conversation(const struct pr_ctx *c, uint64_t *s, struct pr_unit *u)
{
	const char *t = zr_socktype_name(c->o->our_type);
	size_t n = 0;
	uint8_t p[64];
	int pl;

	zr_zmtp_greeting_encode(u[n++].b, 1, ZR_MECH_NULL, false);
	u[0].len = ZR_ZMTP_GREETING_SIZE;
	pl = zr_zmtp_prop_encode(p, sizeof(p), "Socket-Type", (const uint8_t *)t, strlen(t));
	u[n].len = (size_t)zr_zmtp_cmd_encode(u[n].b, sizeof(u[n].b), "READY", p, (size_t)pl);
	n++;
	while (n < PR_UNITS - 4) {
		uint64_t r = pr_rnd(s) % 6;
		if (r < 3) {
			/* A message of one to three frames. */
			unsigned frames = 1 + (unsigned)(pr_rnd(s) % 3);
			for (unsigned f = 0; f < frames && n < PR_UNITS - 4; f++) {
				size_t len = (size_t)(pr_rnd(s) % 300);
				int h = zr_zmtp_frame_header(u[n].b, len,
				                             f + 1 < frames ? ZR_ZMTP_MORE : 0);
				memset(u[n].b + h, 'a' + (int)(pr_rnd(s) % 26), len);
				u[n++].len = (size_t)h + len;
			}
		} else if (r == 3) {
			uint8_t d[18] = {0, (uint8_t)(pr_rnd(s) % 100)};
			/* The largest valid context is the interesting one. */
			size_t cl = pr_rnd(s) % 3 == 0 ? 16 : (size_t)(pr_rnd(s) % 17);
			u[n].len = (size_t)zr_zmtp_cmd_encode(u[n].b, sizeof(u[n].b), "PING", d,
			                                      2 + cl);
			n++;
		} else if (r == 4) {
			u[n].len = (size_t)zr_zmtp_cmd_encode(
				u[n].b, sizeof(u[n].b), pr_rnd(s) & 1 ? "SUBSCRIBE" : "CANCEL",
				(const uint8_t *)"topic", pr_rnd(s) % 6);
			n++;
		} else {
			u[n].len =
				(size_t)zr_zmtp_cmd_encode(u[n].b, sizeof(u[n].b), "PONG", NULL, 0);
			n++;
		}
	}
	return n;
}

struct step {
	size_t off, len;
	unsigned sleep_ms;
};

static int
write_repro(const char *dir, uint64_t seed, unsigned iter, int verdict, const char *why,
            const uint8_t *b, const struct step *st, size_t nst, char *path, size_t cap)
{
	FILE *f;

	snprintf(path, cap, "%s/probe-%llu-%u.repro", dir, (unsigned long long)seed, iter);
	f = fopen(path, "w");
	if (f == NULL)
		return -errno;
	fprintf(f, "# zring probe reproducer: zring probe --replay %s ENDPOINT\n", path);
	fprintf(f, "# seed %llu iteration %u: %s (%s)\n", (unsigned long long)seed, iter,
	        pr_verdict_name(verdict), why);
	for (size_t i = 0; i < nst; i++) {
		if (st[i].sleep_ms > 0)
			fprintf(f, "sleep %u\n", st[i].sleep_ms);
		fprintf(f, "write ");
		for (size_t k = 0; k < st[i].len; k++)
			fprintf(f, "%02x", b[st[i].off + k]);
		fprintf(f, "\n");
	}
	return fclose(f) == 0 ? 0 : -EIO;
}

/* Plays steps on a fresh connection and waits a little for the peer's reaction. */
static int
play(struct pr_ctx *c, const uint8_t *b, const struct step *st, size_t nst)
{
	struct pr_conn k;
	int rc = pr_open(c, &k, c->o->limit_ms);

	if (rc < 0)
		return rc;
	for (size_t i = 0; i < nst && !k.closed; i++) {
		if (st[i].sleep_ms > 0)
			zl_sleep_ms(st[i].sleep_ms);
		if (pr_write(&k, b + st[i].off, st[i].len, c->o->limit_ms) < 0)
			break;
		pr_read(&k, 0);
		k.in_len = 0;
	}
	pr_fuzz_close(&k);
	return 0;
}

static int
run_fuzz(struct pr_ctx *c)
{
	const struct pr_opts *o = c->o;
	uint64_t seed = o->seed, s = seed;
	uint64_t end = zl_now_ms() + (uint64_t)o->seconds * 1000u;
	unsigned iter = 0, findings = 0;
	struct pr_unit *u = calloc(PR_UNITS + 1, sizeof(*u));
	uint8_t *b = malloc((PR_UNITS + 1) * sizeof(u->b));
	struct step *st = calloc(PR_UNITS * sizeof(u->b), sizeof(*st));

	/* NULL only: PLAIN and CURVE conversations are pr_fuzz_mech's. */
	if (u == NULL || b == NULL || st == NULL) {
		free(u);
		free(b);
		free(st);
		return ZL_PROBE_UNREACHABLE;
	}
	printf("zring probe --fuzz: %s, peer %s, seed %llu, %u s\n", o->endpoint,
	       zr_socktype_name(o->peer_type), (unsigned long long)seed, o->seconds);
	while (zl_now_ms() < end) {
		size_t n = conversation(c, &s, u), len = 0, nst = 0;
		char why[160], path[512];
		int v;

		pr_mutate(&s, PR_FUZZ_NULL, u, &n);
		/* Lay the units out, cut into writes at unit boundaries or, now
		 * and then, inside one. */
		for (size_t i = 0; i < n; i++) {
			size_t off = 0;
			while (off < u[i].len) {
				size_t piece = pr_fuzz_piece(&s, u[i].len - off, &st[nst].sleep_ms);
				memcpy(b + len, u[i].b + off, piece);
				st[nst].off = len;
				st[nst].len = piece;
				nst++;
				len += piece;
				off += piece;
			}
		}
		iter++;
		if (play(c, b, st, nst) < 0) {
			v = PR_CRASH;
			snprintf(why, sizeof(why), "the fuzz connection could not be opened");
		} else {
			v = pr_live(c, why, sizeof(why));
		}
		if (isatty(2))
			fprintf(stderr, "\r\033[Kfuzz: %u conversations, %u findings", iter,
			        findings);
		if (v == PR_PASS)
			continue;
		findings++;
		int rc =
			write_repro(o->out_dir, seed, iter, v, why, b, st, nst, path, sizeof(path));
		printf("finding: iteration %u: %s (%s): %s\n", iter, pr_verdict_name(v), why,
		       rc == 0 ? path : strerror(-rc));
		if (v == PR_CRASH)
			break;
		/* Let a degraded peer recover before the next attempt. */
		zl_sleep_ms(500);
	}
	if (isatty(2))
		fprintf(stderr, "\r\033[K");
	printf("fuzz: %u conversations, %u findings (seed %llu)\n", iter, findings,
	       (unsigned long long)seed);
	free(u);
	free(b);
	free(st);
	return findings > 0 ? ZL_PROBE_FINDINGS : ZL_PROBE_OK;
}

static int
run_replay(struct pr_ctx *c)
{
	FILE *f = fopen(c->o->replay, "r");
	size_t cap = 1u << 20, len = 0, nst = 0, stcap = 256;
	uint8_t *b = malloc(cap);
	struct step *st = malloc(stcap * sizeof(*st));
	unsigned sleep_next = 0;
	char *line = NULL, why[160];
	size_t lcap = 0;
	int v, rc = 0;

	if (f == NULL || b == NULL || st == NULL) {
		fprintf(stderr, "zring probe: %s: %s\n", c->o->replay, strerror(errno));
		if (f != NULL)
			fclose(f);
		free(b);
		free(st);
		return ZL_PROBE_USAGE;
	}
	while (getline(&line, &lcap, f) > 0) {
		if (strncmp(line, "sleep ", 6) == 0) {
			sleep_next = (unsigned)strtoul(line + 6, NULL, 10);
		} else if (strncmp(line, "write ", 6) == 0) {
			const char *p = line + 6;
			if (nst == stcap) {
				struct step *q = realloc(st, 2 * stcap * sizeof(*st));
				if (q == NULL) {
					rc = -ENOMEM;
					break;
				}
				st = q;
				stcap *= 2;
			}
			st[nst].off = len;
			st[nst].sleep_ms = sleep_next;
			sleep_next = 0;
			while (pr_hexval(p[0]) >= 0 && pr_hexval(p[1]) >= 0 && len < cap) {
				b[len++] = (uint8_t)(pr_hexval(p[0]) << 4 | pr_hexval(p[1]));
				p += 2;
			}
			st[nst].len = len - st[nst].off;
			nst++;
		} else if (line[0] != '#' && line[0] != '\n') {
			rc = -EINVAL;
			break;
		}
	}
	free(line);
	fclose(f);
	if (rc < 0) {
		fprintf(stderr,
		        "zring probe: %s: not a reproducer (lines: write HEX, sleep MS, # ...)\n",
		        c->o->replay);
		free(b);
		free(st);
		return ZL_PROBE_USAGE;
	}
	printf("zring probe --replay %s: %zu octets in %zu writes to %s\n", c->o->replay, len, nst,
	       c->o->endpoint);
	if (play(c, b, st, nst) < 0) {
		v = PR_CRASH;
		snprintf(why, sizeof(why), "the connection could not be opened");
	} else {
		v = pr_live(c, why, sizeof(why));
	}
	free(b);
	free(st);
	printf("replay: %s%s%s\n", pr_verdict_name(v), v == PR_PASS ? "" : ": ", why);
	return v == PR_PASS ? ZL_PROBE_OK : ZL_PROBE_FINDINGS;
}

/* ---- the command line ----------------------------------------------------------- */

static void
probe_usage(FILE *f)
{
	fputs(probe_usage_head, f);
	zl_args_help(f, ZL_OPTS(probe_opts));
	fputs(probe_usage_tail, f);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* What is wrong, then the usage, on stderr. Returns ZL_PROBE_USAGE. */
static int
usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	zl_verror("zring probe: ", "\n\n", fmt, ap);
	va_end(ap);
	probe_usage(stderr);
	return ZL_PROBE_USAGE;
}

#define USAGE_ERROR(...) usage_error(__VA_ARGS__)

static int
parse_key(const char *opt, const char *z85, uint8_t key[ZR_CURVE_KEY_LEN])
{
	if (zr_curve_key_decode(key, z85) < 0) {
		fprintf(stderr, "zring probe: %s wants 40 Z85 characters\n", opt);
		return -1;
	}
	return 0;
}

static void
print_list(void)
{
	for (size_t i = 0; i < pr_case_count; i++)
		printf("%-30s %-14s %-28s %s\n", pr_cases[i].name, pr_cases[i].group,
		       pr_cases[i].rfc, pr_cases[i].expected);
	printf("%zu cases\n", pr_case_count);
}

int
zl_probe_main(int argc, char **argv)
{
	struct pr_opts o = {.peer_type = -1, .limit_ms = 1000, .seconds = 10, .out_dir = "."};
	struct pr_ctx c = {.o = &o};
	bool self = false, have_secret = false;
	const char *count = NULL, *val;
	struct zl_args args;
	char why[256];
	long long v;
	int id;

	if (argc == 0)
		return zl_probe_self(0, argv);
	zl_args_init(&args, ZL_OPTS(probe_opts), argc, argv);
	while ((id = zl_args_next(&args, &val)) != ZL_ARG_END) {
		const char *a = args.option; /* as spelled, for the messages */

		switch (id) {
		case PROBE_ARG_SELF:
			self = true;
			break;
		case PROBE_ARG_COUNT:
			/* --count belongs to --self, which reads it. */
			self = true;
			count = val;
			break;
		case PROBE_ARG_LISTEN:
			o.listen = true;
			break;
		case PROBE_ARG_TYPE:
			o.peer_type = zr_socktype_parse((const uint8_t *)val, strlen(val));
			if (o.peer_type < 0)
				return USAGE_ERROR("unknown socket type '%s'", val);
			break;
		case PROBE_ARG_MECHANISM:
			if (strcmp(val, "null") == 0)
				o.mechanism = ZR_MECH_NULL;
			else if (strcmp(val, "plain") == 0)
				o.mechanism = ZR_MECH_PLAIN;
			else if (strcmp(val, "curve") == 0)
				o.mechanism = ZR_MECH_CURVE;
			else
				return USAGE_ERROR("unknown mechanism '%s' (null, plain, curve)",
				                   val);
			break;
		case PROBE_ARG_USERNAME:
			o.username = val;
			break;
		case PROBE_ARG_PASSWORD:
			o.password = val;
			break;
		case PROBE_ARG_SERVER_KEY:
			if (parse_key(a, val, o.server_key) < 0)
				return ZL_PROBE_USAGE;
			o.have_server_key = true;
			break;
		case PROBE_ARG_PUBLIC_KEY:
			if (parse_key(a, val, o.public_key) < 0)
				return ZL_PROBE_USAGE;
			break;
		case PROBE_ARG_SECRET_KEY:
			if (parse_key(a, val, o.secret_key) < 0)
				return ZL_PROBE_USAGE;
			have_secret = true;
			break;
		case PROBE_ARG_PEER_HS_IVL:
			if (!zl_parse_int(val, 1, 600000, &v))
				return USAGE_ERROR("%s wants milliseconds (1..600000)", a);
			o.peer_hs_ivl = (uint32_t)v;
			break;
		case PROBE_ARG_PEER_HB_TMO:
			if (!zl_parse_int(val, 1, 600000, &v))
				return USAGE_ERROR("%s wants milliseconds (1..600000)", a);
			o.peer_hb_tmo = (uint32_t)v;
			break;
		case PROBE_ARG_PID:
			if (!zl_parse_int(val, 0, 1 << 30, &v))
				return USAGE_ERROR("--pid wants a process id, not '%s'", val);
			o.pid = (pid_t)v;
			break;
		case PROBE_ARG_LIMIT:
			if (!zl_parse_int(val, 10, 600000, &v))
				return USAGE_ERROR(
					"--limit wants milliseconds (10..600000), not '%s'", val);
			o.limit_ms = (uint32_t)v;
			break;
		case PROBE_ARG_CASE:
			o.only = val;
			break;
		case PROBE_ARG_JSON:
			o.json = val;
			break;
		case PROBE_ARG_LIST:
			o.list = true;
			break;
		case PROBE_ARG_QUIET:
			o.quiet = true;
			break;
		case PROBE_ARG_FUZZ:
			o.fuzz = true;
			break;
		case PROBE_ARG_SECONDS:
			if (!zl_parse_int(val, 1, 86400, &v))
				return USAGE_ERROR("--seconds wants 1..86400, not '%s'", val);
			o.seconds = (unsigned)v;
			break;
		case PROBE_ARG_SEED:
			if (!zl_parse_int(val, 0, INT64_MAX, &v))
				return USAGE_ERROR("--seed wants a number, not '%s'", val);
			o.seed = (uint64_t)v;
			break;
		case PROBE_ARG_OUT:
			o.out_dir = val;
			break;
		case PROBE_ARG_REPLAY:
			o.replay = val;
			break;
		case PROBE_ARG_HELP:
			probe_usage(stdout);
			return ZL_PROBE_OK;
		case ZL_ARG_ERROR:
			return USAGE_ERROR("%s", args.error);
		default: /* the operand */
			if (o.endpoint != NULL)
				return USAGE_ERROR("one endpoint only ('%s')", val);
			o.endpoint = val;
			break;
		}
	}
	if (self) {
		char *self_argv[] = {(char *)"--count", (char *)count, NULL};
		return zl_probe_self(count != NULL ? 2 : 0, self_argv);
	}
	if (o.list) {
		print_list();
		return ZL_PROBE_OK;
	}
	if (o.endpoint == NULL)
		return USAGE_ERROR("%s", "no ENDPOINT");
	if (o.mechanism != ZR_MECH_NULL && o.peer_type < 0)
		return USAGE_ERROR("%s",
		                   "--mechanism plain/curve needs --type (the peer's socket type)");
	if (o.mechanism == ZR_MECH_PLAIN && (o.username == NULL || o.password == NULL))
		return USAGE_ERROR("%s", "--mechanism plain needs --username and --password");
	if (o.mechanism == ZR_MECH_CURVE) {
		if (!o.have_server_key && !o.listen)
			return USAGE_ERROR("%s", "--mechanism curve needs --server-key");
		if (sodium_init() < 0)
			return ZL_PROBE_UNREACHABLE;
		if (!have_secret)
			crypto_box_keypair(o.public_key, o.secret_key);
		else
			crypto_scalarmult_base(o.public_key, o.secret_key);
		if (o.listen) {
			/* The client under test is configured with this key. */
			char z85[ZR_CURVE_KEY_Z85_LEN + 1];
			zr_curve_key_encode(z85, o.public_key);
			fprintf(stderr, "zring probe: CURVE server public key %s\n", z85);
		}
	}
	if (o.seed == 0)
		o.seed = (uint64_t)time(NULL);
	signal(SIGPIPE, SIG_IGN);

	int rc = pr_target_init(&c, o.endpoint);
	if (rc < 0) {
		fprintf(stderr, "zring probe: %s: %s\n", o.endpoint,
		        rc == -EINVAL ? "not a tcp:// or ipc:// endpoint" : strerror(-rc));
		return rc == -EINVAL ? ZL_PROBE_USAGE : ZL_PROBE_UNREACHABLE;
	}
	if (o.listen)
		say_listening(&c, o.endpoint);
	rc = learn_peer(&c, why, sizeof(why));
	if (rc < 0) {
		printf("probe: cannot reach the peer at %s: %s\n", o.endpoint, why);
		rc = ZL_PROBE_UNREACHABLE;
	} else if (o.replay != NULL) {
		rc = o.mechanism != ZR_MECH_NULL ? pr_replay_mech(&c) : run_replay(&c);
	} else if (o.fuzz) {
		rc = o.mechanism != ZR_MECH_NULL ? pr_fuzz_mech(&c) : run_fuzz(&c);
	} else {
		rc = run_catalogue(&c);
	}
	if (c.t.listen_fd >= 0)
		close(c.t.listen_fd);
	return rc;
}
