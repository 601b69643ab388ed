/*
 * The subscription trie (subs.h). A node's label is the part of the topic
 * between its parent and itself (inside the node when short); its children
 * are sorted by their label's first byte, which the child array keeps
 * beside the pointers (one binary search over bytes per step, touching no
 * child but the one taken); its holders are a list of (owner, count).
 * Invariant: every node but the root has holders or at least two children,
 * so a topic costs at most two nodes and the trie never holds more than
 * twice as many nodes as distinct topics.
 *
 * Beside it, an exact-topic index: every node with holders but the root,
 * by its whole topic, in an open-addressed table (linear probing, load at
 * most 1/2, backward-shift deletion) keyed with SipHash-2-4 under a
 * per-trie random key, so a peer cannot aim its topics at one slot. A
 * message matches a subscription when the subscription is a prefix of its
 * frame 0; when the topics held have few distinct lengths (up to
 * ZR__SUBS_IX_LENS, "" included) and none is longer than IX_LEN_MAX, collect
 * and match look up each of those prefixes of the frame (one SipHash pass
 * over the longest) instead of walking the trie: the walk's dependent
 * misses (node, child array, child, per level: a publisher with 10,000
 * topics spent ~42% of its time there, its subscribers ~37% in match)
 * become one or two. A node with holders keeps its identity (a split keeps
 * the holders' node; prune only merges or removes nodes without holders),
 * so the index only changes when a node gets its first holder or loses
 * its last. More distinct lengths, a longer topic, or an allocation
 * failure, and the walk answers instead: same results, every time.
 *
 * What one distinct topic of length L can cost, with glibc's 16-octet
 * chunks (8 of header): its holder (64) + a leaf node (48) + a split node
 * (48) + the split node's two-slot child array (two pointers and their
 * first bytes: 32) + two labels holding L bytes between them (L + 48 at
 * most; none for a label of up to 8 octets, kept in its node) + its share
 * of the index's table (16-octet slots, at least 1/6 of them used but in
 * the smallest table of 4, with the chunk header and any page rounding of
 * a large one: 100 at most, ~96 of it slots) = L + 340, or, without a
 * split, a holder, a node, a label, a child slot (amortised doubling: 27)
 * and the table share = L + 263. ZR__SUBS_ENTRY_COST (352) covers both;
 * tests/engine/test_subs_index.c measures the heap against it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "subs.h"

struct zr__subs_node {
	struct zr__subs_node *parent;
	struct zr__subs_node **kids; /* sorted by label[0]; kcap pointers, then
	                                kcap first bytes (kid_bytes) */
	struct zr__subs_hold *holders;
	union {
		uint8_t *ptr;   /* len > LABEL_INL */
		uint8_t inl[8]; /* len <= LABEL_INL: no allocation, no miss */
	} lab;
	uint32_t len;
	uint16_t nkids, kcap; /* at most 256: one per first byte */
};

#define LABEL_INL sizeof(((struct zr__subs_node *)0)->lab.inl)

static inline const uint8_t *
label_of(const struct zr__subs_node *n)
{
	return n->len <= LABEL_INL ? n->lab.inl : n->lab.ptr;
}

/* n's label becomes len octets from src, which may be inside it. Allocates
 * only for a label longer than both LABEL_INL and the one it replaces
 * (a split only shortens: it never allocates). Returns 0 or -ENOMEM
 * (nothing changed). */
static int
label_set(struct zr__subs_node *n, const uint8_t *src, size_t len)
{
	uint8_t *old = n->len > LABEL_INL ? n->lab.ptr : NULL;

	if (len <= LABEL_INL) {
		uint8_t tmp[LABEL_INL];

		if (len > 0)
			memcpy(tmp, src, len);
		free(old);
		if (len > 0)
			memcpy(n->lab.inl, tmp, len);
	} else if (old != NULL && len <= n->len) {
		memmove(old, src, len);
	} else {
		uint8_t *p = malloc(len);

		if (p == NULL)
			return -ENOMEM;
		memcpy(p, src, len);
		free(old);
		n->lab.ptr = p;
	}
	n->len = (uint32_t)len;
	return 0;
}

/* The first byte of each child's label, in the kids array's tail. */
static inline uint8_t *
kid_bytes(const struct zr__subs_node *n)
{
	return (uint8_t *)(n->kids + n->kcap);
}

#define KID_SLOT (sizeof(struct zr__subs_node *) + 1)

/* Whether label (len octets) equals the start of data: short labels are the
 * common case, not worth a call. */
static inline bool
label_eq(const uint8_t *label, const uint8_t *data, size_t len)
{
	if (len > 16)
		return memcmp(label, data, len) == 0;
	for (size_t i = 0; i < len; i++)
		if (label[i] != data[i])
			return false;
	return true;
}

struct zr__subs_hold {
	struct zr__subs_node *node;
	struct zr__subs_owner *owner;
	struct zr__subs_hold *nnext, *nprev; /* the node's holders */
	struct zr__subs_hold *onext, *oprev; /* the owner's entries */
	uint32_t count;
	uint32_t home; /* the node's topic's hash (ix_probe), in every holder:
	                  finds its slot without the topic */
};

