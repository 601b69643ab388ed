/* zring tools — one ZMTP connection driven with poll(2). See zl_link.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "zl_link.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

void
zl_hex(FILE *f, const uint8_t *p, size_t len, size_t max)
{
	for (size_t i = 0; i < len && i < max; i++)
		fprintf(f, "%s%02x", i ? " " : "", p[i]);
	if (len > max)
		fprintf(f, " ...");
}

void
zl_msg_free(struct zl_msg *m)
{
	for (size_t i = 0; i < m->count; i++)
		free(m->frames[i].data);
	free(m->frames);
	m->frames = NULL;
	m->count = 0;
}

void
zl_event_free(struct zl_event *ev)
{
	free(ev->data);
	ev->data = NULL;
	zl_msg_free(&ev->msg);
}

static void
link_log(struct zl_bytes *b, const uint8_t *p, size_t n)
{
	if (b->len >= b->limit)
		return;
	if (n > b->limit - b->len)
		n = b->limit - b->len;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *q = realloc(b->p, cap);
		if (q == NULL)
			return;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void
link_trace(struct zl_link *l, const char *dir, const uint8_t *p, size_t n)
{
	if (l->trace == NULL)
		return;
	fprintf(l->trace, "[%s %zu] ", dir, n);
	zl_hex(l->trace, p, n, 4096);
	fputc('\n', l->trace);
	fflush(l->trace);
}

static int
link_fail(struct zl_link *l, int err)
{
	if (l->err == 0)
		l->err = err;
	return l->err;
}

/* Waits for fd to be ready for events until the absolute deadline. */
static int
link_wait(struct zl_link *l, short events, uint64_t deadline)
{
	for (;;) {
		uint64_t now = zl_now_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		uint64_t left = deadline - now;
		struct pollfd pfd = {.fd = l->fd, .events = events};
		int rc = poll(&pfd, 1, left > 60000 ? 60000 : (int)left);
		if (rc < 0 && errno != EINTR)
			return -errno;
		if (rc > 0)
			return 0;
	}
}

/* Writes iov[0..n) completely or fails. */
static int
link_writev(struct zl_link *l, struct iovec *iov, int n, uint64_t deadline)
{
	while (n > 0) {
		ssize_t w = writev(l->fd, iov, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return link_fail(l, -errno);
			int rc = link_wait(l, POLLOUT, deadline);
			if (rc < 0)
				return rc;
			continue;
		}
		size_t done = (size_t)w;
		l->tx_bytes += done;
		while (n > 0 && done >= iov[0].iov_len) {
			link_log(&l->tx_log, iov[0].iov_base, iov[0].iov_len);
			link_trace(l, "tx", iov[0].iov_base, iov[0].iov_len);
			done -= iov[0].iov_len;
			iov++;
			n--;
		}
		if (n > 0 && done > 0) {
			link_log(&l->tx_log, iov[0].iov_base, done);
			link_trace(l, "tx", iov[0].iov_base, done);
			iov[0].iov_base = (uint8_t *)iov[0].iov_base + done;
			iov[0].iov_len -= done;
		}
	}
	return 0;
}

static int
link_flush_until(struct zl_link *l, uint64_t deadline)
{
	const uint8_t *data;
	size_t n;

	while ((n = zr_zmtp_out(&l->z, &data)) > 0) {
		struct iovec iov = {.iov_base = (void *)data, .iov_len = n};
		int rc = link_writev(l, &iov, 1, deadline);
		if (rc < 0)
			return rc;
		zr_zmtp_out_ack(&l->z, n);
	}
	return 0;
}

int
zl_link_flush(struct zl_link *l, int timeout_ms)
{
	if (l->fd < 0)
		return -EBADF;
	return link_flush_until(l, zl_now_ms() + (uint64_t)timeout_ms);
}

int
zl_link_open(struct zl_link *l, uint16_t port, const struct zr_zmtp_config *cfg, size_t capture,
             int timeout_ms)
{
	uint64_t deadline = zl_now_ms() + (uint64_t)timeout_ms;

	memset(l, 0, sizeof(*l));
	l->fd = -1;
	l->rx_log.limit = l->tx_log.limit = capture;
	if (getenv("ZRING_TRACE") != NULL)
		l->trace = stderr;
	l->in = malloc(ZL_LINK_IN_CAP);
	if (l->in == NULL)
		return link_fail(l, -ENOMEM);

	l->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->fd < 0)
		return link_fail(l, -errno);
	int one = 1;
	setsockopt(l->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(l->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno != EINPROGRESS)
			return link_fail(l, -errno);
		int rc = link_wait(l, POLLOUT, deadline);
		if (rc < 0)
			return link_fail(l, rc);
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
		if (soerr != 0)
			return link_fail(l, -soerr);
	}
	int rc = zr_zmtp_init(&l->z, cfg, zl_now_ms());
	if (rc < 0)
		return link_fail(l, rc);
	/* Our greeting (and, for NULL, READY) go out before we wait for the peer:
	 * libzmq sends its first 10 octets and waits for ours. */
	rc = link_flush_until(l, deadline);
	return rc < 0 ? link_fail(l, rc) : 0;
}

