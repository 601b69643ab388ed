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
 * allocations and a child slot). Pure: no I/O, no engine types, so the fuzz
 * harness links it alone.
 */
#ifndef ZR_ENGINE_SUBS_H
#define ZR_ENGINE_SUBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Charged per distinct topic an owner holds, beside the topic's bytes (see
 * subs.c for the sum it covers; measured with tests/engine/test_subs_limits.c). */
#define ZR__SUBS_ENTRY_COST 256u

struct zr__subs_node;
struct zr__subs_hold;

struct zr__subs {
	struct zr__subs_node *root; /* the empty prefix; made on the first add */
	uint64_t stamp;             /* per zr__subs_collect: dedupes owners */
	size_t nodes;               /* the root included: at most 1 + 2 x topics */
};

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

/* Whether anybody holds a prefix of data. */
bool zr__subs_match(const struct zr__subs *t, const uint8_t *data, size_t len);

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
