/*
 * zring probe — --fuzz and --replay under PLAIN and CURVE.
 *
 * Every conversation first completes the run's handshake on a fresh
 * connection (PLAIN through the codec; CURVE by hand, so that the probe
 * holds the session keys), then writes mutated traffic. Under PLAIN the
 * units are clear frames, mutated as the NULL fuzzer does. Under CURVE a
 * unit is the plaintext of a MESSAGE (a flags octet, then a frame body): it
 * is mutated as plaintext and boxed again with the right next nonce, so the
 * peer's parser behind the box gets the damage; and now and then the box
 * itself is damaged instead: the nonce replayed, moved back or far ahead,
 * zero or the largest; a bit flipped; the box cut short; the plaintext sent
 * in the clear; a command frame for libzmq's data frame.
 *
 * The oracle after each conversation is the catalogue's (pr_live). Findings
 * are written as reproducers that --replay plays back, with the same
 * --mechanism and credentials or keys. Their lines:
 *   handshake                   the run's handshake (a fresh connection)
 *   sleep MS
 *   write HEX                   octets as they are
 *   box NONCE HEX [flip BIT] [cut N] [command]
 *                               CURVE: HEX is a MESSAGE plaintext, boxed with
 *                               short nonce NONCE; flip BIT flips that bit of
 *                               the MESSAGE body after boxing, cut N drops its
 *                               last N octets (the size field stays true),
 *                               command sends it in a command frame
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include <zring/error.h>

#include "../zl_probe.h"
#include "pr_mutate.h"
#include "probe.h"

enum {
	ST_HANDSHAKE,
	ST_WRITE,
	ST_BOX,
};

struct step {
	int kind;
	size_t off, len; /* the octets (write) or the plaintext (box) in the data */
	unsigned sleep_ms;
	uint64_t nonce;
	long flip; /* a bit of the MESSAGE body, or -1 */
	size_t cut;
	bool command;
};

/* A conversation being built: the data and its steps. */
struct conv {
	uint8_t *data;
	size_t len, cap;
	struct step *st;
	size_t n, stcap;
};

static int
conv_add(struct conv *v, int kind, const uint8_t *p, size_t len)
{
	if (v->n == v->stcap) {
		size_t cap = v->stcap ? 2 * v->stcap : 64;
		struct step *q = realloc(v->st, cap * sizeof(*q));
		if (q == NULL)
			return -ENOMEM;
		v->st = q;
		v->stcap = cap;
	}
	if (v->len + len > v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 1u << 14;
		while (cap < v->len + len)
			cap *= 2;
		uint8_t *q = realloc(v->data, cap);
		if (q == NULL)
			return -ENOMEM;
		v->data = q;
		v->cap = cap;
	}
	struct step *s = &v->st[v->n++];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->off = v->len;
	s->len = len;
	s->flip = -1;
	if (len > 0)
		memcpy(v->data + v->len, p, len);
	v->len += len;
	return 0;
}

/* ---- conversations ---------------------------------------------------------------- */

/* A frame body for unit i: a message part, a PING, SUBSCRIBE/CANCEL or PONG.
 * Returns the body length; *flags gets ZR_ZMTP_MORE / ZR_ZMTP_COMMAND. */
