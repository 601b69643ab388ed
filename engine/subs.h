/*
 * Subscriptions: a compressed (radix) trie mapping a topic prefix to the
 * owners that hold it, each with a count. One trie per socket: a PUB/XPUB's
 * maps what its subscribers asked for to their connections (one walk of a
 * message's frame 0 finds every matching subscriber, as libzmq's mtrie), a
 * SUB/XSUB's holds its own filter under one owner.
 *
 * Every operation on peer input is a loop bounded by the topic's length,
 * never a recursion (a recursive trie walk lets a peer's long topics
 * exhaust the io thread's stack), and what one owner holds is counted so the
 * socket can
 * bound it: n (subscriptions, duplicates included) and bytes (the topic
 * bytes plus ZR__SUBS_ENTRY_COST per distinct topic, an upper bound on the
 * trie's memory for that entry: a holder, at most two nodes, their labels'
 * allocations, a child slot and its share of the exact-topic index that
 * collect and match use when the topics held have few distinct lengths).
 * Pure: no I/O, no engine types, so the fuzz harness links it alone (the
 * index's hash key is given: zr__subs_seed).
 */
#ifndef ZR_ENGINE_SUBS_H
#define ZR_ENGINE_SUBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Charged per distinct topic an owner holds, beside the topic's bytes (see
 * subs.c for the sum it covers; measured with tests/engine/test_subs_limits.c). */
#define ZR__SUBS_ENTRY_COST 352u

struct zr__subs_node;
struct zr__subs_hold;
struct zr__subs_slot;

/* Distinct topic lengths the exact-topic index serves (more, or a topic
 * over 64 octets: the walk). */
#define ZR__SUBS_IX_LENS 4

struct zr__subs {
	struct zr__subs_node *root; /* the empty prefix; made on the first add */
	uint64_t stamp;             /* per zr__subs_collect: dedupes owners */
	size_t nodes;               /* the root included: at most 1 + 2 x topics */
	/* The exact-topic index (subs.c): every node with holders but the root,
	 * by its whole topic, in an open-addressed table keyed with ix_key. */
	struct zr__subs_slot *ix;
	size_t ix_cap;      /* slots: 0 or a power of two */
	size_t held;        /* nodes with holders, the root excluded */
	size_t max_len;     /* no topic held is longer (a bound: 0 once only the root holds) */
	uint64_t ix_key[2]; /* SipHash-2-4's key (zr__subs_seed) */
	bool ix_lost;       /* an allocation failed: ix misses nodes until rebuilt */
	uint8_t nlens;      /* lens[0 .. nlens): ascending, each count > 0 */
	uint32_t lens[ZR__SUBS_IX_LENS], lens_n[ZR__SUBS_IX_LENS];
	size_t lens_other; /* topics held whose length is not in lens */
	size_t lens_long;  /* topics held too long to look up (subs.c) */
	size_t lens_wait;  /* queries since lens may be counted better */
};

/* Keys the index's hash (16 random octets): a peer that cannot guess the key
 * cannot pick topics that collide. Before the first add; an unseeded trie
 * (the key all zero) works the same, only predictably. */
void zr__subs_seed(struct zr__subs *t, const uint8_t key[16]);

#ifdef ZR_SUBS_FAULTS
/* Given by the fuzz harness: whether t's index's next allocation fails. */
bool zr__subs_fault(struct zr__subs *t);
#endif

/* SipHash-2-4 of p under key (two little-endian words), as libsodium's
 * crypto_shorthash gives it in little-endian order. */
uint64_t zr__subs_siphash(const uint64_t key[2], const uint8_t *p, size_t len);

/* What one owner (a subscriber connection, or a SUB's own filter) holds. */
struct zr__subs_owner {
	struct zr__subs_hold *held, *last; /* its entries, oldest first, each in
	                                      one node's list too */
	size_t n;                          /* subscriptions, each count included */
	size_t bytes;                      /* topic bytes + ZR__SUBS_ENTRY_COST per entry */
	uint64_t stamp;                    /* the last collect that found it */
	struct zr__subs_owner *match_next; /* the collect's list */
};

/* zr__subs_add's result bits (0: only a count moved). */
#define ZR__SUBS_NEW_OWNER 1 /* the owner did not hold the topic */
#define ZR__SUBS_NEW_TRIE 2  /* nobody did */

/* Adds one count of topic for o. max_n / max_bytes (SIZE_MAX: none) bound
 * o->n and o->bytes: an add past either changes nothing and returns
 * -EDQUOT. Returns the bits above, or -ENOMEM. */
int zr__subs_add(struct zr__subs *t, struct zr__subs_owner *o, const uint8_t *topic, size_t len,
                 size_t max_n, size_t max_bytes);

/* zr__subs_remove's result bits (0: o does not hold topic, nothing changed). */
#define ZR__SUBS_HELD 1       /* o held it: one count went */
#define ZR__SUBS_GONE_OWNER 2 /* ... its last count */
#define ZR__SUBS_GONE_TRIE 4  /* ... and nobody else holds it */

int zr__subs_remove(struct zr__subs *t, struct zr__subs_owner *o, const uint8_t *topic, size_t len);

/* Without changing anything: what zr__subs_remove would return. */
int zr__subs_peek_remove(const struct zr__subs *t, const struct zr__subs_owner *o,
                         const uint8_t *topic, size_t len);

/* The owners holding a prefix of data, each once, linked by match_next
 * (NULL: none). No allocation; the list is valid until the trie changes. */
struct zr__subs_owner *zr__subs_collect(struct zr__subs *t, const uint8_t *data, size_t len);

/* Whether anybody holds a prefix of data. (Not const: it may recount the
 * lengths the index needs, see subs.c.) */
bool zr__subs_match(struct zr__subs *t, const uint8_t *data, size_t len);

/* Whether a and b match the same holders (each topic held is a prefix of
 * both or of neither): true when they agree as far as the longest topic
 * held may reach. Cheaper than two collects; a false "no" is allowed. */
bool zr__subs_same(const struct zr__subs *t, const uint8_t *a, size_t alen, const uint8_t *b,
                   size_t blen);

/* Walking what an owner holds: o->held, then zr__subs_next. */
struct zr__subs_hold *zr__subs_next(const struct zr__subs_hold *h);
uint32_t zr__subs_count(const struct zr__subs_hold *h);
/* Whether h is the only holder of its topic. */
bool zr__subs_sole(const struct zr__subs_hold *h);
/* The topic's length; with out != NULL, also its bytes (out holds that many). */
size_t zr__subs_topic(const struct zr__subs_hold *h, uint8_t *out);

/* Removes everything o holds. */
void zr__subs_drop(struct zr__subs *t, struct zr__subs_owner *o);
/* Frees the trie; every owner must have been dropped. */
void zr__subs_fini(struct zr__subs *t);

#endif /* ZR_ENGINE_SUBS_H */
