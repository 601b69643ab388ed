/*
 * zring probe — raw connections to the peer under test: plain sockets, the
 * codec for the valid parts, and the judgement of what the peer did.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <zring/error.h>

#include "probe.h"

#define PR_IN_MAX (8u << 20)

static const char *const verdict_names[PR_VERDICTS] = {
	"pass", "lenient", "violation", "crash", "hang", "degraded", "skipped",
};

const char *
pr_verdict_name(int v)
{
	return v >= 0 && v < PR_VERDICTS ? verdict_names[v] : "?";
}

void
pr_obs(struct pr_ctx *c, const char *fmt, ...)
{
	size_t n = strlen(c->obs);
	va_list ap;

	if (n + 3 >= sizeof(c->obs))
		return;
	if (n > 0) {
		memcpy(c->obs + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(c->obs + n, sizeof(c->obs) - n, fmt, ap);
	va_end(ap);
}

void
pr_escape(char *out, size_t cap, const uint8_t *p, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 5 < cap; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\')
			out[o++] = (char)p[i];
		else
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", p[i]);
	}
	if (cap > 0)
		out[o < cap ? o : cap - 1] = '\0';
}

/* ---- endpoints and sockets ------------------------------------------------ */

int
pr_target_init(struct pr_ctx *c, const char *ep)
{
	struct pr_target *t = &c->t;

	memset(t, 0, sizeof(*t));
	t->listen_fd = -1;
	if (strncmp(ep, "ipc://", 6) == 0) {
		struct sockaddr_un *un = (struct sockaddr_un *)&t->addr;
		const char *path = ep + 6;
		if (strlen(path) == 0 || strlen(path) >= sizeof(un->sun_path))
			return -EINVAL;
		un->sun_family = AF_UNIX;
		strcpy(un->sun_path, path);
		t->addr_len = (socklen_t)sizeof(*un);
	} else if (strncmp(ep, "tcp://", 6) == 0) {
		char host[256];
		const char *colon = strrchr(ep + 6, ':');
		struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
		size_t hl;
		if (colon == NULL)
			return -EINVAL;
		hl = (size_t)(colon - (ep + 6));
		if (hl == 0 || hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, ep + 6, hl);
		host[hl] = '\0';
		if (host[0] == '[' && host[hl - 1] == ']') {
			memmove(host, host + 1, hl - 2);
			host[hl - 2] = '\0';
		}
		if (strcmp(host, "*") == 0)
			strcpy(host, "0.0.0.0");
		if (getaddrinfo(host, colon + 1, &hints, &ai) != 0 || ai == NULL)
			return -EINVAL;
		memcpy(&t->addr, ai->ai_addr, ai->ai_addrlen);
		t->addr_len = ai->ai_addrlen;
		freeaddrinfo(ai);
	} else {
		return -EINVAL;
	}
	if (c->o->listen) {
		int one = 1;
		int fd = socket(t->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return -errno;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (t->addr.ss_family == AF_UNIX)
			unlink(((struct sockaddr_un *)&t->addr)->sun_path);
		if (bind(fd, (struct sockaddr *)&t->addr, t->addr_len) != 0 ||
		    listen(fd, 512) != 0) {
			int e = -errno;
			close(fd);
			return e;
		}
		t->listen_fd = fd;
	}
	return 0;
}

static void
conn_init(struct pr_conn *k)
{
	memset(k, 0, sizeof(*k));
	k->fd = -1;
	k->peer_type = -1;
}

int
pr_open(struct pr_ctx *c, struct pr_conn *k, unsigned ms)
{
	struct pr_target *t = &c->t;
	int fd;

	conn_init(k);
	if (t->listen_fd >= 0) {
		struct pollfd p = {.fd = t->listen_fd, .events = POLLIN};
		if (poll(&p, 1, (int)ms) <= 0)
			return -ETIMEDOUT;
		fd = accept4(t->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return -errno;
	} else {
		fd = socket(t->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&t->addr, t->addr_len) != 0) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};
			int err = 0;
			socklen_t el = sizeof(err);
			if (errno != EINPROGRESS) {
				int e = -errno;
				close(fd);
				return e;
			}
			if (poll(&p, 1, (int)ms) <= 0) {
				close(fd);
				return -ETIMEDOUT;
			}
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
			if (err != 0) {
				close(fd);
				return -err;
			}
		}
	}
	if (t->addr.ss_family != AF_UNIX) {
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	k->fd = fd;
	k->in_cap = 64u << 10;
	k->in = malloc(k->in_cap);
	if (k->in == NULL) {
		close(fd);
		k->fd = -1;
		return -ENOMEM;
	}
	return 0;
}

