/*
 * The subscription trie's exact-topic index (engine/subs.c): collect and
 * match look a message's prefixes up by hash when the topics held have few
 * distinct lengths, and walk the trie otherwise. Both must give the same
 * owners in the same order; the hash is SipHash-2-4; many lengths fall back
 * to the walk and few again bring the index back; and the trie with its
 * index stays within what its owners are charged (the heap measured).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <malloc.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "engine/subs.h"

#define OWNERS 12

static const uint8_t test_key[16] = {0x5a, 0x17, 0x33, 0x80, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

static bool
index_on(const struct zr__subs *t)
{
	return t->lens_other == 0 && t->lens_long == 0 && !t->ix_lost && t->nlens > 0;
}

static void
add(struct zr__subs *t, struct zr__subs_owner *o, const char *topic)
{
	cr_assert_gt(zr__subs_add(t, o, (const uint8_t *)topic, strlen(topic), SIZE_MAX, SIZE_MAX),
	             0, "add '%s'", topic);
}

/* The owners collect gives for msg, as indexes into own, in list order;
 * returns how many. */
static int
collect(struct zr__subs *t, struct zr__subs_owner *own, const char *msg, int out[OWNERS])
{
	int n = 0;

	for (struct zr__subs_owner *o = zr__subs_collect(t, (const uint8_t *)msg, strlen(msg));
	     o != NULL; o = o->match_next) {
		cr_assert_lt(n, OWNERS, "an owner twice for '%s'", msg);
		out[n++] = (int)(o - own);
	}
	return n;
}

Test(subs_index, siphash_is_siphash_2_4)
{
	uint8_t k[16], m[64], ref[crypto_shorthash_BYTES];
	uint64_t key[2];

	/* The reference vector of the SipHash paper (appendix A). */
	for (int i = 0; i < 16; i++)
		k[i] = (uint8_t)i;
	for (int i = 0; i < 15; i++)
		m[i] = (uint8_t)i;
	memcpy(&key[0], k, 8); /* little-endian host: the words are the octets */
	memcpy(&key[1], k + 8, 8);
	cr_assert_eq(zr__subs_siphash(key, m, 15), 0xa129ca6149be45e5ull);
	/* And libsodium's, at every length across two blocks. */
	randombytes_buf(k, sizeof k);
	randombytes_buf(m, sizeof m);
	memcpy(&key[0], k, 8);
	memcpy(&key[1], k + 8, 8);
	for (size_t len = 0; len <= sizeof m; len++) {
		uint64_t want;

		crypto_shorthash(ref, m, len, k);
		memcpy(&want, ref, sizeof want);
		cr_assert_eq(zr__subs_siphash(key, m, len), want, "length %zu", len);
	}
}

/*
 * The 10,000-topic publisher's trie (10 owners x 1,000 "t%05u" topics), plus
 * "" and "t0" held by two more owners: every message of 20,000 topics gets
 * the same list from the index as from the walk, which a trie holding the
 * same plus topics of five more lengths (matching no message) must take.
 */