static size_t
gen_body(uint64_t *s, uint8_t *b, size_t cap, unsigned *flags, bool *more_left)
{
	uint64_t r = pr_rnd(s) % 6;
	int n;

	if (*more_left || r < 3) {
		size_t len = (size_t)(pr_rnd(s) % 40);
		for (size_t k = 0; k < len; k++)
			b[k] = (uint8_t)('a' + pr_rnd(s) % 26);
		*more_left = !*more_left ? pr_rnd(s) % 3 == 0 : pr_rnd(s) % 2 == 0;
		*flags = *more_left ? ZR_ZMTP_MORE : 0;
		return len;
	}
	*flags = ZR_ZMTP_COMMAND;
	if (r == 3) {
		uint8_t d[18] = {0, (uint8_t)(pr_rnd(s) % 100)};
		size_t cl = pr_rnd(s) % 3 == 0 ? 16 : (size_t)(pr_rnd(s) % 17);
		for (size_t k = 0; k < cl; k++)
			d[2 + k] = (uint8_t)pr_rnd(s);
		n = zr_zmtp_cmd_encode(b, cap, "PING", d, 2 + cl);
	} else if (r == 4) {
		n = zr_zmtp_cmd_encode(b, cap, pr_rnd(s) & 1 ? "SUBSCRIBE" : "CANCEL",
		                       (const uint8_t *)"topic", (size_t)(pr_rnd(s) % 6));
	} else {
		n = zr_zmtp_cmd_encode(b, cap, "PONG", NULL, 0);
	}
	if (n < 2)
		return 0;
	/* cmd_encode wrote a whole frame: keep its body. */
	size_t h = (b[0] & ZR_ZMTP_LONG) ? 9 : 2;
	memmove(b, b + h, (size_t)n - h);
	return (size_t)n - h;
}

static size_t
conversation(uint64_t *s, bool curve, struct pr_unit *u)
{
	size_t n = 1 + (size_t)(pr_rnd(s) % 8);
	bool more = false;

	for (size_t i = 0; i < n; i++) {
		uint8_t body[300];
		unsigned flags;
		size_t bl = gen_body(s, body, sizeof(body), &flags, &more);

		memset(&u[i], 0, sizeof(u[i]));
		u[i].flip = -1;
		if (curve) {
			u[i].b[0] = (uint8_t)(((flags & ZR_ZMTP_MORE) ? 0x01 : 0) |
			                      ((flags & ZR_ZMTP_COMMAND) ? 0x02 : 0));
			memcpy(u[i].b + 1, body, bl);
			u[i].len = 1 + bl;
		} else {
			int h = zr_zmtp_frame_header(u[i].b, bl, flags);
			memcpy(u[i].b + h, body, bl);
			u[i].len = (size_t)h + bl;
		}
	}
	/* The last message must end. */
	if (more)
		u[n - 1].b[0] &= (uint8_t) ~(curve ? 0x01u : ZR_ZMTP_MORE);
	return n;
}

/* Lays units out as steps after a handshake step. Nonces are resolved here,
 * so the reproducer holds the values the peer saw. */
static int
layout(uint64_t *s, bool curve, uint64_t first_nonce, const struct pr_unit *u, size_t n,
       struct conv *v)
{
	uint64_t next = first_nonce, last = first_nonce > 0 ? first_nonce - 1 : 0;
	int rc = conv_add(v, ST_HANDSHAKE, NULL, 0);

	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct pr_unit *x = &u[i];
		if (!curve || x->clear) {
			uint8_t f[PR_UNIT_MAX + 9];
			const uint8_t *p = x->b;
			size_t len = x->len;
			if (curve) {
				/* The plaintext as a clear frame of the same flags. */
				unsigned fl = ((x->b[0] & 0x01) ? ZR_ZMTP_MORE : 0) |
				              ((x->b[0] & 0x02) ? ZR_ZMTP_COMMAND : 0);
				int h = zr_zmtp_frame_header(f, x->len - 1, fl);
				memcpy(f + h, x->b + 1, x->len - 1);
				p = f;
				len = (size_t)h + x->len - 1;
			}
			/* Now and then a cut inside a unit. */
			size_t off = 0;
			while (rc == 0 && off < len) {
				unsigned sleep_ms;
				size_t piece = pr_fuzz_piece(s, len - off, &sleep_ms);
				rc = conv_add(v, ST_WRITE, p + off, piece);
				if (rc == 0)
					v->st[v->n - 1].sleep_ms = sleep_ms;
				off += piece;
			}
			continue;
		}
		uint64_t nonce;
		switch (x->nonce_how) {
		case 1: /* the last one again */
			nonce = last;
			break;
		case 2: /* behind the last */
			nonce = last > 0 ? last - 1 : 0;
			break;
		case 3: /* far ahead: later ones follow it */
			nonce = next + 1000;
			next = nonce + 1;
			break;
		case 4:
			nonce = 0;
			break;
		case 5:
			nonce = UINT64_MAX;
			break;
		default:
			nonce = next++;
			break;
		}
		if (nonce > last || x->nonce_how == 0)
			last = nonce;
		rc = conv_add(v, ST_BOX, x->b, x->len);
		if (rc == 0) {
			struct step *st = &v->st[v->n - 1];
			st->nonce = nonce;
			st->flip = x->flip;
			st->cut = x->cut;
			st->command = x->command;
		}
	}
	return rc;
}