/* Index of the child whose label starts with b (1), or where it would go (0). */
static int
kid_find(const struct zr__subs_node *n, uint8_t b, size_t *at)
{
	const uint8_t *kb;
	size_t lo = 0, hi = n->nkids;

	if (hi == 0) {
		*at = 0;
		return 0; /* kids may be NULL */
	}
	kb = kid_bytes(n);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint8_t m = kb[mid];

		if (m == b) {
			*at = mid;
			return 1;
		}
		if (m < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return 0;
}

static int
kid_room(struct zr__subs_node *n)
{
	struct zr__subs_node **v;
	uint16_t cap;

	if (n->nkids < n->kcap)
		return 0;
	cap = n->kcap ? (uint16_t)(n->kcap * 2) : 2;
	v = realloc(n->kids, cap * KID_SLOT);
	if (v == NULL)
		return -ENOMEM;
	/* The first bytes move up behind the larger pointer table. */
	memmove(v + cap, v + n->kcap, n->nkids);
	n->kids = v;
	n->kcap = cap;
	return 0;
}

static void
kid_insert(struct zr__subs_node *n, size_t at, struct zr__subs_node *k)
{
	uint8_t *kb = kid_bytes(n);

	memmove(n->kids + at + 1, n->kids + at, (n->nkids - at) * sizeof *n->kids);
	memmove(kb + at + 1, kb + at, n->nkids - at);
	n->kids[at] = k;
	kb[at] = label_of(k)[0];
	n->nkids++;
	k->parent = n;
}

static void
kid_erase(struct zr__subs_node *n, size_t at)
{
	uint8_t *kb = kid_bytes(n);

	memmove(n->kids + at, n->kids + at + 1, (n->nkids - at - 1) * sizeof *n->kids);
	memmove(kb + at, kb + at + 1, n->nkids - at - 1);
	n->nkids--;
	/* Shrink, so a node that lost most of its children gives the room back
	 * (the accounting charges each topic only its share of one array). */
	if (n->nkids == 0) {
		free(n->kids);
		n->kids = NULL;
		n->kcap = 0;
	} else if (n->kcap > 2 && n->nkids <= n->kcap / 4) {
		uint16_t cap = (uint16_t)(n->kcap / 2);
		struct zr__subs_node **v;

		/* The first bytes move down first: realloc keeps the front. */
		memmove(n->kids + cap, kb, n->nkids);
		v = realloc(n->kids, cap * KID_SLOT);
		if (v != NULL) {
			n->kids = v;
			n->kcap = cap;
		} else {
			memmove(kb, n->kids + cap, n->nkids);
		}
	}
}

static struct zr__subs_node *
node_new(const uint8_t *label, size_t len)
{
	struct zr__subs_node *n = calloc(1, sizeof *n);

	if (n == NULL)
		return NULL;
	if (label_set(n, label, len) < 0) {
		free(n);
		return NULL;
	}
	n->len = (uint32_t)len;
	return n;
}

static void
node_free(struct zr__subs_node *n)
{
	if (n->len > LABEL_INL)
		free(n->lab.ptr);
	free(n->kids);
	free(n);
}

static struct zr__subs_node *
node_find(const struct zr__subs *t, const uint8_t *topic, size_t len)
{
	struct zr__subs_node *n = t->root;
	size_t i = 0, at;

	if (n == NULL)
		return NULL;
	while (i < len) {
		struct zr__subs_node *k;

		if (!kid_find(n, topic[i], &at))
			return NULL;
		k = n->kids[at];
		if (k->len > len - i || !label_eq(label_of(k), topic + i, k->len))
			return NULL;
		i += k->len;
		n = k;
	}
	return n;
}

/*
 * The node for topic, made if missing. Only the last step changes the trie
 * (a leaf under an existing node, or a split with possibly a leaf under
 * it), and it allocates everything before it changes anything: a failure
 * leaves the trie as it was.
 */
static struct zr__subs_node *
node_make(struct zr__subs *t, const uint8_t *topic, size_t len)
{
	struct zr__subs_node *n, *k, *p, *leaf = NULL;
	size_t i = 0, at, m;

	if (t->root == NULL) {
		if ((t->root = node_new(NULL, 0)) == NULL)
			return NULL;
		t->nodes = 1;
	}
	n = t->root;
	while (i < len) {
		if (!kid_find(n, topic[i], &at)) {
			leaf = node_new(topic + i, len - i);
			if (leaf == NULL || kid_room(n) < 0) {
				if (leaf != NULL)
					node_free(leaf);
				return NULL;
			}
			kid_insert(n, at, leaf);
			t->nodes++;
			return leaf;
		}
		k = n->kids[at]; /* NOLINT(clang-analyzer-core.NullDereference): found, so nkids > 0 */
		for (m = 0; m < k->len && i + m < len && label_of(k)[m] == topic[i + m]; m++)
			;
		if (m == k->len) {
			i += m;
			n = k;
			continue;
		}
		/* Split k after m octets: p takes the common part, k keeps its
		 * identity (its holders point at it) with the rest of its label. */
		p = node_new(label_of(k), m);
		if (p == NULL)
			return NULL;
		p->kcap = 2;
		p->kids = malloc(2 * KID_SLOT);
		if (p->kids == NULL ||
		    (i + m < len && (leaf = node_new(topic + i + m, len - i - m)) == NULL)) {
			node_free(p);
			return NULL;
		}
		(void)label_set(k, label_of(k) + m, k->len - m); /* shorter: no allocation */
		n->kids[at] = p;
		p->parent = n;
		p->kids[0] = k;
		kid_bytes(p)[0] = label_of(k)[0];
		p->nkids = 1;
		k->parent = p;
		t->nodes++;
		if (leaf == NULL)
			return p;
		t->nodes++;
		kid_insert(p, label_of(leaf)[0] < label_of(k)[0] ? 0 : 1, leaf);
		return leaf;
	}
	return n;
}

/* A node p with neither holders nor children goes; one with a single child
 * and no holders gives its label to the child and goes. */
static void
node_prune(struct zr__subs *t, struct zr__subs_node *n)
{
	while (n != t->root && n->holders == NULL) {
		struct zr__subs_node *p = n->parent, *k;
		size_t at;

		(void)kid_find(p, label_of(n)[0], &at);
		if (n->nkids == 0) {
			kid_erase(p, at);
			node_free(n);
			t->nodes--;
			n = p;
			continue;
		}
		if (n->nkids > 1)
			return;
		k = n->kids[0];
		{
			/* k's label grows in front by n's: build it whole first. */
			size_t total = (size_t)n->len + k->len;
			uint8_t small[LABEL_INL], *buf = total <= LABEL_INL ? small : malloc(total);

			if (buf == NULL)
				return; /* left unmerged: still a correct trie */
			memcpy(buf, label_of(n), n->len);
			memcpy(buf + n->len, label_of(k), k->len);
			if (total <= LABEL_INL) {
				(void)label_set(k, buf, total); /* inline: no allocation */
			} else {
				if (k->len > LABEL_INL)
					free(k->lab.ptr);
				k->lab.ptr = buf;
				k->len = (uint32_t)total;
			}
		}
		k->parent = p;
		p->kids[at] = k; /* same first octet: the order holds */
		node_free(n);
		t->nodes--;
		return;
	}
}

static struct zr__subs_hold *
hold_of(const struct zr__subs_node *n, const struct zr__subs_owner *o)
{
	for (struct zr__subs_hold *h = n->holders; h != NULL; h = h->nnext) {
		if (h->owner == o)
			return h;
	}
	return NULL;
}

static void
hold_unlink(struct zr__subs_hold *h)
{
	struct zr__subs_node *n = h->node;
	struct zr__subs_owner *o = h->owner;

	if (h->nprev != NULL)
		h->nprev->nnext = h->nnext;
	else
		n->holders = h->nnext;
	if (h->nnext != NULL)
		h->nnext->nprev = h->nprev;
	if (h->oprev != NULL)
		h->oprev->onext = h->onext;
	else
		o->held = h->onext;
	if (h->onext != NULL)
		h->onext->oprev = h->oprev;
	else
		o->last = h->oprev;
}

/* ---- the exact-topic index --------------------------------------------- */

/*
 * A slot's ref names its node by the node's first holder, n->holders (a
 * collect goes from the slot to the holders, not through the node: one
 * miss less), or, for a short topic with a single holder, by that holder's
 * owner | REF_OWNER (the slot is then the collect's only miss: 10,000
 * topics of one subscriber each, the 10,000-topic publisher's case, went
 * from three dependent misses a message to one). 0: empty.
 */
struct zr__subs_slot {
	uintptr_t ref;
	uint64_t key; /* ix_probe's */
};

#define REF_OWNER ((uintptr_t)1) /* owners are pointer-aligned, holders malloc'd */

/* The fuzz harness fails the index's allocations at will (the index must
 * then be dropped or kept fuller, never wrong). */
#ifdef ZR_SUBS_FAULTS
#define IX_CALLOC(t, n, size) (zr__subs_fault(t) ? NULL : calloc(n, size))
#else
#define IX_CALLOC(t, n, size) calloc(n, size)
#endif

/* A topic this short is its own key: a hit needs no check, and the slot
 * can name the owner (a collect over 10,000 6-octet topics held by 10
 * owners: 25 ns, against 53 ns with the check against the labels and the
 * holder in the slot, and 55 ns for the walk; 16-octet topics: 68 ns, the
 * walk's, with a deep trie, 76 against 111 with random ones). */
#define SHORT_MAX 7
/* The longest topic collect and match look up: the index's cost on a
 * message is one SipHash pass over at most this much of it plus a finish
 * per length, which a walk might have ended at its first octet. A topic
 * held that is longer (lens_long) makes them walk. */
#define IX_LEN_MAX 64
/* Any long topic's key, for ix_slot: it finds a long topic's slot by ref. */
#define KEY_LONG ((uint64_t)255 << 56)
#define IX_MIN 4 /* slots: the smallest table */

static inline uint64_t
rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

/* SipHash's state, in steps: a collect hashes its prefixes in one pass,
 * finishing a copy of the state at each length (sip_finish). */
struct sip {
	uint64_t v0, v1, v2, v3;
};

static inline void
sip_round(struct sip *s)
{
	s->v0 += s->v1;
	s->v1 = rotl(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = rotl(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = rotl(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = rotl(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = rotl(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = rotl(s->v2, 32);
}

static inline void
sip_init(struct sip *s, const uint64_t key[2])
{
	s->v0 = key[0] ^ 0x736f6d6570736575ull;
	s->v1 = key[1] ^ 0x646f72616e646f6dull;
	s->v2 = key[0] ^ 0x6c7967656e657261ull;
	s->v3 = key[1] ^ 0x7465646279746573ull;
}

/* SipHash-2-4's compression of one 8-octet word. */
static inline void
sip_word(struct sip *s, uint64_t m)
{
	s->v3 ^= m;
	sip_round(s);
	sip_round(s);
	s->v0 ^= m;
}

/* The hash, from a copy of the state and the final word (the message's
 * length in the top octet over its last len % 8 octets). */
static inline uint64_t
sip_finish(struct sip s, uint64_t last)
{
	sip_word(&s, last);
	s.v2 ^= 0xff;
	for (int r = 0; r < 4; r++)
		sip_round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

static inline uint64_t
le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/* The n (< 8) octets at p, little-endian, in the low bytes. */
static inline uint64_t
tail_word(const uint8_t *p, size_t n)
{
	uint64_t b = 0;

	for (size_t i = 0; i < n; i++)
		b |= (uint64_t)p[i] << (8 * i);
	return b;
}

/* The final word of a message of len octets whose whole words s has
 * taken (*done octets, advanced here): for len <= SHORT_MAX, the message. */
static inline uint64_t
sip_take(struct sip *s, const uint8_t *p, size_t len, size_t *done)
{
	size_t i = *done;

	for (; len - i >= 8; i += 8)
		sip_word(s, le64(p + i));
	*done = i;
	return (uint64_t)len << 56 | tail_word(p + i, len - i);
}

/* SipHash-2-4 of len octets at p; *last gets its final word. */
static inline uint64_t
sip24(const uint64_t key[2], const uint8_t *p, size_t len, uint64_t *last)
{
	struct sip s;
	size_t done = 0;

	sip_init(&s, key);
	*last = sip_take(&s, p, len, &done);
	return sip_finish(s, *last);
}

uint64_t
zr__subs_siphash(const uint64_t key[2], const uint8_t *p, size_t len)
{
	uint64_t last;

	return sip24(key, p, len, &last);
}

void
zr__subs_seed(struct zr__subs *t, const uint8_t key[16])
{
	t->ix_key[0] = le64(key);
	t->ix_key[1] = le64(key + 8);
}

/*
 * A topic's place in the index: home, 32 bits of its keyed hash (the slot
 * it starts probing from, whatever the table's size), and key, what a slot
 * holding it carries: the topic itself, length in the top octet, when it is
 * at most SHORT_MAX octets (a match is the topic: nothing to check), else
 * the length (255 for any longer) over home, which a hit checks against
 * the node's labels (topic_is).
 */
struct ix_probe {
	uint64_t key;
	uint32_t home;
};

/* The probe from a topic's hash h and final word last. */
static inline struct ix_probe
probe_of(uint64_t h, uint64_t last, size_t len)
{
	struct ix_probe q;

	q.home = (uint32_t)(h >> 32);
	q.key = len <= SHORT_MAX ? last : (uint64_t)(len < 255 ? len : 255) << 56 | q.home;
	return q;
}

static inline struct ix_probe
ix_probe(const struct zr__subs *t, const uint8_t *p, size_t len)
{
	uint64_t last, h = sip24(t->ix_key, p, len, &last);

	return probe_of(h, last, len);
}

/* A slot's home from its key alone (a move or a resize): a short topic's is
 * hashed again, a long one's is in it. */
static uint32_t
key_home(const struct zr__subs *t, uint64_t key)
{
	uint8_t b[SHORT_MAX];
	size_t len = (size_t)(key >> 56);
	uint64_t last;

	if (len > SHORT_MAX)
		return (uint32_t)key;
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(key >> (8 * i));
	return (uint32_t)(sip24(t->ix_key, b, len, &last) >> 32);
}

/* Whether n's whole topic is the len octets at p: its labels, backwards
 * through the parent links (the upper nodes are the ones every walk
 * visits, so mostly cached). */
static bool
topic_is(const struct zr__subs_node *n, const uint8_t *p, size_t len)
{
	size_t at = len;

	for (; n->parent != NULL; n = n->parent) {
		if (n->len > at)
			return false;
		at -= n->len;
		if (!label_eq(label_of(n), p + at, n->len))
			return false;
	}
	return at == 0;
}

static inline bool
key_short(uint64_t key)
{
	return key >> 56 <= SHORT_MAX;
}

/* The key ix_slot finds topic's slot by. */
static inline uint64_t
find_key(const uint8_t *topic, size_t len)
{
	return len <= SHORT_MAX ? (uint64_t)len << 56 | tail_word(topic, len) : KEY_LONG;
}

static inline const struct zr__subs_hold *
ref_hold(uintptr_t ref)
{
	return (const struct zr__subs_hold *)ref; /* NOLINT(performance-no-int-to-ptr) */
}

static inline struct zr__subs_owner *
ref_owner(uintptr_t ref)
{
	return (struct zr__subs_owner *)(ref - REF_OWNER); /* NOLINT(performance-no-int-to-ptr) */
}

/* The ref of the slot of the len (> 0) octets at p, probe q, or 0: the
 * topic is not held. The table keeps an empty slot, so the probe ends. */
static inline uintptr_t
ix_lookup(const struct zr__subs *t, struct ix_probe q, const uint8_t *p, size_t len)
{
	size_t mask = t->ix_cap - 1;

	if (t->ix_cap == 0)
		return 0;
	for (size_t i = q.home & mask;; i = (i + 1) & mask) {
		const struct zr__subs_slot *s = &t->ix[i];

		if (s->ref == 0)
			return 0;
		/* A long topic's ref is a holder, never an owner. */
		if (s->key == q.key &&
		    (len <= SHORT_MAX || topic_is(ref_hold(s->ref)->node, p, len)))
			return s->ref;
	}
}

static uintptr_t
ix_find(const struct zr__subs *t, const uint8_t *p, size_t len)
{
	return t->ix_cap > 0 ? ix_lookup(t, ix_probe(t, p, len), p, len) : 0;
}

/* ix_find of data's prefix of len octets, for the lengths held in
 * ascending order: s has taken *done octets of data, so the prefixes cost
 * one pass over the longest and a finish each. */
static inline uintptr_t
ix_find_prefix(const struct zr__subs *t, struct sip *s, size_t *done, const uint8_t *data,
               size_t len)
{
	uint64_t last = sip_take(s, data, len, done);

	return ix_lookup(t, probe_of(sip_finish(*s, last), last, len), data, len);
}

/* What n's slot holds (n has holders; key: its topic's). */
static inline uintptr_t
node_ref(const struct zr__subs_node *n, uint64_t key)
{
	const struct zr__subs_hold *h = n->holders;

	if (key_short(key) && h->nnext == NULL)
		return (uintptr_t)h->owner | REF_OWNER;
	return (uintptr_t)h;
}

/* Whether collect and match may use the index: it holds every node with
 * holders, and every topic held has one of lens[]'s lengths. */
static inline bool
ix_ready(const struct zr__subs *t)
{
	return t->lens_other == 0 && t->lens_long == 0 && !t->ix_lost;
}

static void
ix_put(struct zr__subs_slot *v, size_t cap, uintptr_t ref, uint64_t key, uint32_t home)
{
	size_t mask = cap - 1, i = home & mask;

	while (v[i].ref != 0)
		i = (i + 1) & mask;
	v[i].ref = ref;
	v[i].key = key;
}

/* The slot of a topic in the table: a short one's by its key (find_key),
 * a long one's by its ref. */
static size_t
ix_slot(const struct zr__subs *t, uint64_t key, uintptr_t ref, uint32_t home)
{
	size_t mask = t->ix_cap - 1, i = home & mask;
	bool by_key = key_short(key);

	while (t->ix[i].ref == 0 || (by_key ? t->ix[i].key != key : t->ix[i].ref != ref))
		i = (i + 1) & mask;
	return i;
}

/* The table moves to cap slots (a power of two, more than held).
 * Returns 0 or -ENOMEM (nothing changed). */
static int
ix_resize(struct zr__subs *t, size_t cap)
{
	struct zr__subs_slot *v = IX_CALLOC(t, cap, sizeof *v);

	if (v == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < t->ix_cap; i++) {
		if (t->ix[i].ref != 0)
			ix_put(v, cap, t->ix[i].ref, t->ix[i].key, key_home(t, t->ix[i].key));
	}
	free(t->ix);
	t->ix = v;
	t->ix_cap = cap;
	return 0;
}

/* An allocation failed and the table cannot take a node: it goes, and
 * collect and match walk the trie until ix_rebuild makes it again. */
static void
ix_lose(struct zr__subs *t)
{
	free(t->ix);
	t->ix = NULL;
	t->ix_cap = 0;
	t->ix_lost = true;
}

/* n's topic's length: its labels up to the root. */
static size_t
node_depth(const struct zr__subs_node *n)
{
	size_t len = 0;

	for (; n != NULL; n = n->parent)
		len += n->len;
	return len;
}

/* Writes n's topic, depth octets (node_depth), into out: its labels from
 * the last back to the root's. */
static void
node_topic(const struct zr__subs_node *n, size_t depth, uint8_t *out)
{
	for (size_t at = depth; n != NULL; n = n->parent) {
		at -= n->len;
		if (n->len > 0)
			memcpy(out + at, label_of(n), n->len);
	}
}

/* find_key of n's topic, depth octets. */
static uint64_t
node_find_key(const struct zr__subs_node *n, size_t depth)
{
	uint8_t b[SHORT_MAX] = {0}; /* every octet written: the labels add up to depth */

	if (depth > SHORT_MAX)
		return KEY_LONG;
	node_topic(n, depth, b);
	return find_key(b, depth);
}

/* ix_probe's key of n's topic, depth octets, rebuilt from the trie. */
static uint64_t
node_key(const struct zr__subs_node *n, size_t depth)
{
	if (depth > SHORT_MAX)
		return (uint64_t)(depth < 255 ? depth : 255) << 56 | n->holders->home;
	return node_find_key(n, depth);
}

/* The node after n in preorder (NULL: none), *depth its topic's length:
 * through the parent links, no stack. */
static struct zr__subs_node *
preorder_next(const struct zr__subs *t, struct zr__subs_node *n, size_t *depth)
{
	size_t at;

	if (n->nkids > 0) {
		n = n->kids[0];
		*depth += n->len;
		return n;
	}
	for (; n != t->root; n = n->parent) {
		struct zr__subs_node *p = n->parent;

		(void)kid_find(p, label_of(n)[0], &at);
		*depth -= n->len;
		if (at + 1 < p->nkids) {
			n = p->kids[at + 1];
			*depth += n->len;
			return n;
		}
	}
	return NULL;
}

/* A lost index made again from the trie. An allocation failure leaves it
 * lost. */
static void
ix_rebuild(struct zr__subs *t)
{
	size_t cap = IX_MIN, depth = 0;

	while (cap < 2 * t->held)
		cap *= 2;
	ix_lose(t);
	t->ix = IX_CALLOC(t, cap, sizeof *t->ix);
	if (t->ix == NULL)
		return;
	t->ix_cap = cap;
	t->ix_lost = false;
	for (struct zr__subs_node *n = t->root; n != NULL; n = preorder_next(t, n, &depth)) {
		if (n != t->root && n->holders != NULL) {
			uint64_t key = node_key(n, depth);

			ix_put(t->ix, cap, node_ref(n, key), key, n->holders->home);
		}
	}
}

/* n (not the root) got its first holder, linked; t->held counts it. */
static void
ix_insert(struct zr__subs *t, const struct zr__subs_node *n, uint64_t key, uint32_t home)
{
	if (t->ix_lost) {
		ix_rebuild(t); /* n included */
		return;
	}
	/* Load at most 1/2; a failed growth goes on fuller, keeping one slot
	 * empty for the probes to end. */
	if (2 * t->held > t->ix_cap && ix_resize(t, t->ix_cap > 0 ? 2 * t->ix_cap : IX_MIN) < 0 &&
	    t->held >= t->ix_cap) {
		ix_lose(t);
		return;
	}
	ix_put(t->ix, t->ix_cap, node_ref(n, key), key, home);
}

/* n's holders changed (n has some; key: find_key, old: the slot's ref
 * before, for a long topic): its slot follows. */
static void
ix_refresh(struct zr__subs *t, const struct zr__subs_node *n, uint64_t key, uintptr_t old,
           uint32_t home)
{
	if (!t->ix_lost)
		t->ix[ix_slot(t, key, old, home)].ref = node_ref(n, key);
}

/* A node (not the root) lost its last holder (key, old: as ix_refresh's);
 * t->held no longer counts it. Backward-shift deletion: each slot after it
 * in the run moves back when its home allows, so no tombstone lengthens
 * later probes. */
static void
ix_erase(struct zr__subs *t, uint64_t key, uintptr_t old, uint32_t home)
{
	size_t mask = t->ix_cap - 1, i, j;

	if (t->held == 0) {
		/* Empty: the table goes, and a lost index is whole again. */
		free(t->ix);
		t->ix = NULL;
		t->ix_cap = 0;
		t->ix_lost = false;
		return;
	}
	if (t->ix_lost)
		return;
	i = ix_slot(t, key, old, home);
	for (j = (i + 1) & mask; t->ix[j].ref != 0; j = (j + 1) & mask) {
		size_t k = key_home(t, t->ix[j].key) & mask;

		/* j stays when its home lies cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		t->ix[i] = t->ix[j];
		i = j;
	}
	t->ix[i].ref = 0;
	/* Shrink below 1/6 (growth leaves 1/4: no thrashing at the edge). */
	if (t->ix_cap > IX_MIN && 6 * t->held < t->ix_cap)
		(void)ix_resize(t, t->ix_cap / 2); /* failing, it stays larger */
}

/* The distinct lengths held, counted; see subs.h. A topic longer than
 * IX_LEN_MAX is counted in lens_long (exactly); a length with no room in
 * lens, in lens_other; a topic removed is taken from its length's count
 * when lens has it, else from lens_other. So lens_n[k] never exceeds the
 * topics of length lens[k] held, and lens_other == 0 means that every
 * topic held has its length in lens. */
static void
lens_add(struct zr__subs *t, size_t len)
{
	size_t k;

	if (len > IX_LEN_MAX) {
		t->lens_long++;
		return;
	}
	for (k = 0; k < t->nlens; k++) {
		if (t->lens[k] == len) {
			t->lens_n[k]++;
			return;
		}
	}
	if (t->nlens == ZR__SUBS_IX_LENS) {
		t->lens_other++;
		return;
	}
	for (k = t->nlens; k > 0 && t->lens[k - 1] > len; k--) {
		t->lens[k] = t->lens[k - 1];
		t->lens_n[k] = t->lens_n[k - 1];
	}
	t->lens[k] = (uint32_t)len; /* zr__subs_add bounds len */
	t->lens_n[k] = 1;
	t->nlens++;
}

/*
 * lens counted again from the trie. Only worth it when some length has no
 * place while a place is free (the lengths that had one went), and only
 * after as many queries as topics held since that began: a peer flipping
 * its lengths back and forth costs O(1) a query, amortised.
 */
static void
lens_recount(struct zr__subs *t)
{
	size_t depth = 0;

	t->nlens = 0;
	t->lens_other = 0;
	t->lens_long = 0;
	t->lens_wait = 0;
	for (struct zr__subs_node *n = t->root; n != NULL; n = preorder_next(t, n, &depth)) {
		if (n->holders != NULL)
			lens_add(t, depth);
	}
}

/* Whether the slow path of a query should count towards lens_recount. */
static inline bool
lens_stale(const struct zr__subs *t)
{
	return t->lens_other > 0 && t->nlens < ZR__SUBS_IX_LENS;
}

static void
lens_del(struct zr__subs *t, size_t len)
{
	if (len > IX_LEN_MAX) {
		t->lens_long--;
		return;
	}
	for (size_t k = 0; k < t->nlens; k++) {
		if (t->lens[k] != len)
			continue;
		if (--t->lens_n[k] == 0) {
			t->nlens--;
			memmove(t->lens + k, t->lens + k + 1, (t->nlens - k) * sizeof *t->lens);
			memmove(t->lens_n + k, t->lens_n + k + 1,
			        (t->nlens - k) * sizeof *t->lens_n);
		}
		return;
	}
	t->lens_other--;
}

/* h, n's holder, left n's list (unlinked, not yet freed; was_first: it
 * was at its head): the index and the lengths follow. len, key: n's
 * topic's length and find_key. */
static void
hold_gone(struct zr__subs *t, const struct zr__subs_node *n, const struct zr__subs_hold *h,
          bool was_first, size_t len, uint64_t key)
{
	if (n->holders == NULL) {
		lens_del(t, len);
		if (n != t->root) {
			t->held--;
			ix_erase(t, key, (uintptr_t)h, h->home);
			if (t->held == 0)
				t->max_len = 0; /* the root's "" at most */
		}
	} else if (n != t->root && (was_first || key_short(key))) {
		ix_refresh(t, n, key, (uintptr_t)h, h->home); /* a new first, or one holder */
	}
}

/* The node with holders whose topic is topic, or NULL (no holders either). */
static struct zr__subs_node *
held_find(const struct zr__subs *t, const uint8_t *topic, size_t len)
{
	uintptr_t ref;

	if (t->ix_lost)
		return node_find(t, topic, len);
	if (len == 0)
		return t->root;
	ref = ix_find(t, topic, len);
	if (ref & REF_OWNER)
		return node_find(t, topic, len); /* the slot does not name the node */
	return ref != 0 ? ref_hold(ref)->node : NULL;
}

int
zr__subs_add(struct zr__subs *t, struct zr__subs_owner *o, const uint8_t *topic, size_t len,
             size_t max_n, size_t max_bytes)
{
	struct zr__subs_node *n;
	struct zr__subs_hold *h;
	size_t cost = len + ZR__SUBS_ENTRY_COST;
	struct ix_probe q = {0, 0};
	bool fresh;

	if (o->n >= max_n)
		return -EDQUOT;
	n = held_find(t, topic, len);
	h = n != NULL ? hold_of(n, o) : NULL;
	if (h != NULL) {
		h->count++;
		o->n++;
		return 0;
	}
	if (len > UINT32_MAX || o->bytes > max_bytes || cost > max_bytes - o->bytes || cost < len)
		return -EDQUOT;
	h = calloc(1, sizeof *h);
	if (h == NULL)
		return -ENOMEM;
	if (n == NULL && (n = node_make(t, topic, len)) == NULL) {
		free(h);
		return -ENOMEM;
	}
	fresh = n->holders == NULL;
	if (fresh) {
		q = n != t->root ? ix_probe(t, topic, len) : q;
		h->home = q.home;
	} else {
		h->home = n->holders->home;
	}
	h->node = n;
	h->owner = o;
	h->count = 1;
	h->nnext = n->holders;
	if (n->holders != NULL)
		n->holders->nprev = h;
	n->holders = h;
	/* Oldest first: a SUB re-sends its filter in the order it was made. */
	h->oprev = o->last;
	if (o->last != NULL)
		o->last->onext = h;
	else
		o->held = h;
	o->last = h;
	o->n++;
	o->bytes += cost;
	if (fresh) {
		/* Linked first: a rebuild of the index finds n by its holders. */
		lens_add(t, len);
		if (len > t->max_len)
			t->max_len = len;
		if (n != t->root) {
			t->held++;
			ix_insert(t, n, q.key, q.home);
		}
	} else if (n != t->root) {
		/* A new first holder, and more than one. */
		ix_refresh(t, n, find_key(topic, len), (uintptr_t)h->nnext, h->home);
	}
	return ZR__SUBS_NEW_OWNER | (fresh ? ZR__SUBS_NEW_TRIE : 0);
}

int
zr__subs_peek_remove(const struct zr__subs *t, const struct zr__subs_owner *o, const uint8_t *topic,
                     size_t len)
{
	struct zr__subs_node *n = held_find(t, topic, len);
	struct zr__subs_hold *h = n != NULL ? hold_of(n, o) : NULL;

	if (h == NULL)
		return 0;
	if (h->count > 1)
		return ZR__SUBS_HELD;
	if (n->holders == h && h->nnext == NULL)
		return ZR__SUBS_HELD | ZR__SUBS_GONE_OWNER | ZR__SUBS_GONE_TRIE;
	return ZR__SUBS_HELD | ZR__SUBS_GONE_OWNER;
}

int
zr__subs_remove(struct zr__subs *t, struct zr__subs_owner *o, const uint8_t *topic, size_t len)
{
	struct zr__subs_node *n = held_find(t, topic, len);
	struct zr__subs_hold *h = n != NULL ? hold_of(n, o) : NULL;
	int rc = ZR__SUBS_HELD | ZR__SUBS_GONE_OWNER;
	bool first;

	if (h == NULL)
		return 0;
	o->n--;
	if (--h->count > 0)
		return ZR__SUBS_HELD;
	first = n->holders == h;
	hold_unlink(h);
	hold_gone(t, n, h, first, len, find_key(topic, len));
	free(h);
	o->bytes -= len + ZR__SUBS_ENTRY_COST;
	if (n->holders == NULL) {
		rc |= ZR__SUBS_GONE_TRIE;
		node_prune(t, n);
	}
	return rc;
}

/* o goes in front of head unless it is on the list. */
static inline struct zr__subs_owner *
take_owner(struct zr__subs_owner *o, uint64_t stamp, struct zr__subs_owner *head)
{
	if (o->stamp == stamp)
		return head;
	o->stamp = stamp;
	o->match_next = head;
	return o;
}

/* The owners of h and the holders after it not yet on the list go in front
 * of head. */
static inline struct zr__subs_owner *
take_holders(const struct zr__subs_hold *h, uint64_t stamp, struct zr__subs_owner *head)
{
	for (; h != NULL; h = h->nnext) {
		struct zr__subs_owner *o = h->owner;

		if (o->stamp != stamp) {
			o->stamp = stamp;
			o->match_next = head;
			head = o;
		}
	}
	return head;
}

/* A query (collect, match): whether the index answers it. Lengths that
 * fell out of lens[] are counted again once the walk has answered about as
 * many queries as there are topics held. */
static bool
ix_use(struct zr__subs *t)
{
	if (lens_stale(t) && ++t->lens_wait > t->held)
		lens_recount(t);
	return ix_ready(t);
}

/*
 * The holders of data's prefixes: with the index, one lookup per length
 * held (shortest first, as the walk meets them, so the list is the same);
 * else the walk down the trie, a node, its child array and the child per
 * step (10,000 topics: ~11,000 nodes, far out of L1 and L2).
 */
struct zr__subs_owner *
zr__subs_collect(struct zr__subs *t, const uint8_t *data, size_t len)
{
	struct zr__subs_owner *head = NULL;
	struct zr__subs_node *n = t->root;
	uint64_t stamp = ++t->stamp;
	size_t i = 0, at;

	if (ix_use(t)) {
		struct sip s;
		size_t done = 0;

		sip_init(&s, t->ix_key);
		for (size_t k = 0; k < t->nlens && t->lens[k] <= len; k++) {
			uintptr_t ref = t->lens[k] == 0
			                        ? (uintptr_t)t->root->holders
			                        : ix_find_prefix(t, &s, &done, data, t->lens[k]);

			if (ref & REF_OWNER)
				head = take_owner(ref_owner(ref), stamp, head);
			else
				head = take_holders(ref_hold(ref), stamp, head);
		}
		return head;
	}
	while (n != NULL) {
		head = take_holders(n->holders, stamp, head);
		if (i >= len || !kid_find(n, data[i], &at))
			break;
		n = n->kids[at];
		if (n->len > len - i || !label_eq(label_of(n), data + i, n->len))
			break;
		i += n->len;
	}
	return head;
}

bool
zr__subs_match(struct zr__subs *t, const uint8_t *data, size_t len)
{
	const struct zr__subs_node *n = t->root;
	size_t i = 0, at;

	if (ix_use(t)) {
		struct sip s;
		size_t done = 0;

		sip_init(&s, t->ix_key);
		/* A node in the index has holders. */
		for (size_t k = 0; k < t->nlens && t->lens[k] <= len; k++) {
			if (t->lens[k] == 0 || ix_find_prefix(t, &s, &done, data, t->lens[k]) != 0)
				return true;
		}
		return false;
	}
	while (n != NULL) {
		if (n->holders != NULL)
			return true;
		if (i >= len || !kid_find(n, data[i], &at))
			return false;
		n = n->kids[at];
		if (n->len > len - i || !label_eq(label_of(n), data + i, n->len))
			return false;
		i += n->len;
	}
	return false;
}

bool
zr__subs_same(const struct zr__subs *t, const uint8_t *a, size_t alen, const uint8_t *b,
              size_t blen)
{
	size_t m = t->max_len;

	/* Every topic held is at most m long: one is a prefix of a exactly
	 * when it is a prefix of a's first m octets. */
	if (alen < m || blen < m) {
		if (alen != blen)
			return false;
		m = alen;
	}
	return m == 0 || memcmp(a, b, m) == 0;
}

struct zr__subs_hold *
zr__subs_next(const struct zr__subs_hold *h)
{
	return h->onext;
}

uint32_t
zr__subs_count(const struct zr__subs_hold *h)
{
	return h->count;
}

bool
zr__subs_sole(const struct zr__subs_hold *h)
{
	return h->node->holders == h && h->nnext == NULL;
}

size_t
zr__subs_topic(const struct zr__subs_hold *h, uint8_t *out)
{
	size_t len = node_depth(h->node);

	if (out != NULL)
		node_topic(h->node, len, out);
	return len;
}

void
zr__subs_drop(struct zr__subs *t, struct zr__subs_owner *o)
{
	while (o->held != NULL) {
		struct zr__subs_hold *h = o->held;
		/* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): unlinking the head advanced o->held */
		struct zr__subs_node *n = h->node;
		bool first = n->holders == h;
		size_t len = node_depth(n);

		hold_unlink(h);
		hold_gone(t, n, h, first, len, node_find_key(n, len));
		free(h);
		if (n->holders == NULL)
			node_prune(t, n);
	}
	o->n = 0;
	o->bytes = 0;
}

void
zr__subs_fini(struct zr__subs *t)
{
	struct zr__subs_node *n = t->root;

	/* Post-order through the parent links: no stack, whatever the depth. */
	while (n != NULL) {
		struct zr__subs_node *p;

		if (n->nkids > 0) {
			n = n->kids[--n->nkids];
			continue;
		}
		while (n->holders != NULL) {
			struct zr__subs_hold *h = n->holders;

			n->holders = h->nnext;
			free(h);
		}
		p = n == t->root ? NULL : n->parent;
		node_free(n);
		n = p;
	}
	t->root = NULL;
	t->nodes = 0;
	free(t->ix);
	t->ix = NULL;
	t->ix_cap = 0;
	t->held = 0;
	t->ix_lost = false;
	t->nlens = 0;
	t->lens_other = 0;
	t->lens_long = 0;
	t->lens_wait = 0;
}