Test(subs_index, ten_thousand_topics_the_index_answers_as_the_walk)
{
	struct zr__subs fast = {0}, walk = {0};
	struct zr__subs_owner fo[OWNERS], wo[OWNERS], extra = {0};
	char topic[32];

	memset(fo, 0, sizeof fo);
	memset(wo, 0, sizeof wo);
	zr__subs_seed(&fast, test_key);
	zr__subs_seed(&walk, test_key);
	for (unsigned i = 0; i < 10000; i++) {
		snprintf(topic, sizeof topic, "t%05u", i);
		add(&fast, &fo[i / 1000], topic);
		add(&walk, &wo[i / 1000], topic);
	}
	add(&fast, &fo[10], "");
	add(&walk, &wo[10], "");
	add(&fast, &fo[11], "t0");
	add(&walk, &wo[11], "t0");
	for (int len = 1; len <= 5; len++) {
		snprintf(topic, sizeof topic, "zz%.*s", len, "56789");
		add(&walk, &extra, topic);
	}
	cr_assert(index_on(&fast));
	cr_assert_eq(fast.nlens, 3, "lengths 0, 2 and 6");
	cr_assert_not(index_on(&walk), "7 lengths: the walk");

	for (unsigned i = 0; i < 20000; i++) {
		int f[OWNERS], w[OWNERS], nf, nw;

		snprintf(topic, sizeof topic, "t%05u payload", i);
		nf = collect(&fast, fo, topic, f);
		nw = collect(&walk, wo, topic, w);
		cr_assert_eq(nf, nw, "'%s': %d owners, the walk %d", topic, nf, nw);
		cr_assert_arr_eq(f, w, (size_t)nf * sizeof *f, "'%s': another list", topic);
		/* "" always; t0 below 10,000; the topic's owner when held. */
		cr_assert_eq(nf, 1 + (i < 10000) + (i < 10000), "'%s'", topic);
		cr_assert(zr__subs_match(&fast, (const uint8_t *)topic, strlen(topic)));
	}
	/* Without "", a topic nobody holds matches nothing. */
	zr__subs_drop(&fast, &fo[10]);
	cr_assert(index_on(&fast));
	cr_assert_not(zr__subs_match(&fast, (const uint8_t *)"t12345", 6));
	cr_assert(zr__subs_match(&fast, (const uint8_t *)"t01234", 6));
	cr_assert(zr__subs_match(&fast, (const uint8_t *)"t0", 2), "t0 itself");
	cr_assert_not(zr__subs_match(&fast, (const uint8_t *)"t", 1));

	for (int k = 0; k < OWNERS; k++) {
		zr__subs_drop(&fast, &fo[k]);
		zr__subs_drop(&walk, &wo[k]);
	}
	zr__subs_drop(&walk, &extra);
	cr_assert_eq(fast.held, 0);
	cr_assert_eq(fast.ix_cap, 0, "an empty index frees its table");
	zr__subs_fini(&fast);
	zr__subs_fini(&walk);
}

/* A peer with topics of 50 lengths gets the walk; when all but 3 lengths
 * are gone, the lengths are counted again within a bounded number of
 * queries and the index answers again. */
Test(subs_index, many_lengths_walk_then_few_lengths_use_the_index_again)
{
	struct zr__subs t = {0};
	struct zr__subs_owner o = {0};
	char topic[64];
	int queries = 0;

	zr__subs_seed(&t, test_key);
	for (int len = 1; len <= 50; len++) {
		memset(topic, 'a' + len % 26, (size_t)len);
		topic[len] = '\0';
		add(&t, &o, topic);
	}
	cr_assert_not(index_on(&t));
	memset(topic, 'c', 40);
	cr_assert(zr__subs_match(&t, (const uint8_t *)topic, 40), "'cc': held, a prefix");
	/* The first four lengths had the places; the last three are left. */
	for (int len = 1; len <= 47; len++) {
		memset(topic, 'a' + len % 26, (size_t)len);
		cr_assert_eq(zr__subs_remove(&t, &o, (const uint8_t *)topic, (size_t)len),
		             ZR__SUBS_HELD | ZR__SUBS_GONE_OWNER | ZR__SUBS_GONE_TRIE);
	}
	memset(topic, 'w', 60);
	while (!index_on(&t)) {
		cr_assert_lt(++queries, 100, "the lengths were never counted again");
		cr_assert(zr__subs_match(&t, (const uint8_t *)topic, 60), "48 w: held");
	}
	cr_assert_eq(t.nlens, 3);
	cr_assert(zr__subs_match(&t, (const uint8_t *)topic, 48));
	cr_assert_not(zr__subs_match(&t, (const uint8_t *)topic, 47));
	memset(topic, 'x', 60);
	cr_assert_eq(zr__subs_collect(&t, (const uint8_t *)topic, 49), &o);
	cr_assert_null(zr__subs_collect(&t, (const uint8_t *)"cc", 2), "cc is gone");
	zr__subs_drop(&t, &o);
	zr__subs_fini(&t);
}

/* A topic over 64 octets makes collect and match walk (the index would
 * hash that much of every message); gone, the index answers again. Either
 * way the answers are the same. */