/* ---- playing ---------------------------------------------------------------------- */

static int
play_box(struct pr_conn *k, const struct pr_cv *cv, const struct step *st, const uint8_t *plain)
{
	size_t cap = 16 + crypto_box_MACBYTES + st->len;
	uint8_t *body = malloc(cap + ZR_ZMTP_HEADER_MAX);
	int bl, hl, rc;

	if (body == NULL)
		return -ENOMEM;
	bl = pr_cv_message(cv, st->nonce, plain, st->len, body + ZR_ZMTP_HEADER_MAX, cap);
	if (bl < 0) {
		free(body);
		return bl;
	}
	uint8_t *b = body + ZR_ZMTP_HEADER_MAX;
	size_t len = (size_t)bl;
	len = st->cut < len ? len - st->cut : 0;
	if (st->flip >= 0 && (size_t)st->flip / 8 < len)
		b[st->flip / 8] ^= (uint8_t)(1u << (st->flip % 8));
	uint8_t h[ZR_ZMTP_HEADER_MAX];
	hl = zr_zmtp_frame_header(h, len, st->command ? ZR_ZMTP_COMMAND : 0);
	memcpy(b - hl, h, (size_t)hl);
	rc = pr_write(k, b - hl, (size_t)hl + len, 2000);
	free(body);
	return rc;
}

void
pr_fuzz_close(struct pr_conn *k)
{
	/* Long enough for the peer to act on what it got (the oracle that
	 * follows catches what takes longer). */
	uint64_t end = zl_now_ms() + 20;

	while (!k->closed && zl_now_ms() < end)
		if (pr_read(k, 20) > 0)
			k->in_len = 0;
	pr_close(k);
}

/* Plays a conversation on a fresh connection. When no connection or no
 * handshake could be had, why says so (the oracle then tells what became of
 * the peer). */
static bool
play(struct pr_ctx *c, const struct conv *v, char *why, size_t cap)
{
	const struct pr_opts *o = c->o;
	struct pr_conn k;
	struct pr_cv cv;
	bool opened = false, shook = false;
	int rc = 0;

	memset(&cv, 0, sizeof(cv));
	for (size_t i = 0; i < v->n; i++) {
		const struct step *st = &v->st[i];
		if (st->sleep_ms > 0)
			zl_sleep_ms(st->sleep_ms);
		if (!opened) {
			if (st->kind == ST_HANDSHAKE && o->mechanism == ZR_MECH_CURVE) {
				rc = pr_cv_handshake(c, &k, &cv);
			} else {
				rc = pr_open(c, &k, o->listen ? 10000 : o->limit_ms);
				if (rc == 0 && st->kind == ST_HANDSHAKE)
					rc = pr_handshake(c, &k, NULL);
			}
			opened = k.fd >= 0;
			if (rc < 0) {
				snprintf(why, cap, "the conversation's handshake failed (%s)",
				         rc == -EPIPE ? "closed" : zr_strerror(rc));
				break;
			}
			shook = st->kind == ST_HANDSHAKE;
			if (shook)
				continue;
		}
		if (st->kind == ST_WRITE)
			rc = pr_write(&k, v->data + st->off, st->len, o->limit_ms);
		else if (st->kind == ST_BOX && o->mechanism == ZR_MECH_CURVE)
			rc = play_box(&k, &cv, st, v->data + st->off);
		if (rc < 0 || k.closed)
			break;
		pr_read(&k, 0);
		k.in_len = 0;
	}
	sodium_memzero(&cv, sizeof(cv));
	if (opened)
		pr_fuzz_close(&k);
	return shook;
}

