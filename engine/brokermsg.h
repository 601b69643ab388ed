/*
 * The broker's message layout on the wire (DESIGN.md "The public model", ruststream.md §4):
 * frame 0 the name, frame 1 "name: value" header lines joined by '\n' (empty
 * when none), frame 2 the payload. Encoding checks headers before anything
 * touches a socket; decoding turns a received message into a zr_delivery
 * whose strings live in a reusable scratch buffer (no allocation once the
 * buffer has grown to the largest message seen).
 */
#ifndef ZR_ENGINE_BROKERMSG_H
#define ZR_ENGINE_BROKERMSG_H

#include <stdbool.h>
#include <stddef.h>

#include <zring/zring.h>

/* Reusable storage behind one decoded delivery. Zero-initialise; free with
 * zr__brokermsg_scratch_fini. */
struct zr__brokermsg_scratch {
	char *buf;
	size_t cap;
	struct zr_header *hv;
	size_t hcap;
	char err[ZR_ERRTEXT_MAX];
};

void zr__brokermsg_scratch_fini(struct zr__brokermsg_scratch *sc);

/* Strict UTF-8 (no overlong forms, surrogates or code points past U+10FFFF). */
bool zr__utf8_valid(const void *data, size_t len);

/*
 * Appends [name, headers, payload] to m (an empty message; prefix is an
 * optional first frame, e.g. a routing id, and name may be NULL to use it
 * alone). Returns 0; -EILSEQ (a header that is not UTF-8) or -EINVAL (an empty
 * name, a name with ':' or a line break, a value with a line break) with err
 * naming the header; -ENOMEM.
 */
int zr__brokermsg_encode(zr_msg *m, const char *name, const struct zr_header *h, size_t nh,
                         const struct zr_header *extra, const void *payload, size_t len, char *err,
                         size_t errcap);

/*
 * Decodes the frames of m from frame `first` on into d (d->seq and d->lane
 * are left alone). reply_to, if not NULL, is added as the "reply-to" header
 * and d->reply_to, and any "reply-to" header the message carries itself is
 * dropped (only the broker's may name where a reply goes). A malformed message yields d->error = -EPROTO and
 * d->error_text; returns that code too (0 otherwise, -ENOMEM).
 */
int zr__brokermsg_decode(const zr_msg *m, size_t first, const char *reply_to,
                         struct zr__brokermsg_scratch *sc, struct zr_delivery *d);

/* Whether zr__brokermsg_decode would accept m (batches close on an error item);
 * sc is scratch space. */
bool zr__brokermsg_ok(const zr_msg *m, size_t first, struct zr__brokermsg_scratch *sc);

#endif /* ZR_ENGINE_BROKERMSG_H */
