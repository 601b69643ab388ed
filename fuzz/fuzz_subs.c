/*
 * Fuzz harness: the subscription trie (engine/subs.h), against a naive
 * model: per owner, a list of (topic, count) in the order first added.
 *
 * Input layout:
 *   octet 0      max_n for every owner: 1 + (b % 24)
 *   octet 1      max_bytes: ZR__SUBS_ENTRY_COST * (b % 8) + (b / 8) * 3
 *   then ops, each one octet op + one octet length L + L topic octets:
 *     op % 5     0 add, 1 remove, 2 collect and match, 3 drop the owner,
 *                4 add (twice as likely: adds build the trie)
 *     op / 5 % 4 the owner (0..3)
 *     L % 24     the topic's length; topic octets are folded to 'a'..'d'
 *                when op >= 128, so prefixes collide and nodes split and
 *                merge, and kept raw otherwise (any octet, 0x00 included)
 *
 * After every op: each result matches the model's (new for the owner, new
 * for the trie, -EDQUOT past a limit with nothing changed, held, gone for
 * the owner, gone for the trie; peek_remove predicts remove); collect finds
 * exactly the owners holding a prefix of the data, each once, and match
 * agrees; every owner's n and bytes equal the model's and never exceed the
 * limits; its held list gives the model's topics, counts and order, and
 * zr__subs_sole says whether nobody else holds the topic; the trie has at
 * most two nodes per distinct topic held (+ the root). Finally every
 * owner is dropped and the trie freed (ASan: no leak).
 */
#include <errno.h>

#include "fuzz_common.h"
#include "subs.h"

#define NOWN 4
#define TMAX 24
#define MMAX 64 /* entries per owner in the model: max_n is at most 24 */

struct m_entry {
	uint8_t t[TMAX];
	size_t len;
	uint32_t count;
};

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

static bool
m_matches(const struct m_owner *o, const uint8_t *d, size_t len)
{
	for (size_t i = 0; i < o->ne; i++) {
		if (o->e[i].len <= len && memcmp(o->e[i].t, d, o->e[i].len) == 0)
			return true;
	}
	return false;
}

static void
check_owner(struct zr__subs_owner *o, struct m_owner *m, struct m_owner *all, size_t max_n,
            size_t max_bytes)
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
	}
	FZ_CHECK(h == NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct zr__subs t = {0};
	struct zr__subs_owner own[NOWN];
	struct m_owner *m;
	size_t max_n, max_bytes, at = 2;

	if (size < 2)
		return 0;
	m = calloc(NOWN, sizeof *m);
	FZ_CHECK(m != NULL);
	memset(own, 0, sizeof own);
	max_n = 1 + data[0] % 24;
	max_bytes = ZR__SUBS_ENTRY_COST * (data[1] % 8) + (size_t)(data[1] / 8) * 3;

	while (at + 2 <= size) {
		uint8_t op = data[at], kind = op % 5;
		int oi = op / 5 % NOWN, rc, want;
		size_t len = data[at + 1] % TMAX;
		uint8_t topic[TMAX];
		struct m_owner *mo = &m[oi];
		struct m_entry *e;

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
			rc = zr__subs_add(&t, &own[oi], topic, len, max_n, max_bytes);
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
			FZ_CHECK(zr__subs_peek_remove(&t, &own[oi], topic, len) == want);
			rc = zr__subs_remove(&t, &own[oi], topic, len);
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
			bool seen[NOWN] = {false}, any = false;
			struct zr__subs_owner *o = zr__subs_collect(&t, topic, len);

			for (; o != NULL; o = o->match_next) {
				int k = (int)(o - own);

				FZ_CHECK(k >= 0 && k < NOWN);
				FZ_CHECK(!seen[k]);
				seen[k] = true;
			}
			for (int k = 0; k < NOWN; k++) {
				FZ_CHECK(seen[k] == m_matches(&m[k], topic, len));
				any = any || seen[k];
			}
			FZ_CHECK(zr__subs_match(&t, topic, len) == any);
		} else {
			zr__subs_drop(&t, &own[oi]);
			memset(mo, 0, sizeof *mo);
		}
		size_t topics = 0;

		for (int k = 0; k < NOWN; k++) {
			check_owner(&own[k], &m[k], m, max_n, max_bytes);
			topics += m[k].ne;
		}
		/* The memory bound's premise (subs.c): at most two nodes a topic. */
		FZ_CHECK(t.nodes <= 1 + 2 * topics);
	}
	for (int k = 0; k < NOWN; k++)
		zr__subs_drop(&t, &own[k]);
	/* Everything dropped: the trie is back to its bare root. */
	FZ_CHECK(t.nodes <= 1);
	FZ_CHECK(!zr__subs_match(&t, (const uint8_t *)"", 0));
	zr__subs_fini(&t);
	free(m);
	return 0;
}