static int
write_repro(const struct pr_ctx *c, const char *path, unsigned iter, int verdict, const char *why,
            const struct conv *v)
{
	const struct pr_opts *o = c->o;
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return -errno;
	fprintf(f,
	        "# zring probe reproducer: zring probe --mechanism %s%s ... --replay %s ENDPOINT\n",
	        o->mechanism == ZR_MECH_CURVE ? "curve" : "plain", o->listen ? " --listen" : "",
	        path);
	fprintf(f, "# seed %" PRIu64 " iteration %u: %s (%s)\n", o->seed, iter,
	        pr_verdict_name(verdict), why);
	for (size_t i = 0; i < v->n; i++) {
		const struct step *st = &v->st[i];
		if (st->sleep_ms > 0)
			fprintf(f, "sleep %u\n", st->sleep_ms);
		if (st->kind == ST_HANDSHAKE) {
			fprintf(f, "handshake\n");
			continue;
		}
		if (st->kind == ST_BOX)
			fprintf(f, "box %" PRIu64 " ", st->nonce);
		else
			fprintf(f, "write ");
		for (size_t k = 0; k < st->len; k++)
			fprintf(f, "%02x", v->data[st->off + k]);
		if (st->kind == ST_BOX) {
			if (st->flip >= 0)
				fprintf(f, " flip %ld", st->flip);
			if (st->cut > 0)
				fprintf(f, " cut %zu", st->cut);
			if (st->command)
				fprintf(f, " command");
		}
		fprintf(f, "\n");
	}
	return fclose(f) == 0 ? 0 : -EIO;
}

int
pr_fuzz_mech(struct pr_ctx *c)
{
	const struct pr_opts *o = c->o;
	bool curve = o->mechanism == ZR_MECH_CURVE;
	uint64_t s = o->seed, end = zl_now_ms() + (uint64_t)o->seconds * 1000u;
	/* CURVE: HELLO took nonce 1, INITIATE 2 (client); READY 1 (server). */
	uint64_t first = o->listen ? 2 : 3;
	struct pr_unit *u = calloc(PR_UNITS + 1, sizeof(*u));
	struct conv v = {0};
	unsigned iter = 0, findings = 0, shook = 0;

	if (u == NULL)
		return ZL_PROBE_UNREACHABLE;
	printf("zring probe --fuzz: %s, peer %s, %s, seed %" PRIu64 ", %u s\n", o->endpoint,
	       zr_socktype_name(o->peer_type), curve ? "CURVE" : "PLAIN", o->seed, o->seconds);
	while (zl_now_ms() < end) {
		size_t n = conversation(&s, curve, u);
		char why[200] = "", path[512];
		int vd;

		pr_mutate(&s, curve ? PR_FUZZ_CURVE : PR_FUZZ_PLAIN, u, &n);
		v.len = 0;
		v.n = 0;
		if (layout(&s, curve, first, u, n, &v) < 0)
			break;
		iter++;
		shook += play(c, &v, why, sizeof(why));
		char live[160];
		vd = pr_live(c, live, sizeof(live));
		if (isatty(2))
			fprintf(stderr, "\r\033[Kfuzz: %u conversations, %u findings", iter,
			        findings);
		if (vd == PR_PASS)
			continue;
		findings++;
		snprintf(path, sizeof(path), "%s/probe-%" PRIu64 "-%u.repro", o->out_dir, o->seed,
		         iter);
		int rc = write_repro(c, path, iter, vd, live, &v);
		printf("finding: iteration %u: %s (%s): %s\n", iter, pr_verdict_name(vd), live,
		       rc == 0 ? path : strerror(-rc));
		if (vd == PR_CRASH)
			break;
		zl_sleep_ms(500);
	}
	if (isatty(2))
		fprintf(stderr, "\r\033[K");
	/* How many got past the handshake: a fuzzer that never did tested
	 * nothing behind it. */
	printf("fuzz: %u conversations (%u after a completed handshake), %u findings (seed %" PRIu64
	       ")\n",
	       iter, shook, findings, o->seed);
	free(u);
	free(v.data);
	free(v.st);
	return findings > 0 ? ZL_PROBE_FINDINGS : ZL_PROBE_OK;
}

