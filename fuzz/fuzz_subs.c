/*
 * Fuzz harness: the subscription trie (engine/subs.h) and its exact-topic
 * index, against a naive model: per owner, a list of (topic, count) in the
 * order first added.
 *
 * Input layout:
 *   octet 0      max_n for every owner: 1 + (b % 24); the topic lengths:
 *                b / 24 % 4 == 0 any (L % 24, or 56 + L % 16 for L >= 248:
 *                mostly more lengths than the index serves, or longer
 *                topics than it looks up, so collect and match walk the
 *                trie), else one of that many lengths (the index's path)
 *   octet 1      max_bytes: ZR__SUBS_ENTRY_COST * (b % 8) + (b / 8) * 3; the
 *                lengths of the octet above: (b / 8 + 9 * i) % 24, i < 3,
 *                the first 56 + that % 16 when octet 0 >= 192 (around 64,
 *                the longest topic the index looks up)
 *   then ops, each one octet op + one octet length L + L topic octets:
 *     op % 5     0 add, 1 remove, 2 collect and match, 3 drop the owner
 *                (when op / 20 % 3 == 2: the index's allocations fail from
 *                now on never, always, every 2nd or every 3rd, by L % 4),
 *                4 add (twice as likely: adds build the trie)
 *     op / 5 % 4 the owner (0..3)
 *     L          the topic's length, as octet 0 says; topic octets are
 *                folded to 'a'..'d' when op >= 128, so prefixes collide and
 *                nodes split and merge, and kept raw otherwise (any octet,
 *                0x00 included)
 *
 * After every op: each result matches the model's (new for the owner, new
 * for the trie, -EDQUOT past a limit with nothing changed, held, gone for
 * the owner, gone for the trie; peek_remove predicts remove); collect finds
 * exactly the owners holding a prefix of the data, each once, in the walk's
 * order (prefixes shortest first, a topic's holders newest first, the list
 * built at its head), whether the index or the walk answers, and match
 * agrees; the hash is libsodium's SipHash-2-4; every owner's n and bytes
 * equal the model's and never exceed the limits; its held list gives the
 * model's topics, counts and order, and zr__subs_sole says whether nobody
 * else holds the topic; the trie has at most two nodes per distinct topic
 * held (+ the root); the index counts every topic held but "" and its
 * lengths account for every topic. Finally every owner is dropped and the
 * trie freed (ASan: no leak).
 */
#include <errno.h>

#include <sodium.h>

#include "fuzz_common.h"
#include "subs.h"

#define NOWN 4
#define TMAX 72 /* topics up to 71 octets: past the index's longest (64) */
#define MMAX 64 /* entries per owner in the model: max_n is at most 24 */

struct m_entry {
	uint8_t t[TMAX];
	size_t len;
	uint32_t count;
	uint64_t seq; /* when the owner began to hold it: the holders' order */
};

/* The trie and when its index's allocations fail (zr__subs_fault). */
struct fz_trie {
	struct zr__subs t;
	unsigned fail_every, allocs; /* 0: never, 1: always, k: every k-th */
};

bool
zr__subs_fault(struct zr__subs *t)
{
	struct fz_trie *f = (struct fz_trie *)(void *)((char *)t - offsetof(struct fz_trie, t));

	f->allocs++;
	return f->fail_every != 0 && f->allocs % f->fail_every == 0;
}

struct m_owner {
	struct m_entry e[MMAX];
	size_t ne, n, bytes;
};

static struct m_entry *
m_find(struct m_owner *o, const uint8_t *t, size_t len)
{
	for (size_t i = 0; i < o->ne; i++) {
		if (o->e[i].len == len && memcmp(o->e[i].t, t, len) == 0)
			return &o->e[i];
	}
	return NULL;
}

static size_t
m_holders(struct m_owner *m, const uint8_t *t, size_t len)
{
	size_t k = 0;

	for (int i = 0; i < NOWN; i++)
		k += m_find(&m[i], t, len) != NULL;
	return k;
}

static void
check_owner(const struct zr__subs *t, struct zr__subs_owner *o, struct m_owner *m,
            struct m_owner *all, size_t max_n, size_t max_bytes)
{
	const struct zr__subs_hold *h = o->held;
	uint8_t buf[TMAX];

	FZ_CHECK(o->n == m->n);
	FZ_CHECK(o->bytes == m->bytes);
	FZ_CHECK(o->n <= max_n);
	FZ_CHECK(o->bytes <= max_bytes);
	for (size_t i = 0; i < m->ne; i++, h = zr__subs_next(h)) {
		FZ_CHECK(h != NULL);
		FZ_CHECK(zr__subs_topic(h, NULL) == m->e[i].len);
		FZ_CHECK(zr__subs_topic(h, buf) == m->e[i].len);
		FZ_CHECK(memcmp(buf, m->e[i].t, m->e[i].len) == 0);
		FZ_CHECK(zr__subs_count(h) == m->e[i].count);
		FZ_CHECK(zr__subs_sole(h) == (m_holders(all, m->e[i].t, m->e[i].len) == 1));
		/* Found again by its topic (through the index when it is whole). */
		FZ_CHECK(zr__subs_peek_remove(t, o, m->e[i].t, m->e[i].len) != 0);
	}
	FZ_CHECK(h == NULL);
}