void
pr_close(struct pr_conn *k)
{
	if (k->fd >= 0)
		close(k->fd);
	if (k->codec)
		zr_zmtp_fini(&k->z);
	free(k->in);
	conn_init(k);
}

static void
mark_closed(struct pr_conn *k, bool reset)
{
	if (!k->closed) {
		k->closed = true;
		k->reset = reset;
		k->closed_ms = zl_now_ms();
	}
}

int
pr_write(struct pr_conn *k, const void *buf, size_t len, unsigned ms)
{
	const uint8_t *p = buf;
	uint64_t deadline = zl_now_ms() + ms;

	if (k->cap != NULL && k->cap_len + len <= k->cap_max) {
		memcpy(k->cap + k->cap_len, buf, len);
		k->cap_len += len;
	}
	while (len > 0) {
		ssize_t n = send(k->fd, p, len, MSG_NOSIGNAL);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct pollfd pf = {.fd = k->fd, .events = POLLOUT};
			uint64_t now = zl_now_ms();
			if (now >= deadline)
				return -ETIMEDOUT;
			/* A peer that stops reading while it writes to us (PONGs to a
			 * PING flood) must not deadlock the probe: read meanwhile. */
			pr_read(k, 0);
			poll(&pf, 1, (int)(deadline - now > 50 ? 50 : deadline - now));
			continue;
		}
		mark_closed(k, errno == ECONNRESET);
		return -EPIPE;
	}
	return 0;
}

int
pr_write_slow(struct pr_conn *k, const void *buf, size_t len, size_t chunk, unsigned delay_ms)
{
	const uint8_t *p = buf;

	for (size_t off = 0; off < len; off += chunk) {
		size_t n = len - off < chunk ? len - off : chunk;
		int rc = pr_write(k, p + off, n, 2000);
		if (rc < 0)
			return rc;
		if (off + n < len)
			zl_sleep_ms(delay_ms);
		/* Notice a close while trickling. */
		if (pr_read(k, 0) < 0)
			return -EPIPE;
	}
	return 0;
}