Test(subs_index, a_topic_over_64_octets_walks)
{
	struct zr__subs t = {0};
	struct zr__subs_owner a = {0}, b = {0};
	char longer[80], msg[100];

	zr__subs_seed(&t, test_key);
	memset(longer, 'L', 65);
	longer[65] = '\0';
	add(&t, &a, "LL");
	add(&t, &b, longer);
	cr_assert_not(index_on(&t));
	memset(msg, 'L', sizeof msg);
	cr_assert_eq(zr__subs_collect(&t, (const uint8_t *)msg, 65), &b, "b first: longer prefix");
	cr_assert_eq(b.match_next, &a);
	cr_assert_eq(zr__subs_collect(&t, (const uint8_t *)msg, 64), &a);
	cr_assert_eq(zr__subs_remove(&t, &b, (const uint8_t *)longer, 65),
	             ZR__SUBS_HELD | ZR__SUBS_GONE_OWNER | ZR__SUBS_GONE_TRIE);
	cr_assert(index_on(&t));
	cr_assert_eq(zr__subs_collect(&t, (const uint8_t *)msg, 65), &a);
	cr_assert_null(a.match_next);
	cr_assert_not(zr__subs_match(&t, (const uint8_t *)"Lx", 2));
	zr__subs_drop(&t, &a);
	zr__subs_drop(&t, &b);
	zr__subs_fini(&t);
}

/* Never seeded (the key all zero): the same answers. */
Test(subs_index, an_unseeded_trie_works)
{
	struct zr__subs t = {0};
	struct zr__subs_owner a = {0}, b = {0};

	add(&t, &a, "news.");
	add(&t, &b, "news.");
	add(&t, &b, "sport.longer than a short key");
	cr_assert(index_on(&t));
	cr_assert(zr__subs_match(&t, (const uint8_t *)"news.today", 10));
	cr_assert_not(zr__subs_match(&t, (const uint8_t *)"sport.longer than a", 19));
	cr_assert_eq(zr__subs_collect(&t, (const uint8_t *)"sport.longer than a short key!", 30),
	             &b);
	cr_assert_eq(zr__subs_remove(&t, &b, (const uint8_t *)"news.", 5),
	             ZR__SUBS_HELD | ZR__SUBS_GONE_OWNER);
	cr_assert_eq(zr__subs_collect(&t, (const uint8_t *)"news.", 5), &a);
	zr__subs_drop(&t, &a);
	zr__subs_drop(&t, &b);
	zr__subs_fini(&t);
}

/* ---- memory -------------------------------------------------------------- */

static size_t
heap_in_use(void)
{
	struct mallinfo2 m = mallinfo2();

	return m.uordblks + m.hblkhd;
}

#if defined(__SANITIZE_ADDRESS__)
#define ZR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ZR_ASAN 1
#endif
#endif

/*
 * One owner adds n distinct topics (made by topic_of) and removes all but
 * keep of them; the heap the trie and its index take must stay within what
 * the owner is charged (its bytes: each topic's length + ZR__SUBS_ENTRY_COST).
 */
static void
within_charge(const char *what, size_t n, size_t keep,
              size_t (*topic_of)(size_t i, char *out, size_t cap))
{
	struct zr__subs t = {0};
	struct zr__subs_owner o = {0};
	char topic[64];
	size_t base, used;

	zr__subs_seed(&t, test_key);
	base = heap_in_use();
	for (size_t i = 0; i < n; i++) {
		size_t len = topic_of(i, topic, sizeof topic);

		cr_assert_gt(zr__subs_add(&t, &o, (const uint8_t *)topic, len, SIZE_MAX, SIZE_MAX),
		             0);
	}
	for (size_t i = keep; i < n; i++) {
		size_t len = topic_of(i, topic, sizeof topic);

		cr_assert_gt(zr__subs_remove(&t, &o, (const uint8_t *)topic, len), 0);
	}
	used = heap_in_use() - base;
	cr_log_info("%s: %zu topics, %zu index slots, %.1f octets each, charged %.1f", what, keep,
	            t.ix_cap, (double)used / (double)keep, (double)o.bytes / (double)keep);
	cr_assert_leq(used, o.bytes, "%s: %zu octets in the heap, %zu charged", what, used,
	              o.bytes);
	zr__subs_drop(&t, &o);
	zr__subs_fini(&t);
}

/* Random 16-octet topics: a leaf each under a wide root. */
static size_t
random16(size_t i, char *out, size_t cap)
{
	uint32_t h = (uint32_t)(i * 2654435761u);

	snprintf(out, cap, "%08x%08zx", h, i);
	return 16;
}

/* Pairs that split a 24-octet topic after 18: two labels over 8 octets
 * each, a split node and its child array per pair. */