/* Appends the hex at p to v as one step of kind; *end gets what follows. */
static int
add_hex(struct conv *v, int kind, const char *p, const char **end)
{
	size_t len = 0;
	uint8_t *b;
	int rc;

	while (pr_hexval(p[2 * len]) >= 0 && pr_hexval(p[2 * len + 1]) >= 0)
		len++;
	b = malloc(len + 1);
	if (b == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(pr_hexval(p[2 * i]) << 4 | pr_hexval(p[2 * i + 1]));
	rc = conv_add(v, kind, b, len);
	free(b);
	*end = p + 2 * len;
	return rc;
}

static int
parse_line(struct conv *v, const char *line, unsigned *sleep_next, bool curve)
{
	const char *p;
	int rc;

	if (line[0] == '#' || line[0] == '\n' || line[0] == '\0')
		return 0;
	if (strncmp(line, "sleep ", 6) == 0) {
		*sleep_next = (unsigned)strtoul(line + 6, NULL, 10);
		return 0;
	}
	if (strncmp(line, "handshake", 9) == 0) {
		rc = conv_add(v, ST_HANDSHAKE, NULL, 0);
	} else if (strncmp(line, "write ", 6) == 0) {
		rc = add_hex(v, ST_WRITE, line + 6, &p);
	} else if (strncmp(line, "box ", 4) == 0 && curve) {
		char *q;
		uint64_t nonce = strtoull(line + 4, &q, 10);
		if (*q != ' ')
			return -EINVAL;
		rc = add_hex(v, ST_BOX, q + 1, &p);
		if (rc < 0)
			return rc;
		struct step *st = &v->st[v->n - 1];
		st->nonce = nonce;
		for (;;) {
			while (*p == ' ')
				p++;
			if (strncmp(p, "flip ", 5) == 0) {
				st->flip = strtol(p + 5, &q, 10);
				p = q;
			} else if (strncmp(p, "cut ", 4) == 0) {
				st->cut = (size_t)strtoul(p + 4, &q, 10);
				p = q;
			} else if (strncmp(p, "command", 7) == 0) {
				st->command = true;
				p += 7;
			} else {
				break;
			}
		}
		if (*p != '\n' && *p != '\0')
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (rc == 0) {
		v->st[v->n - 1].sleep_ms = *sleep_next;
		*sleep_next = 0;
	}
	return rc;
}

int
pr_replay_mech(struct pr_ctx *c)
{
	const struct pr_opts *o = c->o;
	FILE *f = fopen(o->replay, "r");
	struct conv v = {0};
	char *line = NULL, why[200] = "", live[160];
	size_t lcap = 0;
	unsigned sleep_next = 0, lineno = 0;
	int rc = 0, vd;

	if (f == NULL) {
		fprintf(stderr, "zring probe: %s: %s\n", o->replay, strerror(errno));
		return ZL_PROBE_USAGE;
	}
	while (rc == 0 && getline(&line, &lcap, f) > 0) {
		lineno++;
		rc = parse_line(&v, line, &sleep_next, o->mechanism == ZR_MECH_CURVE);
	}
	free(line);
	fclose(f);
	if (rc < 0) {
		fprintf(stderr,
		        "zring probe: %s:%u: not a reproducer line (handshake, write HEX, box "
		        "NONCE HEX [flip BIT] [cut N] [command] under CURVE, sleep MS, # ...)\n",
		        o->replay, lineno);
		free(v.data);
		free(v.st);
		return ZL_PROBE_USAGE;
	}
	printf("zring probe --replay %s: %zu steps to %s\n", o->replay, v.n, o->endpoint);
	play(c, &v, why, sizeof(why));
	vd = pr_live(c, live, sizeof(live));
	free(v.data);
	free(v.st);
	printf("replay: %s%s%s%s%s\n", pr_verdict_name(vd), vd == PR_PASS ? "" : ": ", live,
	       why[0] != '\0' ? "; " : "", why);
	return vd == PR_PASS ? ZL_PROBE_OK : ZL_PROBE_FINDINGS;
}