int
pr_read(struct pr_conn *k, unsigned ms)
{
	struct pollfd p = {.fd = k->fd, .events = POLLIN};
	ssize_t n;

	if (k->closed)
		return -EPIPE;
	if (poll(&p, 1, (int)ms) <= 0)
		return 0;
	if (k->in_len == k->in_cap) {
		size_t cap = k->in_cap * 2;
		uint8_t *q;
		if (cap > PR_IN_MAX) {
			/* Nobody parses this much: a peer flooding us. Drop it. */
			k->in_len = 0;
		} else {
			q = realloc(k->in, cap);
			if (q == NULL)
				return -ENOMEM;
			k->in = q;
			k->in_cap = cap;
		}
	}
	n = recv(k->fd, k->in + k->in_len, k->in_cap - k->in_len, 0);
	if (n > 0) {
		k->in_len += (size_t)n;
		k->rx_total += (uint64_t)n;
		return (int)n;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	mark_closed(k, n < 0 && errno == ECONNRESET);
	return -EPIPE;
}

static void
consume(struct pr_conn *k, size_t n)
{
	memmove(k->in, k->in + n, k->in_len - n);
	k->in_len -= n;
}

/* ---- handshake ------------------------------------------------------------ */

static void
after_ready(struct pr_conn *k)
{
	k->ready = true;
	if (!k->codec || !zr_zmtp_encrypts(&k->z)) {
		zr_zmtp_dec_init(&k->dec, UINT64_MAX >> 1, UINT32_MAX);
		zr_zmtp_dec_set_frame_limit(&k->dec, UINT32_MAX);
		if (k->codec) {
			zr_zmtp_fini(&k->z);
			k->codec = false;
		}
	}
}

void
pr_mark_ready(struct pr_conn *k)
{
	after_ready(k);
}

void
pr_consume(struct pr_conn *k, size_t n)
{
	consume(k, n < k->in_len ? n : k->in_len);
}

static int
ready_props(uint8_t *out, size_t cap, int type)
{
	const char *name = zr_socktype_name(type);
	return zr_zmtp_prop_encode(out, cap, "Socket-Type", (const uint8_t *)name, strlen(name));
}

static int
raw_handshake(struct pr_ctx *c, struct pr_conn *k, const struct pr_hs *hs, int type)
{
	uint8_t g[ZR_ZMTP_GREETING_SIZE], body[1 << 16];
	uint8_t *frame;
	struct zr_zmtp_greeting pg;
	uint64_t deadline = zl_now_ms() + c->o->limit_ms;
	uint8_t minor = hs != NULL && hs->minor_set ? hs->minor : 1;
	int rc;

	if (hs != NULL && hs->greeting != NULL)
		memcpy(g, hs->greeting, sizeof(g));
	else
		zr_zmtp_greeting_encode(g, minor, ZR_MECH_NULL, false);
	if (hs != NULL && hs->chunk > 0)
		rc = pr_write_slow(k, g, sizeof(g), hs->chunk, hs->chunk_delay_ms);
	else
		rc = pr_write(k, g, sizeof(g), c->o->limit_ms);
	if (rc < 0)
		return rc;
	while (k->in_len < ZR_ZMTP_GREETING_SIZE) {
		uint64_t now = zl_now_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		rc = pr_read(k, (unsigned)(deadline - now));
		if (rc < 0)
			return rc;
		rc = zr_zmtp_greeting_parse(k->in, k->in_len, &pg);
		if (rc < 0)
			return rc;
	}
	rc = zr_zmtp_greeting_parse(k->in, ZR_ZMTP_GREETING_SIZE, &pg);
	if (rc < 0)
		return rc;
	k->peer_major = pg.major;
	k->peer_minor = pg.major > 3 ? minor : (pg.minor < minor ? pg.minor : minor);
	consume(k, ZR_ZMTP_GREETING_SIZE);

	/* Our READY. */
	size_t blen;
	if (hs != NULL && hs->frame != NULL) {
		frame = malloc(hs->frame_len + 1);
		if (frame == NULL)
			return -ENOMEM;
		memcpy(frame, hs->frame, hs->frame_len);
		rc = (int)hs->frame_len;
	} else if (hs != NULL && hs->ready_set) {
		frame = malloc(hs->ready_len + 16);
		if (frame == NULL)
			return -ENOMEM;
		rc = zr_zmtp_cmd_encode(frame, hs->ready_len + 16, "READY", hs->ready,
		                        hs->ready_len);
	} else {
		rc = ready_props(body, sizeof(body), type);
		if (rc < 0)
			return rc;
		blen = (size_t)rc;
		frame = malloc(blen + 16);
		if (frame == NULL)
			return -ENOMEM;
		rc = zr_zmtp_cmd_encode(frame, blen + 16, "READY", body, blen);
	}
	if (rc > 0)
		rc = pr_write(k, frame, (size_t)rc, c->o->limit_ms);
	free(frame);
	if (rc < 0)
		return rc;

	/* The peer's READY. */
	struct zr_zmtp_dec d;
	zr_zmtp_dec_init(&d, 1u << 20, 1u << 20);
	for (;;) {
		struct zr_zmtp_frame f;
		size_t used = 0;
		rc = zr_zmtp_dec_feed(&d, k->in, k->in_len, &used, &f);
		if (rc == ZR_OK) {
			struct zr_zmtp_cmd cmd;
			if (!(f.flags & ZR_ZMTP_COMMAND))
				return -ZR_EUNEXPECTED;
			rc = zr_zmtp_cmd_parse(f.data, f.len, ZR_MECH_NULL, &cmd);
			consume(k, used);
			if (rc < 0)
				return rc;
			if (cmd.type == ZR_CMD_ERROR) {
				pr_escape(k->peer_error, sizeof(k->peer_error), cmd.value,
				          cmd.value_len);
				k->got_error = true;
				return -ZR_EPEERERROR;
			}
			if (cmd.type != ZR_CMD_READY)
				return -ZR_EUNEXPECTED;
			const uint8_t *v;
			size_t vl;
			if (zr_zmtp_props_find(cmd.value, cmd.value_len, "Socket-Type", &v, &vl) ==
			    0)
				k->peer_type = zr_socktype_parse(v, vl);
			after_ready(k);
			return 0;
		}
		if (rc < 0)
			return rc;
		consume(k, used);
		uint64_t now = zl_now_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		rc = pr_read(k, (unsigned)(deadline - now));
		if (rc < 0)
			return rc;
	}
}

static int
codec_flush(struct pr_conn *k)
{
	const uint8_t *out;
	size_t n;

	while ((n = zr_zmtp_out(&k->z, &out)) > 0) {
		int rc = pr_write(k, out, n, 2000);
		if (rc < 0)
			return rc;
		zr_zmtp_out_ack(&k->z, n);
	}
	return 0;
}

struct plain_auth {
	const struct pr_opts *o;
	bool refuse;
};

static int
plain_auth(void *arg, struct zr_zmtp_auth_req *req)
{
	const struct plain_auth *a = arg;
	const char *u = a->o->username, *p = a->o->password;

	if (a->refuse)
		return 400;
	return req->username_len == strlen(u) && memcmp(req->username, u, strlen(u)) == 0 &&
	                       req->password_len == strlen(p) &&
	                       memcmp(req->password, p, strlen(p)) == 0
	               ? 200
	               : 400;
}

int
pr_handshake(struct pr_ctx *c, struct pr_conn *k, const struct pr_hs *hs)
{
	const struct pr_opts *o = c->o;
	int type = hs != NULL && hs->our_type_set ? hs->our_type : o->our_type;
	struct plain_auth pa = {o, hs != NULL && hs->refuse};
	struct zr_zmtp_config cfg;
	uint64_t deadline;
	int rc;

	if (o->mechanism == ZR_MECH_NULL)
		return raw_handshake(c, k, hs, type);

	zr_zmtp_config_default(&cfg, type);
	cfg.mechanism = o->mechanism;
	/* A connecting client under test needs a server: PLAIN admits only
	 * --username with --password, CURVE every client (our key pair is the
	 * server's, its public half given to the client). */
	cfg.as_server = o->listen;
	if (cfg.as_server && o->mechanism == ZR_MECH_PLAIN) {
		cfg.auth = plain_auth;
		cfg.auth_arg = &pa;
	}
	cfg.minor = hs != NULL && hs->minor_set ? hs->minor : 1;
	cfg.handshake_ivl_ms = 0;
	cfg.max_msg_size = UINT64_MAX >> 1;
	cfg.max_msg_frames = UINT32_MAX;
	if (o->mechanism == ZR_MECH_PLAIN) {
		cfg.username = (const uint8_t *)o->username;
		cfg.username_len = o->username != NULL ? strlen(o->username) : 0;
		cfg.password = (const uint8_t *)o->password;
		cfg.password_len = o->password != NULL ? strlen(o->password) : 0;
	} else {
		cfg.curve_public_key = o->public_key;
		cfg.curve_secret_key = o->secret_key;
		if (!o->listen)
			cfg.curve_server_key = o->server_key;
	}
	rc = zr_zmtp_init(&k->z, &cfg, zl_now_ms());
	if (rc < 0)
		return rc;
	k->codec = true;
	deadline = zl_now_ms() + o->limit_ms;
	for (;;) {
		rc = codec_flush(k);
		if (rc < 0)
			return rc;
		for (;;) {
			struct zr_zmtp_event ev;
			size_t used = 0;
			rc = zr_zmtp_feed(&k->z, k->in, k->in_len, &used, &ev, zl_now_ms());
			consume(k, used);
			if (rc == ZR_NEED_MORE)
				break;
			if (rc < 0) {
				codec_flush(k);
				return rc;
			}
			if (ev.type == ZR_ZMTP_EV_PEER_ERROR) {
				pr_escape(k->peer_error, sizeof(k->peer_error), ev.data, ev.len);
				k->got_error = true;
				return -ZR_EPEERERROR;
			}
			if (ev.type == ZR_ZMTP_EV_READY) {
				k->peer_type = ev.peer_type;
				k->peer_minor = zr_zmtp_peer_minor(&k->z);
				k->peer_major = 3;
				rc = codec_flush(k);
				if (rc < 0)
					return rc;
				after_ready(k);
				return 0;
			}
		}
		rc = codec_flush(k);
		if (rc < 0)
			return rc;
		uint64_t now = zl_now_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		rc = pr_read(k, (unsigned)(deadline - now));
		if (rc < 0)
			return rc;
	}
}

/* ---- traffic -------------------------------------------------------------- */

int
pr_send_frame(struct pr_conn *k, unsigned flags, const void *data, size_t len)
{
	if (k->codec) {
		size_t cap = zr_zmtp_frame_wire_size(&k->z, len);
		uint8_t *buf = malloc(cap);
		int rc;
		if (buf == NULL)
			return -ENOMEM;
		rc = codec_flush(k);
		if (rc == 0)
			rc = zr_zmtp_encode_frame(&k->z, flags, data, len, buf, cap);
		if (rc > 0)
			rc = pr_write(k, buf, (size_t)rc, 2000);
		free(buf);
		return rc < 0 ? rc : 0;
	}
	uint8_t h[ZR_ZMTP_HEADER_MAX];
	int hl = zr_zmtp_frame_header(h, len, flags);
	if (hl < 0)
		return hl;
	int rc = pr_write(k, h, (size_t)hl, 2000);
	if (rc == 0 && len > 0)
		rc = pr_write(k, data, len, 2000);
	return rc;
}

int
pr_send_cmd(struct pr_conn *k, const char *name, const void *data, size_t len)
{
	size_t nl = strlen(name);
	uint8_t *body = malloc(1 + nl + len);
	int rc;

	if (body == NULL)
		return -ENOMEM;
	body[0] = (uint8_t)nl;
	memcpy(body + 1, name, nl);
	if (len > 0)
		memcpy(body + 1 + nl, data, len);
	rc = pr_send_frame(k, ZR_ZMTP_COMMAND, body, 1 + nl + len);
	free(body);
	return rc;
}

int
pr_send_ping(struct pr_conn *k, uint16_t ttl, const void *ctx, size_t ctx_len)
{
	uint8_t d[2 + 256];

	if (ctx_len > 256)
		return -EINVAL;
	d[0] = (uint8_t)(ttl >> 8);
	d[1] = (uint8_t)ttl;
	if (ctx_len > 0)
		memcpy(d + 2, ctx, ctx_len);
	return pr_send_cmd(k, "PING", d, 2 + ctx_len);
}

size_t
pr_last_pong(const struct pr_conn *k, const uint8_t **ctx)
{
	*ctx = k->pong_ctx;
	return k->pong_ctx_len;
}

static int
pump_raw(struct pr_conn *k, bool want_pong)
{
	for (;;) {
		struct zr_zmtp_frame f;
		size_t used = 0;
		int rc = zr_zmtp_dec_feed(&k->dec, k->in, k->in_len, &used, &f);
		if (rc == ZR_NEED_MORE) {
			consume(k, used);
			return 0;
		}
		if (rc < 0)
			return rc;
		if (f.flags & ZR_ZMTP_COMMAND) {
			struct zr_zmtp_cmd cmd;
			cmd.type = -1;
			if (zr_zmtp_cmd_parse(f.data, f.len, ZR_MECH_NULL, &cmd) == 0) {
				if (cmd.type == ZR_CMD_PONG) {
					k->pong_seen++;
					k->got_pong = true;
					k->pong_ctx_len = cmd.value_len < sizeof(k->pong_ctx)
					                          ? cmd.value_len
					                          : 0;
					if (k->pong_ctx_len > 0)
						memcpy(k->pong_ctx, cmd.value, k->pong_ctx_len);
				} else if (cmd.type == ZR_CMD_ERROR) {
					pr_escape(k->peer_error, sizeof(k->peer_error), cmd.value,
					          cmd.value_len);
					k->got_error = true;
				} else if (cmd.type == ZR_CMD_PING) {
					uint8_t pong[64];
					int n = zr_zmtp_cmd_encode(pong, sizeof(pong), "PONG",
					                           cmd.value, cmd.value_len);
					if (n > 0)
						pr_write(k, pong, (size_t)n, 1000);
				}
			}
			consume(k, used);
			if (cmd.type == ZR_CMD_PONG && want_pong)
				return 1;
			continue;
		}
		consume(k, used);
	}
}

static int
pump_codec(struct pr_conn *k, bool want_pong)
{
	for (;;) {
		struct zr_zmtp_event ev;
		size_t used = 0;
		int rc = zr_zmtp_feed(&k->z, k->in, k->in_len, &used, &ev, zl_now_ms());
		consume(k, used);
		codec_flush(k);
		if (rc == ZR_NEED_MORE) {
			/* A command the codec took without an event: under CURVE
			 * the only one a peer sends unasked is a PONG. */
			if (used > 0 && want_pong) {
				k->pong_seen++;
				k->got_pong = true;
				return 1;
			}
			return 0;
		}
		if (rc < 0)
			return rc;
		if (ev.type == ZR_ZMTP_EV_PEER_ERROR) {
			pr_escape(k->peer_error, sizeof(k->peer_error), ev.data, ev.len);
			k->got_error = true;
		}
	}
}

int
pr_pump(struct pr_conn *k, unsigned ms, bool want_pong)
{
	uint64_t deadline = zl_now_ms() + ms;

	for (;;) {
		int rc = 0;
		if (k->ready)
			rc = k->codec ? pump_codec(k, want_pong) : pump_raw(k, want_pong);
		else
			k->in_len = 0;
		if (rc != 0)
			return rc;
		uint64_t now = zl_now_ms();
		if (now >= deadline)
			return 0;
		rc = pr_read(k, (unsigned)(deadline - now));
		if (rc < 0)
			return rc;
	}
}

int
pr_settle(struct pr_ctx *c, struct pr_conn *k, unsigned ms)
{
	uint64_t t0 = zl_now_ms();
	bool ping = k->ready && k->peer_minor >= 1 && c->peer_pongs && !k->noping;
	int rc;

	if (!k->closed && ping && pr_send_ping(k, 0, "probe", 5) < 0)
		ping = false;
	if (k->closed) {
		/* Whatever it said before closing. */
		if (k->ready && k->in_len > 0)
			pr_pump(k, 0, false);
		pr_obs(c, "closed (%s)%s%s%s", k->reset ? "reset" : "EOF",
		       k->got_error ? ", ERROR \"" : "", k->got_error ? k->peer_error : "",
		       k->got_error ? "\"" : "");
		return OUT_CLOSED;
	}
	rc = pr_pump(k, ms, ping);
	if (rc == 1) {
		pr_obs(c, "served: PONG after %llu ms", (unsigned long long)(zl_now_ms() - t0));
		return OUT_SERVED;
	}
	if (rc == -EPIPE || k->closed) {
		pr_obs(c, "closed after %llu ms (%s)%s%s%s",
		       (unsigned long long)(k->closed_ms - t0), k->reset ? "reset" : "EOF",
		       k->got_error ? ", ERROR \"" : "", k->got_error ? k->peer_error : "",
		       k->got_error ? "\"" : "");
		return OUT_CLOSED;
	}
	if (rc < 0) {
		pr_obs(c, "peer sent malformed bytes (%s)", zr_strerror(rc));
		return OUT_SILENT;
	}
	if (ping) {
		pr_obs(c, "open, no PONG within %u ms", ms);
		return OUT_SILENT;
	}
	pr_obs(c, "open, quiet for %u ms", ms);
	return OUT_SERVED;
}

int
pr_judge(struct pr_ctx *c, struct pr_conn *k, int expect, int accepted, unsigned ms)
{
	int out = pr_settle(c, k, ms);

	switch (expect) {
	case EXP_CLOSE:
		return out == OUT_CLOSED ? PR_PASS : out == OUT_SERVED ? accepted : PR_HANG;
	case EXP_SERVE:
		return out == OUT_SERVED ? PR_PASS : out == OUT_CLOSED ? PR_VIOLATION : PR_HANG;
	default:
		return out == OUT_SILENT ? PR_HANG : PR_PASS;
	}
}

/* ---- the peer's process (--pid) -------------------------------------------- */

long
pr_rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "VmRSS:", 6) == 0)
			kib = strtol(line + 6, NULL, 10);
	fclose(f);
	return kib;
}

