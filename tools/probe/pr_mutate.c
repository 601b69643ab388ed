/*
 * zring probe — the fuzzers' shared mutations (see pr_mutate.h).
 */
#include <string.h>

#include <zring/zmtp.h>

#include "pr_mutate.h"

#define PR_NELEM(a) (sizeof(a) / sizeof((a)[0]))

uint64_t
pr_rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

enum mut_op {
	MUT_FLIP,     /* flip a bit anywhere */
	MUT_FLAGS,    /* the flags octet */
	MUT_RESIZE,   /* resize the body, a short frame's size field kept true */
	MUT_SIZE,     /* the size field: an interesting value, same form */
	MUT_GREETING, /* the greeting's version, mechanism or signature */
	MUT_NAME_LEN, /* a command name's length octet */
	MUT_DUP,      /* duplicate a unit */
	MUT_DROP,     /* drop a unit */
	MUT_SWAP,     /* swap two units */
	MUT_TRUNCATE, /* truncate a unit */
	MUT_APPEND,   /* append random octets */
	MUT_PING_CTX, /* CURVE: a PING context length past 16 */
	/* CURVE only: the box instead of what is in it */
	MUT_NONCE,    /* a nonce that is not the next */
	MUT_BOX_FLIP, /* a bit of the MESSAGE body after boxing */
	MUT_BOX_CUT,  /* the box cut short */
	MUT_CLEAR,    /* the plaintext in the clear */
	MUT_COMMAND,  /* a command frame for libzmq's data frame */
};

/* Each mode's draw (rnd % length) to operation: a seed's run stays what it was. */
static const uint8_t ops_null[] = {MUT_FLIP,     MUT_FLAGS,  MUT_SIZE,   MUT_GREETING,
                                   MUT_DUP,      MUT_DROP,   MUT_SWAP,   MUT_TRUNCATE,
                                   MUT_NAME_LEN, MUT_APPEND, MUT_RESIZE, MUT_RESIZE};
static const uint8_t ops_mech[] = {MUT_FLIP,     MUT_FLAGS,   MUT_RESIZE, MUT_NAME_LEN,
                                   MUT_DUP,      MUT_DROP,    MUT_SWAP,   MUT_TRUNCATE,
                                   MUT_SIZE,     MUT_APPEND,  MUT_APPEND, MUT_NONCE,
                                   MUT_BOX_FLIP, MUT_BOX_CUT, MUT_CLEAR,  MUT_COMMAND};
/* PLAIN draws from the first 11 of ops_mech; CURVE's op 8 is MUT_PING_CTX. */
#define OPS_PLAIN 11

static const uint64_t interesting[] = {0,
                                       1,
                                       16,
                                       17,
                                       127,
                                       128,
                                       255,
                                       256,
                                       65535,
                                       65536,
                                       1ull << 31,
                                       1ull << 32,
                                       (1ull << 63) - 1,
                                       1ull << 63,
                                       UINT64_MAX};

static void
append(uint64_t *s, struct pr_unit *x, unsigned count)
{
	for (unsigned k = 0; k < count && x->len < PR_UNIT_MAX; k++)
		x->b[x->len++] = (uint8_t)pr_rnd(s);
}

/* Structure-aware mutations: the units are greetings and frames, so a
 * mutation can hit a flags octet, a size field, a command name or the order
 * of frames instead of random bytes only. hdr is the octets before a unit's
 * body: the frame header (2 in short form) or the plaintext's flags octet
 * (CURVE, 1). */
