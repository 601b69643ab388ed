/*
 * The subscription trie (subs.h). A node's label is the part of the topic
 * between its parent and itself (inside the node when short); its children
 * are sorted by their label's first byte, which the child array keeps
 * beside the pointers (one binary search over bytes per step, touching no
 * child but the one taken: a publisher with 10,000 topics spent ~45% of its
 * time in this walk, most of it in cache misses on the children's labels);
 * its holders are a list of (owner, count). Invariant: every node but the root has holders or at
 * least two children, so a topic costs at most two nodes and the trie never
 * holds more than twice as many nodes as distinct topics.
 *
 * What one distinct topic of length L can cost, with glibc's 16-octet
 * chunks (8 of header): its holder (64) + a leaf node (48) + a split node
 * (48) + the split node's two-slot child array (two pointers and their
 * first bytes: 32) + two labels holding L bytes between them (L + 48 at
 * most; none for a label of up to 8 octets, kept in its node) = L + 240,
 * or, without a split, a holder, a node, a label and a child slot
 * (amortised doubling: 27) = L + 163. ZR__SUBS_ENTRY_COST (256) covers both.
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

int
zr__subs_add(struct zr__subs *t, struct zr__subs_owner *o, const uint8_t *topic, size_t len,
             size_t max_n, size_t max_bytes)
{
	struct zr__subs_node *n;
	struct zr__subs_hold *h;
	size_t cost = len + ZR__SUBS_ENTRY_COST;
	bool fresh;

	if (o->n >= max_n)
		return -EDQUOT;
	n = node_find(t, topic, len);
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
	return ZR__SUBS_NEW_OWNER | (fresh ? ZR__SUBS_NEW_TRIE : 0);
}

int
zr__subs_peek_remove(const struct zr__subs *t, const struct zr__subs_owner *o, const uint8_t *topic,
                     size_t len)
{
	struct zr__subs_node *n = node_find(t, topic, len);
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
	struct zr__subs_node *n = node_find(t, topic, len);
	struct zr__subs_hold *h = n != NULL ? hold_of(n, o) : NULL;
	int rc = ZR__SUBS_HELD | ZR__SUBS_GONE_OWNER;

	if (h == NULL)
		return 0;
	o->n--;
	if (--h->count > 0)
		return ZR__SUBS_HELD;
	hold_unlink(h);
	free(h);
	o->bytes -= len + ZR__SUBS_ENTRY_COST;
	if (n->holders == NULL) {
		rc |= ZR__SUBS_GONE_TRIE;
		node_prune(t, n);
	}
	return rc;
}

struct zr__subs_owner *
zr__subs_collect(struct zr__subs *t, const uint8_t *data, size_t len)
{
	struct zr__subs_owner *head = NULL;
	struct zr__subs_node *n = t->root;
	uint64_t stamp = ++t->stamp;
	size_t i = 0, at;

	while (n != NULL) {
		for (struct zr__subs_hold *h = n->holders; h != NULL; h = h->nnext) {
			struct zr__subs_owner *o = h->owner;

			if (o->stamp != stamp) {
				o->stamp = stamp;
				o->match_next = head;
				head = o;
			}
		}
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
zr__subs_match(const struct zr__subs *t, const uint8_t *data, size_t len)
{
	const struct zr__subs_node *n = t->root;
	size_t i = 0, at;

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
	size_t len = 0;

	for (const struct zr__subs_node *n = h->node; n != NULL; n = n->parent)
		len += n->len;
	if (out != NULL) {
		size_t at = len;

		for (const struct zr__subs_node *n = h->node; n != NULL; n = n->parent) {
			at -= n->len;
			if (n->len > 0)
				memcpy(out + at, label_of(n), n->len);
		}
	}
	return len;
}

void
zr__subs_drop(struct zr__subs *t, struct zr__subs_owner *o)
{
	while (o->held != NULL) {
		struct zr__subs_hold *h = o->held;
		/* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): unlinking the head advanced o->held */
		struct zr__subs_node *n = h->node;

		hold_unlink(h);
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
}