static size_t
split24(size_t i, char *out, size_t cap)
{
	snprintf(out, cap, "%012zu-pair-%s", i / 2, i % 2 ? "odd" : "even-");
	return strlen(out);
}

Test(subs_index, the_trie_and_its_index_stay_within_the_charge)
{
#ifdef ZR_ASAN
	cr_skip_test("AddressSanitizer's allocator: mallinfo2 does not see its heap");
#endif
	within_charge("random 16", 20000, 20000, random16);
	/* The table's emptiest: just above 1/6 of 32,768 slots used. */
	within_charge("random 16, shrunk", 20000, 32768 / 6 + 1, random16);
	within_charge("split pairs", 20000, 20000, split24);
	within_charge("split pairs, shrunk", 20000, 32768 / 6 + 1, split24);
	within_charge("one topic", 1, 1, random16);
	within_charge("three topics", 3, 3, split24);
}

/* The owners collect finds for msg (len octets), as a bit set over own. */
static unsigned
owner_set(struct zr__subs *t, struct zr__subs_owner *own, const uint8_t *msg, size_t len)
{
	unsigned set = 0;

	for (struct zr__subs_owner *o = zr__subs_collect(t, msg, len); o != NULL; o = o->match_next)
		set |= 1u << (o - own);
	return set;
}

/*
 * zr__subs_same (a publisher's runs, pat_pubsub.c): two messages it calls
 * the same get the same owners from collect, over random tries of short
 * topics on a two-letter alphabet and random pairs of messages (many of
 * them sharing prefixes); a message is the same as itself; and once only
 * "" is held, every pair is the same.
 */
Test(subs_index, messages_called_the_same_match_the_same_owners)
{
	struct zr__subs t = {0};
	struct zr__subs_owner own[OWNERS];
	uint8_t a[12], b[12];
	unsigned seed = 12345, same = 0, differ = 0;

	memset(own, 0, sizeof own);
	zr__subs_seed(&t, test_key);
	for (int round = 0; round < 40; round++) {
		/* A few more topics each round: lengths 0..8 over "ab". */
		for (int k = 0; k < 3; k++) {
			uint8_t topic[8];
			size_t len = (size_t)(rand_r(&seed) % 9);

			for (size_t i = 0; i < len; i++)
				topic[i] = (uint8_t)('a' + rand_r(&seed) % 2);
			cr_assert_geq(zr__subs_add(&t, &own[rand_r(&seed) % OWNERS], topic, len,
			                           SIZE_MAX, SIZE_MAX),
			              0);
		}
		cr_assert_leq(t.max_len, 8);
		for (int pair = 0; pair < 500; pair++) {
			size_t alen = (size_t)rand_r(&seed) % sizeof a, blen;

			for (size_t i = 0; i < alen; i++)
				a[i] = (uint8_t)('a' + rand_r(&seed) % 2);
			/* b: a's first octets, then its own. */
			blen = (size_t)rand_r(&seed) % sizeof b;
			for (size_t i = 0; i < blen; i++)
				b[i] = i < alen && rand_r(&seed) % 4 != 0
				               ? a[i]
				               : (uint8_t)('a' + rand_r(&seed) % 2);
			cr_assert(zr__subs_same(&t, a, alen, a, alen), "a message is itself");
			if (zr__subs_same(&t, a, alen, b, blen)) {
				same++;
				cr_assert_eq(
					owner_set(&t, own, a, alen), owner_set(&t, own, b, blen),
					"called the same, matched otherwise (round %d)", round);
			} else {
				differ++;
			}
		}
	}
	cr_assert_gt(same, 1000, "the pairs must exercise both answers");
	cr_assert_gt(differ, 1000);
	/* Only "" held: every message matches the same, so every pair is. */
	for (int k = 0; k < OWNERS; k++)
		zr__subs_drop(&t, &own[k]);
	cr_assert_eq(t.max_len, 0);
	cr_assert_geq(zr__subs_add(&t, &own[0], (const uint8_t *)"", 0, SIZE_MAX, SIZE_MAX), 0);
	cr_assert(zr__subs_same(&t, (const uint8_t *)"abc", 3, (const uint8_t *)"x", 1));
	cr_assert(zr__subs_same(&t, NULL, 0, (const uint8_t *)"x", 1));
	zr__subs_drop(&t, &own[0]);
	zr__subs_fini(&t);
}