void
pr_mutate(uint64_t *s, int mode, struct pr_unit *u, size_t *n)
{
	bool curve = mode == PR_FUZZ_CURVE;
	unsigned count = 1 + (unsigned)(pr_rnd(s) % 3);

	for (unsigned m = 0; m < count; m++) {
		size_t i = (size_t)(pr_rnd(s) % *n);
		struct pr_unit *x = &u[i];
		bool greeting = mode == PR_FUZZ_NULL && i == 0;
		size_t hdr = curve ? 1 : ((x->b[0] & ZR_ZMTP_LONG) ? 9 : 2);
		bool cmd = curve ? (x->b[0] & 0x02) != 0 : (x->b[0] & ZR_ZMTP_COMMAND) != 0;
		int op;

		if (mode == PR_FUZZ_NULL)
			op = ops_null[pr_rnd(s) % PR_NELEM(ops_null)];
		else
			op = ops_mech[pr_rnd(s) % (curve ? PR_NELEM(ops_mech) : OPS_PLAIN)];
		if (op == MUT_SIZE && curve)
			op = MUT_PING_CTX;
		switch (op) {
		case MUT_FLIP:
			if (x->len > 0)
				x->b[pr_rnd(s) % x->len] ^= (uint8_t)(1u << (pr_rnd(s) % 8));
			break;
		case MUT_FLAGS: /* PLAIN and CURVE units are never empty */
			if (mode != PR_FUZZ_NULL || (!greeting && x->len > 0))
				x->b[0] = (uint8_t)pr_rnd(s);
			break;
		case MUT_RESIZE:
			if (!greeting && x->len >= hdr && (curve || hdr == 2)) {
				size_t body = x->len - hdr, nb;
				uint64_t r = pr_rnd(s) % 3;
				nb = r == 0   ? body + 1
				     : r == 1 ? (body > 0 ? body - 1 : 0)
				              : body + 1 + (size_t)(pr_rnd(s) % 8);
				if (nb > 255)
					nb = 255;
				for (size_t k = body; k < nb; k++)
					x->b[hdr + k] = (uint8_t)pr_rnd(s);
				if (!curve)
					x->b[1] = (uint8_t)nb;
				x->len = hdr + nb;
			}
			break;
		case MUT_SIZE:
			if (!greeting && x->len >= 2) {
				uint64_t v = interesting[pr_rnd(s) % PR_NELEM(interesting)];
				if (hdr == 9 && x->len >= 9)
					for (int k = 0; k < 8; k++)
						x->b[1 + k] = (uint8_t)(v >> (56 - 8 * k));
				else
					x->b[1] = (uint8_t)v;
			}
			break;
		case MUT_GREETING:
			if (greeting && x->len == ZR_ZMTP_GREETING_SIZE) {
				static const size_t at[] = {0, 9, 10, 11, 12, 13, 32};
				x->b[at[pr_rnd(s) % PR_NELEM(at)]] = (uint8_t)pr_rnd(s);
			}
			break;
		case MUT_NAME_LEN:
			/* NULL: octet 2 of a frame of four or more, its draws kept */
			if (mode == PR_FUZZ_NULL ? !greeting && cmd && x->len > 3
			                         : cmd && x->len > hdr)
				x->b[mode == PR_FUZZ_NULL ? 2 : hdr] = (uint8_t)pr_rnd(s);
			break;
		case MUT_DUP:
			if (*n < PR_UNITS) {
				memmove(&u[i + 1], &u[i], (*n - i) * sizeof(*u));
				(*n)++;
			}
			break;
		case MUT_DROP:
			if (*n > 1) {
				memmove(&u[i], &u[i + 1], (*n - i - 1) * sizeof(*u));
				(*n)--;
			}
			break;
		case MUT_SWAP: {
			size_t j = (size_t)(pr_rnd(s) % *n);
			struct pr_unit t = u[i];
			u[i] = u[j];
			u[j] = t;
			break;
		}
		case MUT_TRUNCATE:
			if (x->len > 1)
				x->len = 1 + (size_t)(pr_rnd(s) % (x->len - 1));
			break;
		case MUT_APPEND:
			append(s, x, 8);
			break;
		case MUT_PING_CTX:
			if (cmd)
				append(s, x, 20);
			break;
		case MUT_NONCE:
			x->nonce_how = 1 + (int)(pr_rnd(s) % 5);
			break;
		case MUT_BOX_FLIP:
			x->flip = (long)(pr_rnd(s) % ((16 + 16 + x->len) * 8));
			break;
		case MUT_BOX_CUT:
			x->cut = 1 + (size_t)(pr_rnd(s) % (16 + x->len));
			break;
		case MUT_CLEAR:
			x->clear = true;
			break;
		default: /* MUT_COMMAND */
			x->command = true;
			break;
		}
	}
}

size_t
pr_fuzz_piece(uint64_t *s, size_t left, unsigned *sleep_ms)
{
	size_t piece = left;

	if (pr_rnd(s) % 8 == 0 && piece > 1)
		piece = 1 + (size_t)(pr_rnd(s) % (piece - 1));
	*sleep_ms = pr_rnd(s) % 16 == 0 ? 2 : 0;
	return piece;
}

int
pr_hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}