/* Appends a message piece to the message being assembled. */
static int
link_take_piece(struct zl_link *l, const struct zr_zmtp_event *e)
{
	struct zl_msg *m = &l->part;

	if (!l->frame_open) {
		if (e->offset != 0)
			return -EPROTO; /* the codec skipped the start of a frame */
		struct zl_frame *f = realloc(m->frames, (m->count + 1) * sizeof(*f));
		if (f == NULL)
			return -ENOMEM;
		m->frames = f;
		m->frames[m->count].data = NULL;
		m->frames[m->count].len = 0;
		m->count++;
		l->frame_open = true;
		l->part_open = true;
	}
	struct zl_frame *f = &m->frames[m->count - 1];
	if (e->offset != f->len || e->offset + e->len > e->frame_size)
		return -EPROTO; /* pieces out of order: a codec bug */
	if (e->len > 0) {
		uint8_t *d = realloc(f->data, f->len + e->len);
		if (d == NULL)
			return -ENOMEM;
		memcpy(d + f->len, e->data, e->len);
		f->data = d;
		f->len += e->len;
	}
	if (e->flags & ZR_ZMTP_FRAME_END) {
		if (f->len != e->frame_size)
			return -EPROTO;
		l->frame_open = false;
		if (!(e->flags & ZR_ZMTP_MORE))
			return 1; /* the message is whole */
	}
	return 0;
}

static uint8_t *
link_dup(const uint8_t *p, size_t n)
{
	uint8_t *d = malloc(n + 1);
	if (d != NULL) {
		if (n > 0)
			memcpy(d, p, n);
		d[n] = 0;
	}
	return d;
}

/*
 * Turns one codec event into *ev. Returns 1 if ev is complete, 0 if the
 * event was a piece of a message still being assembled, or a negative code.
 */
static int
link_take_event(struct zl_link *l, const struct zr_zmtp_event *e, struct zl_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	switch (e->type) {
	case ZR_ZMTP_EV_FRAME: {
		int rc = link_take_piece(l, e);
		if (rc <= 0)
			return rc;
		ev->type = ZL_EV_MSG;
		ev->msg = l->part;
		memset(&l->part, 0, sizeof(l->part));
		l->part_open = false;
		return 1;
	}
	case ZR_ZMTP_EV_READY:
		ev->type = ZL_EV_READY;
		ev->peer_type = e->peer_type;
		if (e->peer_identity != NULL) {
			if (e->peer_identity_len > 255)
				return -EPROTO;
			ev->has_identity = true;
			ev->identity_len = e->peer_identity_len;
			if (ev->identity_len > 0)
				memcpy(ev->identity, e->peer_identity, ev->identity_len);
		}
		l->ready_ms = zl_now_ms();
		break;
	case ZR_ZMTP_EV_SUBSCRIBE:
		ev->type = ZL_EV_SUBSCRIBE;
		break;
	case ZR_ZMTP_EV_CANCEL:
		ev->type = ZL_EV_CANCEL;
		break;
	case ZR_ZMTP_EV_PEER_ERROR:
		ev->type = ZL_EV_PEER_ERROR;
		break;
	default:
		return -EPROTO;
	}
	ev->len = e->len;
	ev->data = link_dup(e->data, e->len);
	return ev->data != NULL ? 1 : -ENOMEM;
}