/* The owners collect must give for d, in order: the walk meets the
 * prefixes shortest first and a node's holders newest first, and puts each
 * owner not yet met at the head of the list. Returns how many. */
static int
m_collect(struct m_owner *m, const uint8_t *d, size_t len, int out[NOWN])
{
	int met[NOWN], nmet = 0;

	for (size_t p = 0; p <= len; p++) {
		for (;;) {
			/* The newest holder of d[0:p] not yet met. */
			int best = -1;
			uint64_t seq = 0;

			for (int k = 0; k < NOWN; k++) {
				struct m_entry *e = m_find(&m[k], d, p);
				bool seen = false;

				for (int j = 0; j < nmet; j++)
					seen = seen || met[j] == k;
				if (e != NULL && !seen && (best < 0 || e->seq > seq)) {
					best = k;
					seq = e->seq;
				}
			}
			if (best < 0)
				break;
			met[nmet++] = best;
		}
	}
	for (int j = 0; j < nmet; j++)
		out[j] = met[nmet - 1 - j];
	return nmet;
}

/* The index's bookkeeping against the model (subs.h). */
static void
check_index(const struct zr__subs *t, struct m_owner *m)
{
	size_t held = 0, all = 0, counted = t->lens_other + t->lens_long, longer = 0;

	/* Distinct topics: each counted at its first holder. */
	for (int k = 0; k < NOWN; k++) {
		for (size_t i = 0; i < m[k].ne; i++) {
			const struct m_entry *e = &m[k].e[i];
			bool first = true;

			for (int j = 0; j < k; j++)
				first = first && m_find(&m[j], e->t, e->len) == NULL;
			if (!first)
				continue;
			all++;
			held += e->len > 0;
			longer += e->len > 64;
		}
	}
	FZ_CHECK(t->held == held);
	FZ_CHECK(t->nlens <= ZR__SUBS_IX_LENS);
	for (size_t k = 0; k < t->nlens; k++) {
		size_t n = 0;

		FZ_CHECK(t->lens_n[k] > 0);
		FZ_CHECK(k == 0 || t->lens[k - 1] < t->lens[k]);
		/* Topics of that length, distinct: lens_n never counts more. */
		for (int o = 0; o < NOWN; o++) {
			for (size_t i = 0; i < m[o].ne; i++) {
				const struct m_entry *e = &m[o].e[i];
				bool first = true;

				for (int j = 0; j < o; j++)
					first = first && m_find(&m[j], e->t, e->len) == NULL;
				n += first && e->len == t->lens[k];
			}
		}
		FZ_CHECK(t->lens_n[k] <= n);
		counted += t->lens_n[k];
	}
	FZ_CHECK(counted == all);
	FZ_CHECK(t->lens_long == longer); /* exact: a length is known when it goes */
	if (!t->ix_lost) {
		size_t cap = t->ix_cap;

		FZ_CHECK(held == 0 ? cap == 0 : cap >= 4 && held < cap);
		FZ_CHECK((cap & (cap - 1)) == 0);
	} else {
		FZ_CHECK(t->ix_cap == 0);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t key[16] = "fuzz_subs key 16";
	struct fz_trie *ft;
	struct zr__subs *t;
	struct zr__subs_owner own[NOWN];
	struct m_owner *m;
	size_t max_n, max_bytes, at = 2, nlens, lens[3];
	uint64_t seq = 0;

	if (size < 2)
		return 0;
	m = calloc(NOWN, sizeof *m);
	ft = calloc(1, sizeof *ft);
	FZ_CHECK(m != NULL && ft != NULL);
	t = &ft->t;
	zr__subs_seed(t, key);
	memset(own, 0, sizeof own);
	max_n = 1 + data[0] % 24;
	max_bytes = ZR__SUBS_ENTRY_COST * (data[1] % 8) + (size_t)(data[1] / 8) * 3;
	nlens = (size_t)data[0] / 24 % 4;
	for (size_t i = 0; i < 3; i++)
		lens[i] = ((size_t)data[1] / 8 + 9 * i) % 24;
	if (data[0] >= 192)
		lens[0] = 56 + lens[0] % 16; /* around the index's longest */

	while (at + 2 <= size) {
		uint8_t op = data[at], kind = op % 5;
		int oi = op / 5 % NOWN, rc, want;
		size_t len = nlens > 0             ? lens[data[at + 1] % nlens]
		             : data[at + 1] >= 248 ? 56 + (size_t)data[at + 1] % 16
		                                   : (size_t)data[at + 1] % 24;
		uint8_t topic[TMAX];
		struct m_owner *mo = &m[oi];
		struct m_entry *e;

		if (kind == 3 && op / 20 % 3 == 2) {
			ft->fail_every = data[at + 1] % 4;
			at += 2;
			continue;
		}
		at += 2;
		if (len > size - at)
			len = size - at;
		for (size_t i = 0; i < len; i++)
			topic[i] = op >= 128 ? (uint8_t)('a' + data[at + i] % 4) : data[at + i];
		at += len;

		if (kind == 0 || kind == 4) {
			size_t cost = len + ZR__SUBS_ENTRY_COST;

			e = m_find(mo, topic, len);
			if (mo->n >= max_n)
				want = -EDQUOT;
			else if (e != NULL)
				want = 0;
			else if (cost > max_bytes - mo->bytes)
				want = -EDQUOT;
			else
				want = ZR__SUBS_NEW_OWNER |
				       (m_holders(m, topic, len) == 0 ? ZR__SUBS_NEW_TRIE : 0);
			rc = zr__subs_add(t, &own[oi], topic, len, max_n, max_bytes);
			FZ_CHECK(rc == want);
			if (rc == 0) {
				e->count++;
				mo->n++;
			} else if (rc > 0) {
				FZ_CHECK(mo->ne < MMAX);
				e = &mo->e[mo->ne++];
				memcpy(e->t, topic, len);
				e->len = len;
				e->count = 1;
				e->seq = ++seq;
				mo->n++;
				mo->bytes += cost;
			}
		} else if (kind == 1) {
			e = m_find(mo, topic, len);
			if (e == NULL)
				want = 0;
			else if (e->count > 1)
				want = ZR__SUBS_HELD;
			else
				want = ZR__SUBS_HELD | ZR__SUBS_GONE_OWNER |
				       (m_holders(m, topic, len) == 1 ? ZR__SUBS_GONE_TRIE : 0);
			FZ_CHECK(zr__subs_peek_remove(t, &own[oi], topic, len) == want);
			rc = zr__subs_remove(t, &own[oi], topic, len);
			FZ_CHECK(rc == want);
			if (e != NULL) {
				mo->n--;
				if (--e->count == 0) {
					mo->bytes -= len + ZR__SUBS_ENTRY_COST;
					memmove(e, e + 1,
					        (size_t)(mo->e + mo->ne - (e + 1)) * sizeof *e);
					mo->ne--;
				}
			}
		} else if (kind == 2) {
			int want_o[NOWN], nwant = m_collect(m, topic, len, want_o), got = 0;
			struct zr__subs_owner *o = zr__subs_collect(t, topic, len);
			uint8_t h[crypto_shorthash_BYTES];
			uint64_t k2[2] = {0}, mine;

			for (; o != NULL; o = o->match_next, got++) {
				FZ_CHECK(got < nwant);
				FZ_CHECK(o == &own[want_o[got]]);
			}
			FZ_CHECK(got == nwant);
			FZ_CHECK(zr__subs_match(t, topic, len) == (nwant > 0));

			/* Our SipHash is libsodium's (keyed with two topic octets). */
			memcpy(k2, topic, len < 2 ? len : 2);
			crypto_shorthash(h, topic, len, (const uint8_t *)k2);
			mine = zr__subs_siphash(k2, topic, len);
			for (size_t i = 0; i < sizeof h; i++)
				FZ_CHECK(h[i] == (uint8_t)(mine >> (8 * i)));
		} else {
			zr__subs_drop(t, &own[oi]);
			memset(mo, 0, sizeof *mo);
		}
		size_t topics = 0;

		for (int k = 0; k < NOWN; k++) {
			check_owner(t, &own[k], &m[k], m, max_n, max_bytes);
			topics += m[k].ne;
		}
		/* The memory bound's premise (subs.c): at most two nodes a topic. */
		FZ_CHECK(t->nodes <= 1 + 2 * topics);
		check_index(t, m);
	}
	for (int k = 0; k < NOWN; k++)
		zr__subs_drop(t, &own[k]);
	/* Everything dropped: the trie is back to its bare root, the index empty. */
	FZ_CHECK(t->nodes <= 1);
	FZ_CHECK(t->held == 0 && t->ix_cap == 0 && !t->ix_lost);
	FZ_CHECK(t->nlens == 0 && t->lens_other == 0 && t->lens_long == 0);
	FZ_CHECK(!zr__subs_match(t, (const uint8_t *)"", 0));
	zr__subs_fini(t);
	free(ft);
	free(m);
	return 0;
}