bool
pr_pid_alive(pid_t pid)
{
	char path[64], line[256];
	bool alive = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	/* A zombie has exited. */
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "State:", 6) == 0)
			alive = strchr(line, 'Z') == NULL;
	fclose(f);
	return alive;
}

/* ---- the liveness oracle --------------------------------------------------- */

int
pr_live(struct pr_ctx *c, char *why, size_t cap)
{
	const struct pr_opts *o = c->o;
	int refused = 0;

	why[0] = '\0';
	for (int attempt = 0; attempt < 4; attempt++) {
		struct pr_conn k;
		int rc;

		if (o->pid > 0 && !pr_pid_alive(o->pid)) {
			snprintf(why, cap, "process %d is gone", (int)o->pid);
			return PR_CRASH;
		}
		rc = pr_open(c, &k, o->listen ? 3000 : o->limit_ms);
		if (rc < 0) {
			pr_close(&k);
			snprintf(why, cap,
			         o->listen ? "the peer did not connect again (%s)"
			                   : "a new connection failed (%s)",
			         strerror(-rc));
			refused++;
			if (o->listen)
				return PR_CRASH;
			zl_sleep_ms(150);
			continue;
		}
		rc = pr_handshake(c, &k, NULL);
		if (rc == 0 && c->peer_pongs && k.peer_minor >= 1) {
			rc = pr_send_ping(&k, 0, "live", 4);
			if (rc == 0)
				rc = pr_pump(&k, o->limit_ms, true);
			if (rc == 0)
				rc = -ETIMEDOUT;
			if (rc == 1)
				rc = 0;
			if (rc < 0)
				snprintf(why, cap, "a fresh connection's PING got no PONG (%s)",
				         rc == -EPIPE ? "closed" : zr_strerror(rc));
		} else if (rc < 0) {
			snprintf(why, cap, "a fresh connection's handshake failed (%s)",
			         rc == -EPIPE ? "closed" : zr_strerror(rc));
		}
		pr_close(&k);
		if (rc == 0)
			return PR_PASS;
		refused = 0;
		zl_sleep_ms(100);
	}
	return refused > 0 ? PR_CRASH : PR_DEGRADED;
}