int
zl_link_next(struct zl_link *l, struct zl_event *ev, int timeout_ms)
{
	uint64_t deadline = zl_now_ms() + (uint64_t)timeout_ms;
	int rc;

	memset(ev, 0, sizeof(*ev));
	if (l->err != 0)
		return l->err;
	for (;;) {
		/* Decode everything the buffered bytes hold. */
		bool got = false;
		int idle = 0;
		for (;;) {
			struct zr_zmtp_event e;
			size_t consumed = 0;
			int took = 0;
			size_t avail = l->in_len - l->in_off;
			rc = zr_zmtp_feed(&l->z, l->in + l->in_off, avail, &consumed, &e,
			                  zl_now_ms());
			/* A codec that claims bytes it was not given is broken. */
			if (consumed > avail)
				return link_fail(l, -EPROTO);
			if (rc == ZR_OK)
				took = link_take_event(l, &e, ev); /* copy before the bytes move */
			/* Drop what was consumed; the rest is presented again. */
			l->in_off += consumed;
			if (rc == ZR_OK && took == 0 && consumed == 0 && ++idle > 1000)
				took = -EPROTO; /* a codec bug: events without progress */
			if (took < 0)
				rc = took;
			if (rc < 0 || rc == ZR_NEED_MORE)
				break;
			if (took == 1) {
				got = true;
				break;
			}
		}
		if (rc < 0 && rc != -ZR_EPEERERROR && zr_zmtp_state(&l->z) == ZR_ZMTP_FAILED)
			(void)link_flush_until(l, zl_now_ms() + 200); /* the ERROR it queued */
		if (rc < 0)
			return link_fail(l, rc);
		int frc = link_flush_until(l, deadline);
		if (frc < 0)
			return frc;
		if (got)
			return 0;

		rc = zr_zmtp_tick(&l->z, zl_now_ms());
		if (rc < 0) {
			(void)link_flush_until(l, zl_now_ms() + 200);
			return link_fail(l, rc);
		}
		frc = link_flush_until(l, deadline); /* a PING the tick queued */
		if (frc < 0)
			return frc;

		/* Move the unconsumed bytes to the front (once per read, not per
		 * event) so a whole command or header always fits. */
		if (l->in_off > 0) {
			memmove(l->in, l->in + l->in_off, l->in_len - l->in_off);
			l->in_len -= l->in_off;
			l->in_off = 0;
		}
		size_t want = zr_zmtp_want(&l->z, l->in, l->in_len);
		if (l->in_len >= ZL_LINK_IN_CAP || want > ZL_LINK_IN_CAP)
			return link_fail(l, -ENOBUFS);

		uint64_t now = zl_now_ms();
		uint64_t until = deadline;
		uint64_t tick_at = zr_zmtp_deadline(&l->z);
		if (tick_at < until)
			until = tick_at;
		if (now >= deadline)
			return -ETIMEDOUT;
		if (until <= now)
			continue; /* a timer is due */
		struct pollfd pfd = {.fd = l->fd, .events = POLLIN};
		uint64_t wait = until - now;
		int prc = poll(&pfd, 1, wait > 60000 ? 60000 : (int)wait);
		if (prc < 0 && errno != EINTR)
			return link_fail(l, -errno);
		if (prc <= 0)
			continue;
		ssize_t n = recv(l->fd, l->in + l->in_len, ZL_LINK_IN_CAP - l->in_len, 0);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			return link_fail(l, -errno);
		}
		if (n == 0)
			return link_fail(l, -ECONNRESET);
		link_log(&l->rx_log, l->in + l->in_len, (size_t)n);
		link_trace(l, "rx", l->in + l->in_len, (size_t)n);
		l->in_len += (size_t)n;
		l->rx_bytes += (uint64_t)n;
	}
}

int
zl_link_send(struct zl_link *l, const struct zl_frame *frames, size_t count, int timeout_ms)
{
	uint64_t deadline = zl_now_ms() + (uint64_t)timeout_ms;

	if (l->err != 0)
		return l->err;
	int rc = link_flush_until(l, deadline);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < count; i++) {
		uint8_t hdr[ZR_ZMTP_HEADER_MAX];
		int hl = zr_zmtp_frame_header(hdr, frames[i].len, i + 1 < count ? ZR_ZMTP_MORE : 0);
		if (hl < 0)
			return hl;
		struct iovec iov[2] = {
			{.iov_base = hdr, .iov_len = (size_t)hl},
			{.iov_base = frames[i].data, .iov_len = frames[i].len},
		};
		rc = link_writev(l, iov, frames[i].len > 0 ? 2 : 1, deadline);
		if (rc < 0)
			return link_fail(l, rc); /* a half-written message: the stream is lost */
	}
	return 0;
}

int
zl_link_send_sub(struct zl_link *l, const void *topic, size_t len, bool subscribe, int timeout_ms)
{
	uint64_t deadline = zl_now_ms() + (uint64_t)timeout_ms;
	uint8_t pre[ZR_ZMTP_SUB_PREFIX_MAX];

	if (l->err != 0)
		return l->err;
	int rc = link_flush_until(l, deadline);
	if (rc < 0)
		return rc;
	int pl = zr_zmtp_sub_prefix(pre, zr_zmtp_peer_minor(&l->z), subscribe, len);
	if (pl < 0)
		return pl;
	struct iovec iov[2] = {
		{.iov_base = pre, .iov_len = (size_t)pl},
		{.iov_base = (void *)topic, .iov_len = len},
	};
	rc = link_writev(l, iov, len > 0 ? 2 : 1, deadline);
	return rc < 0 ? link_fail(l, rc) : 0;
}

void
zl_link_close(struct zl_link *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	free(l->in);
	l->in = NULL;
	zl_msg_free(&l->part);
	free(l->rx_log.p);
	free(l->tx_log.p);
	memset(&l->rx_log, 0, sizeof(l->rx_log));
	memset(&l->tx_log, 0, sizeof(l->tx_log));
}
