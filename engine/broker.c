/*
 * The broker model (zring.h, "the broker model"): brokers, subscriptions and
 * publishers on top of the sockets of this folder.
 *
 * A subscription is one socket (PULL, SUB or ROUTER) whose receive queue is
 * the read_ahead channel: RCVHWM = read_ahead, so when the handlers fall
 * behind the connections stop arming receives and TCP pushes back on the
 * sender (socket.c, sock_rx_push). A dispatcher thread takes messages off
 * that queue one at a time and either runs the handler itself (one worker)
 * or hands each message, or each batch, to a worker thread whose inbox holds
 * one item: the dispatcher waits for a free worker (pool) or for its lane's
 * inbox (by_key) before it takes the next one, so the channel is never read
 * further ahead than read_ahead plus what the workers hold.
 *
 * A publisher owns one sending socket (PUSH; PUB, or XPUB when it dials a
 * local subscription; for RPC a DEALER per outstanding request) and applies
 * the seed broker's refusal rules before anything touches a socket.
 */
#define _GNU_SOURCE /* strdup, strcasecmp (<string.h>), nanosleep, pthread_condattr_setclock */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "brokermsg.h"
#include "common/base.h"
#include "io/endpoint.h"
#include "io/loop.h"
#include "sock.h"

#define BROKER_REPLY_PREFIX "zmq-reply:"
#define BROKER_REPLY_MAX (sizeof BROKER_REPLY_PREFIX + (size_t)2 * ZR__SUB_MAX)

enum sub_stop {
	SUB_RUN = 0,
	SUB_DRAIN = 1, /* stop reading; hand what the channel holds to the handlers */
	SUB_DROP = 2,  /* stop now; what is still queued is discarded */
};

struct sub_job {
	zr_msg **m;
	size_t n;
	uint64_t seq; /* of m[0] */
};

struct sub_worker {
	struct zr_subscription *sub;
	unsigned idx;
	pthread_t thread;
	bool started;
	pthread_cond_t cond;    /* pending filled, or exit */
	struct sub_job pending; /* the inbox (one item) */
	struct sub_job current; /* being handled */
	bool busy;
	struct zr__brokermsg_scratch *sc; /* one per delivery of a batch */
	struct zr_delivery *ds;
	const struct zr_delivery **dv;
};

struct zr_subscription {
	zr_broker *b;
	struct zr_subscription *next;
	char *name;
	struct zr_sub_opts o;
	size_t batch; /* >= 1 */
	unsigned nworkers;
	bool rpc;
	zr_socket *sock;
	bool bound;
	size_t read_ahead;

	pthread_t dispatcher;
	bool dispatcher_started;
	int efd_stop;
	atomic_int stop;      /* enum sub_stop */
	bool done;            /* the dispatcher finished (broker lock) */
	size_t peak;          /* the channel's peak, kept when the socket closes */
	bool channel_counted; /* a timed-out shutdown counted the channel as discarded */
	bool joined;

	pthread_mutex_t lock; /* workers' inboxes */
	pthread_cond_t cond;  /* a worker became free */
	bool exit;            /* workers: leave when idle (or at once with SUB_DROP) */
	struct sub_worker *w;
	unsigned rotation;
	struct sub_job job;                 /* the dispatcher's job in assembly */
	struct zr__brokermsg_scratch check; /* the dispatcher's scratch for batch checks */
	uint64_t seq;

	_Atomic uint64_t received, handled, errors, discarded;
};

struct zr_publisher {
	zr_broker *b;
	struct zr_publisher *next;
	zr_socket *sock;     /* PUSH, PUB or XPUB once attached */
	uint64_t attach_gen; /* the broker's listener generation it attached to */
	zr_socket *dealer;   /* RPC: an idle requester socket */
	char dealer_target[ZR__ENDPOINT_TEXT_MAX];
	int efd_cancel;
	atomic_int waiting;
	atomic_int signalled; /* efd_cancel may be readable */
	_Atomic uint64_t published, blocked_ms, wait_start;
	bool hs_failed; /* a handshake of sock failed: the next publish dials anew */
	char err[ZR_ERRTEXT_MAX];
};

struct zr_broker {
	zr_ctx *ctx;
	int pattern, side;
	char endpoint[ZR__ENDPOINT_TEXT_MAX];
	unsigned read_ahead;
	int64_t read_ahead_bytes;
	int drain_ms;

	pthread_mutex_t lock;
	pthread_cond_t cond; /* a subscription finished draining */
	bool started;
	atomic_int closed;
	char err[ZR_ERRTEXT_MAX];
	struct zr_subscription *subs;
	struct zr_publisher *pubs;
	struct zr_subscription *listener; /* holds the bound endpoint */
	char bound[ZR__ENDPOINT_TEXT_MAX];
	uint64_t listener_gen;
	char dialer[ZR__SUB_MAX + 1]; /* the first subscription that dialled */
	struct zr_subscription *responder;
	_Atomic uint64_t corr;

	/* zr_broker_setsockopt / _set_auth: fixed once started, so the sockets
	 * opened later read them without the lock. */
	struct broker_opt *opts;
	size_t nopts;
	zr_zmtp_auth_cb *auth;
	void *auth_arg;
};

/* One zr_broker_setsockopt, replayed in call order on every socket (the
 * order matters: the last role option picks the mechanism). */
struct broker_opt {
	int option;
	size_t len;
	uint8_t *val; /* may hold a secret key: wiped when freed */
};

#define BROKER_OPTS_MAX 256

static const char *
pattern_name(int pattern)
{
	return pattern == ZR_QUEUE ? "queue" : pattern == ZR_FANOUT ? "fan-out" : "rpc";
}

static void
fd_signal(int fd)
{
	uint64_t one = 1;
	ssize_t n = write(fd, &one, sizeof one);

	(void)n;
}

static void
fd_drain(int fd)
{
	uint64_t v;
	ssize_t n = read(fd, &v, sizeof v);

	(void)n;
}

/* Formats an error text (truncated to cap, which is fine for a message). */
static void textf(char *buf, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
textf(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
}

static void
ms_to_timespec(uint64_t deadline_ms, struct timespec *ts)
{
	/* zr__now_ms is CLOCK_MONOTONIC; the condition variables use it too. */
	ts->tv_sec = (time_t)(deadline_ms / 1000);
	ts->tv_nsec = (long)(deadline_ms % 1000) * 1000000L;
}

static int
cond_init_monotonic(pthread_cond_t *c)
{
	pthread_condattr_t a;
	int rc;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	rc = pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
	return -rc;
}

/* ---- deliveries owned by the caller (replies) ------------------------------ */

struct owned_delivery {
	struct zr_delivery d; /* first: zr_delivery_free casts back */
	struct zr__brokermsg_scratch sc;
	zr_msg *m;
};

/* see zring.h */
void
zr_delivery_free(struct zr_delivery *d)
{
	struct owned_delivery *o = (struct owned_delivery *)d;

	if (o == NULL)
		return;
	zr__brokermsg_scratch_fini(&o->sc);
	zr_msg_free(o->m);
	free(o);
}

/* ---- brokers --------------------------------------------------------------- */

/* see zring.h */
int
zr_broker_new(zr_ctx *ctx, int pattern, const char *endpoint, int side, zr_broker **out)
{
	zr_broker *b;
	uint64_t seed = 0;

	if (ctx == NULL || endpoint == NULL || out == NULL ||
	    (pattern != ZR_QUEUE && pattern != ZR_FANOUT && pattern != ZR_RPC) ||
	    (side != ZR_BIND && side != ZR_CONNECT) || strlen(endpoint) >= ZR__ENDPOINT_TEXT_MAX)
		return -EINVAL;
	b = calloc(1, sizeof *b);
	if (b == NULL)
		return -ENOMEM;
	if (pthread_mutex_init(&b->lock, NULL) != 0 || cond_init_monotonic(&b->cond) < 0) {
		free(b);
		return -ENOMEM;
	}
	b->ctx = ctx;
	b->pattern = pattern;
	b->side = side;
	snprintf(b->endpoint, sizeof b->endpoint, "%s", endpoint);
	b->read_ahead = ZR_READ_AHEAD_DEFAULT;
	b->read_ahead_bytes = 8 << 20;
	b->drain_ms = ZR_DRAIN_DEFAULT_MS;
	/* Correlation ids only need to differ between the requests of one
	 * process; a random start keeps two brokers' counters apart. */
	if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed)
		seed = (uint64_t)(uintptr_t)b ^ zr__now_ms();
	atomic_init(&b->corr, seed >> 16);
	*out = b;
	return 0;
}

/* see zring.h */
int
zr_broker_set_read_ahead(zr_broker *b, unsigned read_ahead)
{
	if (b == NULL || read_ahead == 0 || read_ahead > (1u << 24))
		return -EINVAL;
	pthread_mutex_lock(&b->lock);
	b->read_ahead = read_ahead;
	pthread_mutex_unlock(&b->lock);
	return 0;
}

/* see zring.h */
int
zr_broker_set_read_ahead_bytes(zr_broker *b, int64_t bytes)
{
	if (b == NULL || bytes <= 0)
		return -EINVAL;
	pthread_mutex_lock(&b->lock);
	b->read_ahead_bytes = bytes;
	pthread_mutex_unlock(&b->lock);
	return 0;
}

/* see zring.h */
int
zr_broker_set_drain_timeout(zr_broker *b, int ms)
{
	if (b == NULL || ms < -1)
		return -EINVAL;
	pthread_mutex_lock(&b->lock);
	b->drain_ms = ms;
	pthread_mutex_unlock(&b->lock);
	return 0;
}

/* see zring.h */
const char *
zr_broker_error(const zr_broker *b)
{
	return b != NULL ? b->err : "";
}

/* ---- socket options and the authenticator ------------------------------------ */

/* Options the broker sets itself on its sockets, and why a caller may not. */
static const struct {
	int option;
	const char *why;
} broker_owned[] = {
	{ZR_SUBSCRIBE, "SUBSCRIBE: a fan-out subscription filters on its name"},
	{ZR_UNSUBSCRIBE, "UNSUBSCRIBE: a fan-out subscription filters on its name"},
	{ZR_RCVHWM, "RCVHWM: the broker sets it to read_ahead (zr_broker_set_read_ahead)"},
	{ZR_RCVBYTES,
         "RCVBYTES: the broker sets it to the read-ahead budget (zr_broker_set_read_ahead_bytes)"},
	{ZR_LINGER,
         "LINGER: the broker sets it from the drain timeout (zr_broker_set_drain_timeout)"},
	{ZR_ROUTER_MANDATORY, "ROUTER_MANDATORY: the RPC responder's replies rely on it"},
	{ZR_PUB_POLICY, "PUB_POLICY: a fan-out publisher waits for its slowest subscriber"},
	{ZR_ROUTING_ID, "ROUTING_ID: the broker's sockets share no identity"},
	{ZR_XPUB_VERBOSE, "XPUB_VERBOSE: the broker reads its publishers' filters itself"},
	{ZR_XPUB_VERBOSER, "XPUB_VERBOSER: the broker reads its publishers' filters itself"},
	{ZR_RCVTIMEO, "RCVTIMEO: the broker's calls take their own timeouts"},
	{ZR_SNDTIMEO, "SNDTIMEO: the broker's calls take their own timeouts"},
};

/* The socket types a broker of the pattern opens. */
static const int broker_types[][3] = {
	[ZR_QUEUE] = {ZR_PULL, ZR_PUSH, -1},
	[ZR_FANOUT] = {ZR_SUB, ZR_PUB, ZR_XPUB},
	[ZR_RPC] = {ZR_ROUTER, ZR_DEALER, -1},
};

static void
broker_opts_free(zr_broker *b)
{
	for (size_t i = 0; i < b->nopts; i++) {
		if (b->opts[i].val != NULL)
			explicit_bzero(b->opts[i].val, b->opts[i].len);
		free(b->opts[i].val);
	}
	free(b->opts);
	b->opts = NULL;
	b->nopts = 0;
}

/* Whether one of the pattern's socket types takes the option with this value
 * (a scratch socket of each: the option table is the judge, so options added
 * to it later need nothing here). */
static int
broker_opt_check(zr_broker *b, int option, const void *v, size_t len)
{
	int rc = -EINVAL;

	for (size_t i = 0; i < ZR_ARRAY_LEN(broker_types[b->pattern]) && rc < 0; i++) {
		int type = broker_types[b->pattern][i];
		zr_socket *s;
		int orc;

		if (type < 0)
			break;
		orc = zr_socket_open(b->ctx, type, &s);
		if (orc < 0)
			return orc;
		rc = zr_setsockopt(s, option, v, len);
		zr_socket_close(s);
	}
	return rc;
}

/* see zring.h */
int
zr_broker_setsockopt(zr_broker *b, int option, const void *v, size_t len)
{
	struct broker_opt *grown, *o;
	int rc;

	if (b == NULL)
		return -EINVAL;
	pthread_mutex_lock(&b->lock);
	b->err[0] = '\0';
	if (b->started) {
		textf(b->err, sizeof b->err,
		      "invalid argument: socket option %d: the broker on '%s' is started; set its "
		      "socket options before zr_broker_start",
		      option, b->endpoint);
		pthread_mutex_unlock(&b->lock);
		return -EINVAL;
	}
	for (size_t i = 0; i < ZR_ARRAY_LEN(broker_owned); i++) {
		if (broker_owned[i].option == option) {
			textf(b->err, sizeof b->err,
			      "invalid argument: socket option %d is the broker's own: %s", option,
			      broker_owned[i].why);
			pthread_mutex_unlock(&b->lock);
			return -EINVAL;
		}
	}
	if ((v == NULL && len > 0) || b->nopts >= BROKER_OPTS_MAX) {
		textf(b->err, sizeof b->err, "invalid argument: socket option %d: %s", option,
		      v == NULL ? "no value" : "too many options set");
		pthread_mutex_unlock(&b->lock);
		return -EINVAL;
	}
	rc = broker_opt_check(b, option, v, len);
	if (rc < 0) {
		textf(b->err, sizeof b->err,
		      "invalid argument: socket option %d (%zu octets): the sockets of a %s broker "
		      "do not take this option or this value",
		      option, len, pattern_name(b->pattern));
		pthread_mutex_unlock(&b->lock);
		return rc == -ENOMEM ? rc : -EINVAL;
	}
	grown = realloc(b->opts, (b->nopts + 1) * sizeof *grown);
	if (grown == NULL) {
		pthread_mutex_unlock(&b->lock);
		return -ENOMEM;
	}
	b->opts = grown;
	o = &b->opts[b->nopts];
	o->option = option;
	o->len = len;
	o->val = NULL; /* (NULL, 0) replays as (NULL, 0): "back to NULL" for PLAIN */
	if (len > 0 && (o->val = malloc(len)) == NULL) {
		pthread_mutex_unlock(&b->lock);
		return -ENOMEM;
	}
	if (len > 0)
		memcpy(o->val, v, len);
	b->nopts++;
	pthread_mutex_unlock(&b->lock);
	return 0;
}

/* see zring.h */
int
zr_broker_set_auth(zr_broker *b, zr_zmtp_auth_cb *cb, void *arg)
{
	if (b == NULL)
		return -EINVAL;
	pthread_mutex_lock(&b->lock);
	b->err[0] = '\0';
	if (b->started) {
		textf(b->err, sizeof b->err,
		      "invalid argument: the broker on '%s' is started; set its authenticator "
		      "before zr_broker_start",
		      b->endpoint);
		pthread_mutex_unlock(&b->lock);
		return -EINVAL;
	}
	b->auth = cb;
	b->auth_arg = arg;
	pthread_mutex_unlock(&b->lock);
	return 0;
}

/* The role the options leave, by the library's rule: the last of
 * PLAIN_SERVER, PLAIN_USERNAME, CURVE_SERVER, CURVE_SERVERKEY decides. */
static int
broker_server_mech(const zr_broker *b)
{
	int mech = ZR_MECH_NULL;

	for (size_t i = 0; i < b->nopts; i++) {
		const struct broker_opt *o = &b->opts[i];
		int on = 0;

		if (o->option == ZR_PLAIN_SERVER || o->option == ZR_CURVE_SERVER) {
			if (o->len == sizeof on)
				memcpy(&on, o->val, sizeof on);
			mech = on == 0                        ? ZR_MECH_NULL
			       : o->option == ZR_CURVE_SERVER ? ZR_MECH_CURVE
			                                      : ZR_MECH_PLAIN;
		} else if (o->option == ZR_PLAIN_USERNAME || o->option == ZR_CURVE_SERVERKEY) {
			mech = ZR_MECH_NULL; /* a client */
		}
	}
	return mech;
}

/* A CURVE server's public key, from the last CURVE_SECRETKEY set. */
static int
broker_curve_public(const zr_broker *b, uint8_t pub[ZR_CURVE_KEY_LEN])
{
	char sec[ZR_CURVE_KEY_Z85_LEN + 1], pz[ZR_CURVE_KEY_Z85_LEN + 1];
	const struct broker_opt *k = NULL;
	int rc;

	for (size_t i = 0; i < b->nopts; i++)
		if (b->opts[i].option == ZR_CURVE_SECRETKEY)
			k = &b->opts[i];
	if (k == NULL)
		return -EINVAL;
	if (k->len == ZR_CURVE_KEY_LEN) {
		zr_curve_key_encode(sec, k->val);
	} else if (k->len == ZR_CURVE_KEY_Z85_LEN || k->len == ZR_CURVE_KEY_Z85_LEN + 1) {
		memcpy(sec, k->val, ZR_CURVE_KEY_Z85_LEN);
		sec[ZR_CURVE_KEY_Z85_LEN] = '\0';
	} else {
		return -EINVAL;
	}
	rc = zr_curve_public(pz, sec);
	explicit_bzero(sec, sizeof sec);
	return rc < 0 ? rc : zr_curve_key_decode(pub, pz);
}

/*
 * Replays the broker's options and authenticator on s, before its bind or
 * connect. loopback: s dials the broker's own bound subscription, so a
 * server's options make the matching client instead (zring.h). A socket type
 * that does not take an option skips it (zr_broker_setsockopt checked that
 * one of the broker's types does).
 */
static int
broker_apply_opts(const zr_broker *b, zr_socket *s, bool loopback)
{
	int mech = loopback ? broker_server_mech(b) : ZR_MECH_NULL;
	int rc = 0;

	for (size_t i = 0; i < b->nopts && rc == 0; i++) {
		const struct broker_opt *o = &b->opts[i];

		if (loopback && (o->option == ZR_PLAIN_SERVER || o->option == ZR_CURVE_SERVER))
			continue;
		rc = zr_setsockopt(s, o->option, o->val, o->len);
		if (rc == -EINVAL)
			rc = 0;
	}
	if (rc == 0 && mech == ZR_MECH_CURVE) {
		uint8_t pub[ZR_CURVE_KEY_LEN];

		rc = broker_curve_public(b, pub);
		if (rc == 0)
			rc = zr_setsockopt(s, ZR_CURVE_PUBLICKEY, pub, sizeof pub);
		if (rc == 0)
			rc = zr_setsockopt(s, ZR_CURVE_SERVERKEY, pub, sizeof pub);
	}
	/* On tls:// the loopback client meets the broker's own certificate,
	 * which it need not trust (no TLS_CA, or a CA for clients only) and
	 * whose names need not cover the bound address ("*" reads back as
	 * 0.0.0.0): the far end is this broker's own listener, so there is no
	 * server to authenticate. The listener still checks the certificate
	 * the loopback client presents when it has a CA. */
	if (rc == 0 && loopback && strncmp(b->endpoint, "tls://", 6) == 0) {
		int off = 0;

		rc = zr_setsockopt(s, ZR_TLS_VERIFY, &off, sizeof off);
	}
	if (rc == 0 && b->auth != NULL)
		rc = zr_socket_set_auth(s, b->auth, b->auth_arg);
	return rc;
}

/* Why a bind or connect of a socket with the broker's options failed. */
static const char *
broker_attach_hint(const zr_broker *b, int rc)
{
	if (rc == -EINVAL && b->nopts > 0)
		return " (check the security options: a CURVE server needs CURVE_SECRETKEY, a "
		       "client CURVE_SERVERKEY, CURVE_PUBLICKEY and CURVE_SECRETKEY)";
	return "";
}

/* A bind endpoint's address, checked before any socket exists. tls:// is TCP
 * underneath: its address is checked as tcp://'s. */
static int
broker_parse_bind(const char *endpoint, struct zr__endpoint *ep)
{
	char tcp[ZR__ENDPOINT_TEXT_MAX];

	if (strncmp(endpoint, "tls://", 6) != 0)
		return zr__endpoint_parse(endpoint, true, false, ep);
	snprintf(tcp, sizeof tcp, "tcp://%s", endpoint + 6);
	return zr__endpoint_parse(tcp, true, false, ep);
}

/* see zring.h */
int
zr_broker_start(zr_broker *b)
{
	struct zr__endpoint ep;
	int rc = 0;

	if (b == NULL)
		return -EINVAL;
	pthread_mutex_lock(&b->lock);
	b->err[0] = '\0';
	if (atomic_load(&b->closed)) {
		textf(b->err, sizeof b->err,
		      "transport is not connected: the broker on '%s' was shut down", b->endpoint);
		rc = -ENOTCONN;
	} else if (strncmp(b->endpoint, "tcp://", 6) != 0 &&
	           strncmp(b->endpoint, "ipc://", 6) != 0 &&
	           strncmp(b->endpoint, "tls://", 6) != 0) {
		textf(b->err, sizeof b->err,
		      "invalid descriptor: endpoint '%s' is not supported; use tcp://, ipc:// or "
		      "tls://",
		      b->endpoint);
		rc = -EINVAL;
	} else if (b->side == ZR_BIND && (rc = broker_parse_bind(b->endpoint, &ep)) < 0) {
		textf(b->err, sizeof b->err, "invalid descriptor: endpoint '%s': %s", b->endpoint,
		      zr_strerror(rc));
	} else {
		rc = 0;
		b->started = true;
	}
	pthread_mutex_unlock(&b->lock);
	return rc;
}

/* see zring.h */
int
zr_broker_bound_address(zr_broker *b, char *buf, size_t cap)
{
	int rc;

	if (b == NULL || buf == NULL)
		return -EINVAL;
	pthread_mutex_lock(&b->lock);
	if (b->listener == NULL) {
		rc = -ENOENT;
	} else {
		size_t len = strlen(b->bound);

		rc = len < cap ? (int)len : -ENOSPC;
		if (rc >= 0)
			memcpy(buf, b->bound, len + 1);
	}
	pthread_mutex_unlock(&b->lock);
	return rc;
}

/* Whether calls may go on; fills err when not. Broker lock held. */
static int
broker_usable(zr_broker *b, char *err, size_t cap)
{
	if (!b->started) {
		textf(err, cap, "transport is not connected: the broker on '%s' is not started",
		      b->endpoint);
		return -ENOTCONN;
	}
	if (atomic_load(&b->closed)) {
		textf(err, cap, "transport is not connected: the broker on '%s' was shut down",
		      b->endpoint);
		return -ENOTCONN;
	}
	return 0;
}

/* ---- subscriptions: the dispatcher and the workers -------------------------- */

/* The next message off the channel, waiting until deadline (UINT64_MAX: no
 * limit). -EAGAIN at the deadline, -ENODATA when draining and the channel is
 * empty, -ECANCELED when dropped, or a socket error (-ETERM). */
static int
sub_next(struct zr_subscription *sub, zr_msg **m, uint64_t deadline)
{
	struct pollfd p[2] = {{.fd = zr_socket_fd(sub->sock), .events = POLLIN},
	                      {.fd = sub->efd_stop, .events = POLLIN}};

	for (;;) {
		int stop = atomic_load(&sub->stop), rc, timeout = -1;

		if (stop == SUB_DROP)
			return -ECANCELED;
		rc = zr_recv(sub->sock, m, ZR_DONTWAIT);
		if (rc == 0) {
			atomic_fetch_add(&sub->received, 1);
			return 0;
		}
		if (rc != -EAGAIN)
			return rc;
		if (stop == SUB_DRAIN)
			return -ENODATA;
		if (deadline != UINT64_MAX) {
			uint64_t now = zr__now_ms();

			if (now >= deadline)
				return -EAGAIN;
			timeout = (int)(deadline - now);
		}
		if (poll(p, 2, timeout) == 0)
			return -EAGAIN;
		/* efd_stop stays readable once set: the loop sees the stop. */
	}
}

static void
sub_free_msgs(struct sub_job *j)
{
	for (size_t i = 0; i < j->n; i++)
		zr_msg_free(j->m[i]);
	j->n = 0;
}

static void
sub_discard(struct zr_subscription *sub, struct sub_job *j)
{
	atomic_fetch_add(&sub->discarded, j->n);
	sub_free_msgs(j);
}

/* "zmq-reply:" + the lowercase hex of a routing id. */
static void
reply_address(const void *rid, size_t len, char *out)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *p = rid;
	char *o = out + sizeof BROKER_REPLY_PREFIX - 1;

	memcpy(out, BROKER_REPLY_PREFIX, sizeof BROKER_REPLY_PREFIX - 1);
	for (size_t i = 0; i < len; i++) {
		*o++ = hex[p[i] >> 4];
		*o++ = hex[p[i] & 15];
	}
	*o = '\0';
}

/* Decodes one message of the subscription into d. */
static void
sub_decode(struct zr_subscription *sub, zr_msg *m, struct zr__brokermsg_scratch *sc,
           struct zr_delivery *d)
{
	char reply_to[BROKER_REPLY_MAX];
	size_t rid_len, first_len = 0;
	const void *rid;

	if (!sub->rpc) {
		zr__brokermsg_decode(m, 0, NULL, sc, d);
		return;
	}
	/* ROUTER: [routing id, name, headers, payload]. */
	rid = zr_msg_frame(m, 0, &rid_len);
	if (zr_msg_frames(m) >= 2)
		zr_msg_frame(m, 1, &first_len);
	if (zr_msg_frames(m) < 2 || (zr_msg_frames(m) == 2 && first_len == 0)) {
		struct zr_delivery blank = {0};

		*d = blank;
		d->name = "";
		textf(sc->err, sizeof sc->err, "a request needs name and payload frames");
		d->error = -EPROTO;
		d->error_text = sc->err;
		return;
	}
	reply_address(rid, rid_len, reply_to);
	zr__brokermsg_decode(m, 1, reply_to, sc, d);
}

static bool
sub_msg_ok(struct zr_subscription *sub, zr_msg *m)
{
	struct zr_delivery d = {0};

	sub_decode(sub, m, &sub->check, &d);
	return d.error == 0;
}

/* Runs the handler on a job, in the thread of worker w. */
static void
sub_run(struct zr_subscription *sub, struct sub_worker *w, struct sub_job *j)
{
	uint64_t errors = 0;

	for (size_t i = 0; i < j->n; i++) {
		struct zr_delivery *d = &w->ds[i];

		sub_decode(sub, j->m[i], &w->sc[i], d);
		d->seq = j->seq + i;
		d->lane = w->idx;
		w->dv[i] = d;
		errors += d->error != 0;
	}
	if (errors > 0)
		atomic_fetch_add(&sub->errors, errors);
	if (sub->o.batch_handler != NULL)
		sub->o.batch_handler(w->dv, j->n, sub->o.arg);
	else
		sub->o.handler(&w->ds[0], sub->o.arg);
	atomic_fetch_add(&sub->handled, j->n);
	sub_free_msgs(j);
}

static void *
sub_worker_main(void *arg)
{
	struct sub_worker *w = arg;
	struct zr_subscription *sub = w->sub;

	pthread_mutex_lock(&sub->lock);
	for (;;) {
		struct sub_job t;

		while (w->pending.n == 0 && !sub->exit)
			pthread_cond_wait(&w->cond, &sub->lock);
		if (sub->exit && (w->pending.n == 0 || atomic_load(&sub->stop) == SUB_DROP)) {
			sub_discard(sub, &w->pending);
			break;
		}
		t = w->current;
		w->current = w->pending;
		w->pending = t;
		w->pending.n = 0;
		w->busy = true;
		/* The inbox is empty again: a dispatcher waiting to hand this lane
		 * its next job goes on now, not when this handler returns (which,
		 * for a handler that blocks, would stall every other lane). */
		pthread_cond_broadcast(&sub->cond);
		pthread_mutex_unlock(&sub->lock);
		sub_run(sub, w, &w->current);
		pthread_mutex_lock(&sub->lock);
		w->busy = false;
		pthread_cond_broadcast(&sub->cond);
	}
	pthread_mutex_unlock(&sub->lock);
	return NULL;
}

/* Pool: waits for a worker with nothing to do. NULL when dropped. */
static struct sub_worker *
sub_free_worker(struct zr_subscription *sub)
{
	struct sub_worker *w = NULL;

	pthread_mutex_lock(&sub->lock);
	while (atomic_load(&sub->stop) != SUB_DROP) {
		for (unsigned i = 0; i < sub->nworkers && w == NULL; i++) {
			if (!sub->w[i].busy && sub->w[i].pending.n == 0)
				w = &sub->w[i];
		}
		if (w != NULL)
			break;
		pthread_cond_wait(&sub->cond, &sub->lock);
	}
	pthread_mutex_unlock(&sub->lock);
	return w;
}

/* Hands the dispatcher's job to w, waiting while w's inbox is full (a busy
 * lane blocks the dispatch rather than reorder). False when dropped. */
static bool
sub_hand(struct zr_subscription *sub, struct sub_worker *w)
{
	struct sub_job t;

	pthread_mutex_lock(&sub->lock);
	while (w->pending.n != 0 && atomic_load(&sub->stop) != SUB_DROP)
		pthread_cond_wait(&sub->cond, &sub->lock);
	if (atomic_load(&sub->stop) == SUB_DROP) {
		pthread_mutex_unlock(&sub->lock);
		return false;
	}
	t = w->pending;
	w->pending = sub->job;
	sub->job = t;
	sub->job.n = 0;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&sub->lock);
	return true;
}

/* Draining: waits until every worker is idle. */
static void
sub_wait_idle(struct zr_subscription *sub)
{
	pthread_mutex_lock(&sub->lock);
	for (;;) {
		bool idle = true;

		for (unsigned i = 0; i < sub->nworkers; i++)
			idle = idle && !sub->w[i].busy && sub->w[i].pending.n == 0;
		if (idle || atomic_load(&sub->stop) == SUB_DROP)
			break;
		pthread_cond_wait(&sub->cond, &sub->lock);
	}
	pthread_mutex_unlock(&sub->lock);
}

static void *
sub_dispatch(void *arg)
{
	struct zr_subscription *sub = arg;
	zr_msg *held = NULL; /* an error item that closed a batch: its own batch next */
	bool threads = sub->nworkers > 1;
	int rc = 0;

	for (;;) {
		struct sub_worker *w = &sub->w[0];
		zr_msg *m;

		/* An error item held back by a batch still goes out after the
		 * end of a drained stream. */
		if ((rc < 0 && held == NULL) || atomic_load(&sub->stop) == SUB_DROP)
			break;
		if (threads && !sub->o.by_key) {
			w = sub_free_worker(sub);
			if (w == NULL)
				break;
		}
		if (held != NULL) {
			sub->job.m[sub->job.n++] = held;
			held = NULL;
		} else {
			rc = sub_next(sub, &m, UINT64_MAX);
			if (rc < 0)
				break;
			sub->job.m[sub->job.n++] = m;
			if (sub->batch > 1 && sub_msg_ok(sub, m)) {
				uint64_t deadline = zr__now_ms() + ZR_BATCH_WAIT_MS;

				while (sub->job.n < sub->batch) {
					rc = sub_next(sub, &m, deadline);
					if (rc < 0)
						break;
					if (!sub_msg_ok(sub, m)) {
						held = m;
						break;
					}
					sub->job.m[sub->job.n++] = m;
				}
				if (rc == -EAGAIN)
					rc = 0; /* the 20 ms ran out: the batch closes */
			}
		}
		if (rc == -ECANCELED)
			break;
		sub->job.seq = sub->seq + 1;
		sub->seq += sub->job.n;
		if (!threads) {
			struct sub_job t = w->current;

			w->current = sub->job;
			sub->job = t;
			sub_run(sub, w, &w->current);
			continue;
		}
		if (sub->o.by_key) {
			/* No keys on ZeroMQ: rotate, starting at lane 1. */
			sub->rotation = (sub->rotation + 1) % sub->nworkers;
			w = &sub->w[sub->rotation];
		}
		if (!sub_hand(sub, w))
			break;
	}
	/* The end of a drained stream flushed the partial batch above (a job
	 * goes out before the loop looks at rc); only a drop leaves one here. */
	if (held != NULL)
		sub->job.m[sub->job.n++] = held;
	sub_discard(sub, &sub->job);
	if (threads) {
		if (atomic_load(&sub->stop) == SUB_DRAIN)
			sub_wait_idle(sub);
		pthread_mutex_lock(&sub->lock);
		sub->exit = true;
		for (unsigned i = 0; i < sub->nworkers; i++)
			pthread_cond_signal(&sub->w[i].cond);
		pthread_mutex_unlock(&sub->lock);
	}
	pthread_mutex_lock(&sub->b->lock);
	sub->done = true;
	pthread_cond_broadcast(&sub->b->cond);
	pthread_mutex_unlock(&sub->b->lock);
	return NULL;
}

/* ---- subscriptions: the API ------------------------------------------------- */

static void
sub_workers_free(struct zr_subscription *sub)
{
	for (unsigned i = 0; i < sub->nworkers && sub->w != NULL; i++) {
		struct sub_worker *w = &sub->w[i];

		if (w->sc != NULL) {
			for (size_t k = 0; k < sub->batch; k++)
				zr__brokermsg_scratch_fini(&w->sc[k]);
		}
		free(w->sc);
		free(w->ds);
		free(w->dv);
		free(w->pending.m);
		free(w->current.m);
		pthread_cond_destroy(&w->cond);
	}
	free(sub->w);
	free(sub->job.m);
}

static int
sub_workers_alloc(struct zr_subscription *sub)
{
	sub->w = calloc(sub->nworkers, sizeof *sub->w);
	sub->job.m = calloc(sub->batch, sizeof *sub->job.m);
	if (sub->w == NULL || sub->job.m == NULL)
		return -ENOMEM;
	for (unsigned i = 0; i < sub->nworkers; i++) {
		struct sub_worker *w = &sub->w[i];

		w->sub = sub;
		w->idx = i;
		if (pthread_cond_init(&w->cond, NULL) != 0)
			return -ENOMEM;
		w->sc = calloc(sub->batch, sizeof *w->sc);
		w->ds = calloc(sub->batch, sizeof *w->ds);
		w->dv = calloc(sub->batch, sizeof *w->dv);
		w->pending.m = calloc(sub->batch, sizeof *w->pending.m);
		w->current.m = calloc(sub->batch, sizeof *w->current.m);
		if (w->sc == NULL || w->ds == NULL || w->dv == NULL || w->pending.m == NULL ||
		    w->current.m == NULL)
			return -ENOMEM;
	}
	return 0;
}

/* A bound subscription gives its address back before it returns, so a later
 * subscription can bind it at once (closing the socket alone lets the io
 * thread close the listener some time later). */
static void
sub_release_endpoint(struct zr_subscription *sub)
{
	char ep[ZR__ENDPOINT_TEXT_MAX];
	size_t len = sizeof ep;
	uint64_t deadline = zr__now_ms() + 2000;

	if (!sub->bound || zr_getsockopt(sub->sock, ZR_LAST_ENDPOINT, ep, &len) < 0 ||
	    zr_unbind(sub->sock, ep) < 0)
		return;
	while (zr__sock_listen_fds(sub->sock) > 0 && zr__now_ms() < deadline) {
		struct timespec ts = {0, 1000000L};

		nanosleep(&ts, NULL);
	}
}

/* Stops the threads (drop), joins them and closes the socket. */
static void
sub_stop_join(struct zr_subscription *sub)
{
	if (sub->joined)
		return;
	atomic_store(&sub->stop, SUB_DROP);
	if (sub->efd_stop >= 0)
		fd_signal(sub->efd_stop);
	pthread_mutex_lock(&sub->lock);
	pthread_cond_broadcast(&sub->cond);
	pthread_mutex_unlock(&sub->lock);
	if (sub->dispatcher_started)
		pthread_join(sub->dispatcher, NULL);
	pthread_mutex_lock(&sub->lock);
	sub->exit = true;
	for (unsigned i = 0; i < sub->nworkers && sub->w != NULL; i++)
		pthread_cond_signal(&sub->w[i].cond);
	pthread_mutex_unlock(&sub->lock);
	for (unsigned i = 0; i < sub->nworkers && sub->w != NULL; i++) {
		if (sub->w[i].started)
			pthread_join(sub->w[i].thread, NULL);
		sub_discard(sub, &sub->w[i].pending);
		sub_discard(sub, &sub->w[i].current);
	}
	if (sub->sock != NULL) {
		/* What the channel still holds is discarded with the socket. */
		if (!sub->channel_counted)
			atomic_fetch_add(&sub->discarded, zr__sock_rx_queued(sub->sock));
		sub_release_endpoint(sub);
	}
	/* zr_subscription_stats, from any thread, reads the socket while
	 * joined is false, under sub->lock: set it under the lock before the
	 * close, after which the io thread may free the socket. */
	pthread_mutex_lock(&sub->lock);
	if (sub->sock != NULL)
		sub->peak = zr__sock_rx_peak(sub->sock);
	sub->joined = true;
	pthread_mutex_unlock(&sub->lock);
	if (sub->sock != NULL)
		zr_socket_close(sub->sock);
}

static void
sub_free(struct zr_subscription *sub)
{
	sub_stop_join(sub);
	sub_workers_free(sub);
	zr__brokermsg_scratch_fini(&sub->check);
	if (sub->efd_stop >= 0)
		close(sub->efd_stop);
	pthread_mutex_destroy(&sub->lock);
	pthread_cond_destroy(&sub->cond);
	free(sub->name);
	free(sub);
}

/* Checks the mount site's options; fills err. */
static int
sub_check_opts(zr_broker *b, const char *name, const struct zr_sub_opts *o, char *err, size_t cap)
{
	if (name == NULL || !zr__utf8_valid(name, strlen(name))) {
		textf(err, cap, "invalid descriptor: a subscription needs a UTF-8 name");
		return -EINVAL;
	}
	if (o == NULL || (o->handler == NULL) == (o->batch_handler == NULL)) {
		textf(err, cap,
		      "invalid descriptor: subscription '%s' needs exactly one of a handler and a "
		      "batch handler",
		      name);
		return -EINVAL;
	}
	if (o->batch_handler != NULL && b->pattern == ZR_RPC) {
		textf(err, cap,
		      "invalid descriptor: subscription '%s': an RPC responder is not batchable "
		      "(each request has its own reply address)",
		      name);
		return -EINVAL;
	}
	if (o->batch_handler != NULL && o->by_key) {
		textf(err, cap,
		      "invalid descriptor: subscription '%s': by_key has no meaning for a batch "
		      "handler",
		      name);
		return -EINVAL;
	}
	if (o->handler != NULL && o->batch > 1) {
		textf(err, cap,
		      "invalid descriptor: subscription '%s': a batch size needs a batch handler",
		      name);
		return -EINVAL;
	}
	if (o->workers > 1024 || o->batch > 65536) {
		textf(err, cap,
		      "invalid descriptor: subscription '%s': workers or batch out of range", name);
		return -EINVAL;
	}
	if (b->pattern == ZR_FANOUT && strlen(name) > ZR__SUB_MAX) {
		textf(err, cap,
		      "invalid descriptor: fan-out subscription name '%.32s...' is longer than %d "
		      "bytes",
		      name, ZR__SUB_MAX);
		return -EINVAL;
	}
	return 0;
}

/* Opens the subscription's socket and binds or dials. Broker lock held. */
static int
sub_open_socket(zr_broker *b, struct zr_subscription *sub)
{
	static const int types[] = {
		[ZR_QUEUE] = ZR_PULL, [ZR_FANOUT] = ZR_SUB, [ZR_RPC] = ZR_ROUTER};
	int ra = (int)sub->read_ahead, zero = 0, one = 1, rc;
	zr_msg *none = NULL;

	rc = zr_socket_open(b->ctx, types[b->pattern], &sub->sock);
	if (rc < 0)
		return rc;
	rc = broker_apply_opts(b, sub->sock, false);
	if (rc < 0)
		return rc;
	zr_setsockopt(sub->sock, ZR_RCVHWM, &ra, sizeof ra);
	zr__sock_rx_refill_each(sub->sock); /* the channel stays full: read_ahead exactly */
	zr_setsockopt(sub->sock, ZR_RCVBYTES, &b->read_ahead_bytes, sizeof b->read_ahead_bytes);
	zr_setsockopt(sub->sock, ZR_LINGER, &zero, sizeof zero);
	if (b->pattern == ZR_FANOUT)
		zr_setsockopt(sub->sock, ZR_SUBSCRIBE, sub->name, strlen(sub->name));
	if (b->pattern == ZR_RPC)
		zr_setsockopt(sub->sock, ZR_ROUTER_MANDATORY, &one, sizeof one);
	rc = b->side == ZR_BIND ? zr_bind(sub->sock, b->endpoint)
	                        : zr_connect(sub->sock, b->endpoint);
	if (rc < 0)
		return rc;
	/* Make the queues before two threads (dispatcher, replies) use them. */
	rc = zr_recv(sub->sock, &none, ZR_DONTWAIT);
	return rc == -EAGAIN ? 0 : rc;
}

static int
sub_start_threads(struct zr_subscription *sub)
{
	if (sub->nworkers > 1) {
		for (unsigned i = 0; i < sub->nworkers; i++) {
			if (pthread_create(&sub->w[i].thread, NULL, sub_worker_main, &sub->w[i]) !=
			    0)
				return -EAGAIN;
			sub->w[i].started = true;
		}
	}
	if (pthread_create(&sub->dispatcher, NULL, sub_dispatch, sub) != 0)
		return -EAGAIN;
	sub->dispatcher_started = true;
	return 0;
}

/* see zring.h */
int
zr_subscribe(zr_broker *b, const char *name, const struct zr_sub_opts *o, zr_subscription **out)
{
	struct zr_subscription *sub;
	int rc;

	if (b == NULL || out == NULL)
		return -EINVAL;
	pthread_mutex_lock(&b->lock);
	b->err[0] = '\0';
	rc = broker_usable(b, b->err, sizeof b->err);
	if (rc == 0)
		rc = sub_check_opts(b, name, o, b->err, sizeof b->err);
	if (rc == 0 && b->side == ZR_BIND && b->listener != NULL) {
		textf(b->err, sizeof b->err,
		      "invalid descriptor: subscription '%s' holds the bound %s endpoint '%s'; "
		      "subscription '%s' cannot bind it too (a bound endpoint takes one "
		      "subscription: dial it from a connect-side broker, or use an endpoint of its "
		      "own)",
		      b->listener->name, pattern_name(b->pattern), b->endpoint, name);
		rc = -EINVAL;
	}
	if (rc < 0) {
		pthread_mutex_unlock(&b->lock);
		return rc;
	}
	sub = calloc(1, sizeof *sub);
	if (sub == NULL || (sub->name = strdup(name)) == NULL) {
		free(sub);
		pthread_mutex_unlock(&b->lock);
		return -ENOMEM;
	}
	sub->b = b;
	sub->o = *o;
	sub->rpc = b->pattern == ZR_RPC;
	sub->batch = o->batch_handler != NULL && o->batch > 1 ? o->batch : 1;
	sub->nworkers = o->workers > 1 ? o->workers : 1;
	sub->read_ahead = b->read_ahead;
	sub->efd_stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_init(&sub->lock, NULL);
	pthread_cond_init(&sub->cond, NULL);
	rc = sub->efd_stop < 0 ? -errno : sub_workers_alloc(sub);
	if (rc == 0) {
		rc = sub_open_socket(b, sub);
		if (rc < 0)
			textf(b->err, sizeof b->err,
			      "endpoint error on '%s': subscription '%s' could not %s it: %s%s",
			      b->endpoint, name, b->side == ZR_BIND ? "bind" : "dial",
			      zr_strerror(rc), broker_attach_hint(b, rc));
	}
	if (rc == 0)
		rc = sub_start_threads(sub);
	if (rc < 0) {
		if (b->err[0] == '\0')
			textf(b->err, sizeof b->err, "subscription '%s': %s", name,
			      zr_strerror(rc));
		pthread_mutex_unlock(&b->lock);
		sub_free(sub);
		return rc;
	}
	if (b->side == ZR_BIND) {
		size_t len = sizeof b->bound;

		zr_getsockopt(sub->sock, ZR_LAST_ENDPOINT, b->bound, &len);
		b->listener = sub;
		b->listener_gen++;
		sub->bound = true;
	} else if (b->dialer[0] == '\0') {
		snprintf(b->dialer, sizeof b->dialer, "%s", name);
	}
	if (sub->rpc && b->responder == NULL)
		b->responder = sub;
	sub->next = b->subs;
	b->subs = sub;
	pthread_mutex_unlock(&b->lock);
	*out = sub;
	return 0;
}

/* Takes sub off the broker's books. Broker lock held. */
static void
broker_forget_sub(zr_broker *b, struct zr_subscription *sub)
{
	for (struct zr_subscription **pp = &b->subs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == sub) {
			*pp = sub->next;
			break;
		}
	}
	if (b->listener == sub) {
		b->listener = NULL;
		b->bound[0] = '\0';
		b->listener_gen++;
	}
	if (b->responder == sub) {
		b->responder = NULL;
		for (struct zr_subscription *s = b->subs; s != NULL; s = s->next) {
			if (s->rpc) {
				b->responder = s;
				break;
			}
		}
	}
}

/* see zring.h */
void
zr_unsubscribe(zr_subscription *sub)
{
	zr_broker *b;

	if (sub == NULL)
		return;
	b = sub->b;
	pthread_mutex_lock(&b->lock);
	broker_forget_sub(b, sub);
	pthread_mutex_unlock(&b->lock);
	sub_free(sub);
}

/* see zring.h */
void
zr_subscription_stats(zr_subscription *sub, struct zr_sub_stats *st)
{
	uint64_t received = atomic_load(&sub->received), handled = atomic_load(&sub->handled);
	uint64_t discarded = atomic_load(&sub->discarded);

	memset(st, 0, sizeof *st);
	st->received = received;
	st->handled = handled;
	st->errors = atomic_load(&sub->errors);
	st->discarded = discarded;
	/* A shutdown in another thread closes the socket (sub_stop_join): the
	 * lock orders these reads against it (ThreadSanitizer found them racing
	 * zr_broker_shutdown, and a closed socket may already be freed). No
	 * handler runs under this lock, so a handler may ask too. */
	pthread_mutex_lock(&sub->lock);
	if (!sub->joined && !sub->channel_counted)
		st->depth = zr__sock_rx_queued(sub->sock);
	st->peak_depth = sub->joined ? sub->peak : zr__sock_rx_peak(sub->sock);
	pthread_mutex_unlock(&sub->lock);
	st->in_flight =
		received > handled + discarded ? (size_t)(received - handled - discarded) : 0;
	st->read_ahead = sub->read_ahead;
}

/* see zring.h */
zr_socket *
zr_subscription_socket(zr_subscription *sub)
{
	return sub != NULL && !sub->joined ? sub->sock : NULL;
}

/* ---- shutdown ---------------------------------------------------------------- */

static void pub_wake(struct zr_publisher *p);

/* see zring.h */
int
zr_broker_shutdown(zr_broker *b)
{
	uint64_t deadline;
	bool all = true;

	if (b == NULL)
		return -EINVAL;
	pthread_mutex_lock(&b->lock);
	atomic_store(&b->closed, 1);
	for (struct zr_publisher *p = b->pubs; p != NULL; p = p->next)
		pub_wake(p);
	/* Stop reading: the connections take nothing more into the channels;
	 * the dispatchers hand what the channels hold to the handlers. */
	for (struct zr_subscription *sub = b->subs; sub != NULL; sub = sub->next) {
		if (sub->joined)
			continue;
		zr__sock_rx_hold(sub->sock);
		if (atomic_load(&sub->stop) == SUB_RUN)
			atomic_store(&sub->stop, SUB_DRAIN);
		fd_signal(sub->efd_stop);
	}
	deadline = b->drain_ms < 0 ? UINT64_MAX : zr__now_ms() + (uint64_t)b->drain_ms;
	for (;;) {
		struct timespec ts;

		all = true;
		for (struct zr_subscription *sub = b->subs; sub != NULL; sub = sub->next)
			all = all && (sub->done || sub->joined);
		if (all || zr__now_ms() >= deadline)
			break;
		if (deadline == UINT64_MAX) {
			pthread_cond_wait(&b->cond, &b->lock);
		} else {
			ms_to_timespec(deadline, &ts);
			pthread_cond_timedwait(&b->cond, &b->lock, &ts);
		}
	}
	/* Drained ones close now; a handler that outlived the timeout keeps its
	 * subscription until zr_broker_free (a thread cannot be stopped). */
	for (struct zr_subscription *sub = b->subs; sub != NULL; sub = sub->next) {
		if (sub->done && !sub->joined) {
			sub_stop_join(sub);
		} else if (!sub->joined) {
			/* rx_hold keeps anything new out: what the channel holds
			 * now is what this shutdown discards. */
			atomic_fetch_add(&sub->discarded, zr__sock_rx_queued(sub->sock));
			atomic_store(&sub->stop, SUB_DROP);
			pthread_mutex_lock(&sub->lock);
			sub->channel_counted = true; /* under the lock: zr_subscription_stats */
			pthread_cond_broadcast(&sub->cond);
			pthread_mutex_unlock(&sub->lock);
		}
	}
	pthread_mutex_unlock(&b->lock);
	return all ? 0 : -ETIMEDOUT;
}

static void pub_destroy(struct zr_publisher *p);

/* see zring.h */
void
zr_broker_free(zr_broker *b)
{
	if (b == NULL)
		return;
	if (!atomic_load(&b->closed))
		zr_broker_shutdown(b);
	while (b->subs != NULL) {
		struct zr_subscription *sub = b->subs;

		b->subs = sub->next;
		sub_free(sub);
	}
	while (b->pubs != NULL) {
		struct zr_publisher *p = b->pubs;

		b->pubs = p->next;
		pub_destroy(p);
	}
	broker_opts_free(b);
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
	free(b);
}

/* ---- publishers ------------------------------------------------------------- */

static void
pub_wake(struct zr_publisher *p)
{
	if (atomic_load(&p->waiting)) {
		atomic_store(&p->signalled, 1);
		fd_signal(p->efd_cancel);
	}
}

/* see zring.h */
int
zr_publisher_new(zr_broker *b, zr_publisher **out)
{
	struct zr_publisher *p;

	if (b == NULL || out == NULL)
		return -EINVAL;
	p = calloc(1, sizeof *p);
	if (p == NULL)
		return -ENOMEM;
	p->efd_cancel = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->efd_cancel < 0) {
		free(p);
		return -errno;
	}
	p->b = b;
	pthread_mutex_lock(&b->lock);
	p->next = b->pubs;
	b->pubs = p;
	pthread_mutex_unlock(&b->lock);
	*out = p;
	return 0;
}

static void
pub_destroy(struct zr_publisher *p)
{
	if (p->sock != NULL)
		zr_socket_close(p->sock);
	if (p->dealer != NULL)
		zr_socket_close(p->dealer);
	close(p->efd_cancel);
	free(p);
}

/* see zring.h */
void
zr_publisher_free(zr_publisher *p)
{
	zr_broker *b;

	if (p == NULL)
		return;
	b = p->b;
	pthread_mutex_lock(&b->lock);
	for (struct zr_publisher **pp = &b->pubs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	pthread_mutex_unlock(&b->lock);
	pub_destroy(p);
}

/* see zring.h */
void
zr_publisher_cancel(zr_publisher *p)
{
	if (p != NULL)
		pub_wake(p);
}

/* see zring.h */
const char *
zr_publisher_error(const zr_publisher *p)
{
	return p != NULL ? p->err : "";
}

/* see zring.h */
zr_socket *
zr_publisher_socket(zr_publisher *p)
{
	return p != NULL ? p->sock : NULL;
}

/* see zring.h */
void
zr_publisher_stats(zr_publisher *p, struct zr_pub_stats *st)
{
	uint64_t since = atomic_load(&p->wait_start);

	memset(st, 0, sizeof *st);
	st->published = atomic_load(&p->published);
	st->blocked_ms = atomic_load(&p->blocked_ms);
	if (since != 0) {
		uint64_t now = zr__now_ms();

		st->blocked_now_ms = now > since ? now - since : 1;
	}
	if (p->sock != NULL)
		st->unmatched = zr__sock_unmatched(p->sock);
}

static int pub_fail(struct zr_publisher *p, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
pub_fail(struct zr_publisher *p, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->err, sizeof p->err, fmt, ap);
	va_end(ap);
	return rc;
}

/* A wait of the publisher ended by its cancel eventfd: closed or cancelled. */
static int
pub_interrupted(struct zr_publisher *p, const char *name)
{
	/* The signal is used up: a later publish must not see it again. */
	atomic_store(&p->signalled, 0);
	fd_drain(p->efd_cancel);
	if (atomic_load(&p->b->closed))
		return pub_fail(p, -ENOTCONN,
		                "transport is not connected: the broker on '%s' was shut down "
		                "while publishing to '%s'",
		                p->b->endpoint, name);
	return pub_fail(p, -ECANCELED, "publish to '%s' was cancelled before the socket took it",
	                name);
}

static uint64_t
deadline_of(int timeout_ms)
{
	return timeout_ms < 0 ? UINT64_MAX : zr__now_ms() + (uint64_t)timeout_ms;
}

static int
remaining_ms(uint64_t deadline)
{
	uint64_t now = zr__now_ms();

	if (deadline == UINT64_MAX)
		return -1;
	return now >= deadline ? 0 : (int)(deadline - now);
}

/* The handshakes the broker watches on its publishers' sockets (when it has
 * socket options: zr_broker_setsockopt). */
#define PUB_MONITOR (ZR_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZR_EVENT_HANDSHAKE_FAILED_AUTH)

/*
 * A failed handshake recorded on sock's monitor: fills p->err, naming target
 * and the reason, and returns -EACCES (the server refused us) or -EPROTO
 * (anything else: a wrong server key, another mechanism); 0 when none. A
 * dialled socket does not retry after a failed handshake, so waiting on for a
 * peer would only hide the reason.
 */
static int
pub_handshake_failed(struct zr_publisher *p, zr_socket *sock, const char *name, const char *target)
{
	struct zr_event ev;
	int rc = 0;

	while (p->b->nopts > 0 && zr_monitor_recv(sock, &ev, 0) == 0) {
		if ((ev.type & PUB_MONITOR) == 0 || rc != 0)
			continue;
		rc = ev.type == ZR_EVENT_HANDSHAKE_FAILED_AUTH ? -EACCES : -EPROTO;
		p->hs_failed = true;
		pub_fail(p, rc, "send error to '%s': the handshake with '%s' failed: %s", name,
		         ev.endpoint[0] != '\0' ? ev.endpoint : target,
		         ev.reason[0] != '\0' ? ev.reason : zr_strerror(rc));
	}
	return rc;
}

/* The fd that turns readable at sock's next watched event, or -1. */
static int
pub_monitor_fd(const struct zr_publisher *p, zr_socket *sock)
{
	int fd = p->b->nopts > 0 ? zr_monitor_fd(sock) : -1;

	return fd < 0 ? -1 : fd;
}

/*
 * Hands *msg to sock, whole or not at all. no_peer_retry: while the socket has
 * no connection past its handshake, retries every ZR_SEND_RETRY_STEP_MS for
 * ZR_SEND_RETRY_WINDOW_MS from the first refusal. Waits are cut short by the
 * deadline (-ETIMEDOUT), a cancel (-ECANCELED) or a shutdown (-ENOTCONN).
 */
static int
pub_send(struct zr_publisher *p, zr_socket *sock, const char *name, const char *target,
         zr_msg **msg, uint64_t deadline, bool no_peer_retry)
{
	uint64_t first_refusal = 0;
	int rc;

	for (;;) {
		if (atomic_load(&p->b->closed))
			return pub_interrupted(p, name);
		if (no_peer_retry && zr__sock_ready_peers(sock) == 0) {
			struct pollfd pf[2] = {{.fd = p->efd_cancel, .events = POLLIN},
			                       {.fd = pub_monitor_fd(p, sock), .events = POLLIN}};
			uint64_t now = zr__now_ms();

			rc = pub_handshake_failed(p, sock, name, target);
			if (rc < 0)
				return rc;
			int step = ZR_SEND_RETRY_STEP_MS, left = remaining_ms(deadline);

			if (first_refusal == 0)
				first_refusal = now;
			if (now - first_refusal >= ZR_SEND_RETRY_WINDOW_MS)
				return pub_fail(
					p, -ENOTCONN,
					"send error to '%s': no connected peer on '%s' after %d ms",
					name, target, ZR_SEND_RETRY_WINDOW_MS);
			if (left == 0)
				return pub_fail(
					p, -ETIMEDOUT,
					"send error to '%s': timed out waiting for a peer on '%s'",
					name, target);
			if (left > 0 && left < step)
				step = left;
			if (poll(pf, 2, step) > 0 && (pf[0].revents & POLLIN))
				return pub_interrupted(p, name);
			continue;
		}
		rc = zr_send(sock, msg, ZR_DONTWAIT);
		if (rc == -EAGAIN && remaining_ms(deadline) != 0) {
			uint64_t start = zr__now_ms();

			atomic_store(&p->wait_start, start ? start : 1);
			rc = zr__sock_send_cancellable(sock, msg, remaining_ms(deadline),
			                               p->efd_cancel);
			atomic_fetch_add(&p->blocked_ms, zr__now_ms() - start);
			atomic_store(&p->wait_start, 0);
		}
		if (rc == 0) {
			atomic_fetch_add(&p->published, 1);
			return 0;
		}
		if (rc == -ECANCELED)
			return pub_interrupted(p, name);
		if (rc == -EAGAIN)
			return pub_fail(
				p, -ETIMEDOUT,
				"send error to '%s': timed out; the peers on '%s' have no room",
				name, target);
		return pub_fail(p, rc, "send error to '%s': %s", name, zr_strerror(rc));
	}
}

/* Starts a wait that zr_publisher_cancel may end. */
static void
pub_wait_begin(struct zr_publisher *p)
{
	atomic_store(&p->waiting, 1);
	/* A cancel aimed at an earlier publish; no syscall when there was none. */
	if (atomic_exchange(&p->signalled, 0))
		fd_drain(p->efd_cancel);
}

static void
pub_wait_end(struct zr_publisher *p)
{
	atomic_store(&p->waiting, 0);
}

/* Fan-out to a local subscription: wait for its filter before the first
 * publish, so that publish is not lost to the slow-joiner gap. */
static int
pub_wait_filter(struct zr_publisher *p, const char *target)
{
	uint64_t deadline = zr__now_ms() + ZR_SEND_RETRY_WINDOW_MS;
	struct pollfd pf[3] = {{.fd = zr_socket_fd(p->sock), .events = POLLIN},
	                       {.fd = p->efd_cancel, .events = POLLIN},
	                       {.fd = pub_monitor_fd(p, p->sock), .events = POLLIN}};

	for (;;) {
		zr_msg *m = NULL;
		int left;
		int hs = pub_handshake_failed(p, p->sock, target, target);

		if (hs < 0)
			return hs;

		if (zr_recv(p->sock, &m, ZR_DONTWAIT) == 0) {
			size_t len;
			const uint8_t *f = zr_msg_frame(m, 0, &len);
			bool sub = len >= 1 && f[0] == 1;

			zr_msg_free(m);
			if (sub)
				return 0;
			continue;
		}
		left = remaining_ms(deadline);
		if (left == 0)
			return pub_fail(p, -ETIMEDOUT,
			                "endpoint error on '%s': the subscription sent no filter "
			                "within %d ms",
			                target, ZR_SEND_RETRY_WINDOW_MS);
		if (poll(pf, 3, left) > 0 && (pf[1].revents & POLLIN))
			return pub_interrupted(p, target);
	}
}

/* Broker lock held: where the publisher's socket goes, or a refusal. */
static int
pub_target(struct zr_publisher *p, const char *name, char *target, bool *bind, bool *local)
{
	zr_broker *b = p->b;
	const char *peer = b->pattern == ZR_QUEUE ? "PUSH" : "PUB";

	if (b->dialer[0] != '\0')
		return pub_fail(p, -EPERM,
		                "send error to '%s': this broker's subscription '%s' dials '%s' "
		                "and reads from the %s peer there, which takes no messages; "
		                "publish through a broker of its own",
		                name, b->dialer, b->endpoint, peer);
	*bind = false;
	*local = false;
	if (b->side == ZR_CONNECT) {
		snprintf(target, ZR__ENDPOINT_TEXT_MAX, "%s", b->endpoint);
	} else if (b->listener != NULL) {
		if (b->pattern == ZR_QUEUE && strcmp(name, b->listener->name) != 0)
			return pub_fail(
				p, -EPERM,
				"send error to '%s': this service's subscription '%s' binds the "
				"queue on '%s' and receives every message pushed into it; publish "
				"'%s' through a queue on an endpoint of its own",
				name, b->listener->name, b->endpoint, name);
		snprintf(target, ZR__ENDPOINT_TEXT_MAX, "%s", b->bound);
		*local = true;
	} else {
		snprintf(target, ZR__ENDPOINT_TEXT_MAX, "%s", b->endpoint);
		*bind = true;
	}
	return 0;
}

/* The broker's options and authenticator on a publisher's socket, and the
 * monitor pub_handshake_failed reads. */
static int
pub_secure(struct zr_publisher *p, zr_socket *sock, bool loopback)
{
	int rc = broker_apply_opts(p->b, sock, loopback);

	if (rc == 0 && p->b->nopts > 0)
		rc = zr_socket_monitor(sock, PUB_MONITOR);
	return rc;
}

/* Attaches (or re-attaches, when the local subscription changed) the
 * publisher's socket. */
static int
pub_attach(struct zr_publisher *p, const char *name, char *target)
{
	zr_broker *b = p->b;
	bool bind = false, local = false;
	uint64_t gen;
	int rc, type, linger;

	pthread_mutex_lock(&b->lock);
	rc = broker_usable(b, p->err, sizeof p->err);
	if (rc == 0)
		rc = pub_target(p, name, target, &bind, &local);
	gen = b->listener_gen;
	linger = b->drain_ms;
	pthread_mutex_unlock(&b->lock);
	if (rc < 0)
		return rc;
	if (p->sock != NULL && p->attach_gen == gen)
		return 0;
	if (p->sock != NULL) {
		zr_socket_close(p->sock);
		p->sock = NULL;
	}
	type = b->pattern == ZR_QUEUE ? ZR_PUSH : local ? ZR_XPUB : ZR_PUB;
	rc = zr_socket_open(b->ctx, type, &p->sock);
	if (rc == 0)
		rc = pub_secure(p, p->sock, local);
	if (rc < 0) {
		zr_socket_close(p->sock);
		p->sock = NULL;
		return pub_fail(p, rc, "send error to '%s': %s", name, zr_strerror(rc));
	}
	zr_setsockopt(p->sock, ZR_LINGER, &linger, sizeof linger);
	if (b->pattern == ZR_FANOUT) {
		int policy = ZR_PUB_BLOCK;

		zr_setsockopt(p->sock, ZR_PUB_POLICY, &policy, sizeof policy);
	}
	rc = bind ? zr_bind(p->sock, target) : zr_connect(p->sock, target);
	if (rc == 0 && local && type == ZR_XPUB) {
		rc = pub_wait_filter(p, target); /* zr_publish made it cancellable */
		if (rc < 0) {
			zr_socket_close(p->sock);
			p->sock = NULL;
			return rc;
		}
	}
	if (rc < 0) {
		zr_socket_close(p->sock);
		p->sock = NULL;
		return pub_fail(p, rc, "endpoint error on '%s': could not %s it: %s%s", target,
		                bind ? "bind" : "dial", zr_strerror(rc), broker_attach_hint(b, rc));
	}
	p->attach_gen = gen;
	return 0;
}

/* Drops the subscription messages an XPUB collects (the filter itself is
 * kept by the socket), so its connection never stops reading. */
static void
pub_drain_xpub(struct zr_publisher *p)
{
	zr_msg *m;

	while (zr__sock_type(p->sock) == ZR_XPUB && zr_recv(p->sock, &m, ZR_DONTWAIT) == 0)
		zr_msg_free(m);
}

static int pub_reply(struct zr_publisher *p, const char *dest, const struct zr_header *h, size_t nh,
                     const struct zr_header *extra, const void *payload, size_t len);

/* see zring.h */
int
zr_publish(zr_publisher *p, const char *name, const struct zr_header *h, size_t nh,
           const void *payload, size_t len, int timeout_ms)
{
	char target[ZR__ENDPOINT_TEXT_MAX];
	uint64_t deadline = deadline_of(timeout_ms);
	zr_msg *m;
	int rc;

	if (p == NULL || name == NULL || (payload == NULL && len > 0))
		return -EINVAL;
	p->err[0] = '\0';
	if (p->b->pattern == ZR_RPC)
		return pub_reply(p, name, h, nh, NULL, payload, len);
	if (zr_msg_new(&m) < 0)
		return -ENOMEM;
	rc = zr__brokermsg_encode(m, name, h, nh, NULL, payload, len, p->err, sizeof p->err);
	if (rc < 0) {
		char why[ZR_ERRTEXT_MAX];

		zr_msg_free(m);
		snprintf(why, sizeof why, "%s", p->err);
		return pub_fail(p, rc, "send error to '%s': %s", name, why);
	}
	pub_wait_begin(p);
	rc = pub_attach(p, name, target);
	if (rc == 0) {
		pub_drain_xpub(p);
		rc = pub_send(p, p->sock, name, target, &m, deadline, p->b->pattern == ZR_QUEUE);
	}
	if (p->hs_failed && p->sock != NULL) {
		/* A refused or failed handshake is final for that connection:
		 * the next publish dials again (and says why again, or gets
		 * through if the server changed its mind). */
		zr_socket_close(p->sock);
		p->sock = NULL;
	}
	p->hs_failed = false;
	pub_wait_end(p);
	zr_msg_free(m);
	return rc;
}

/* ---- RPC: replies and requests ------------------------------------------------ */

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int
pub_reply(struct zr_publisher *p, const char *dest, const struct zr_header *h, size_t nh,
          const struct zr_header *extra, const void *payload, size_t len)
{
	zr_broker *b = p->b;
	const char *hex = dest + sizeof BROKER_REPLY_PREFIX - 1;
	uint8_t rid[ZR__SUB_MAX];
	size_t hex_len, rid_len;
	zr_msg *m;
	int rc;

	pthread_mutex_lock(&b->lock);
	rc = broker_usable(b, p->err, sizeof p->err);
	pthread_mutex_unlock(&b->lock);
	if (rc < 0)
		return rc;
	if (strncmp(dest, BROKER_REPLY_PREFIX, sizeof BROKER_REPLY_PREFIX - 1) != 0)
		return pub_fail(p, -EINVAL,
		                "send error to '%s': an RPC publisher sends replies only, to the "
		                "'zmq-reply:<hex>' address a request's reply-to header carries; "
		                "send requests with zr_request()",
		                dest);
	hex_len = strlen(hex);
	if (hex_len == 0 || hex_len % 2 != 0 || hex_len / 2 > ZR__SUB_MAX)
		return pub_fail(p, -EINVAL, "send error to '%s': malformed reply address", dest);
	rid_len = hex_len / 2;
	for (size_t i = 0; i < rid_len; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return pub_fail(p, -EINVAL, "send error to '%s': malformed reply address",
			                dest);
		rid[i] = (uint8_t)(hi << 4 | lo);
	}
	if (zr_msg_new(&m) < 0)
		return -ENOMEM;
	rc = zr_msg_add(m, rid, rid_len);
	if (rc == 0)
		rc = zr__brokermsg_encode(m, "reply", h, nh, extra, payload, len, p->err,
		                          sizeof p->err);
	if (rc < 0) {
		char why[ZR_ERRTEXT_MAX];

		zr_msg_free(m);
		snprintf(why, sizeof why, "%s", p->err);
		return pub_fail(p, rc, "send error to '%s': %s", dest, why);
	}
	/* The responder's ROUTER is shared by every publisher of the broker; the
	 * broker lock orders their sends (a ROUTER send never waits). */
	pthread_mutex_lock(&b->lock);
	if (b->responder == NULL) {
		rc = pub_fail(p, -ENOTCONN,
		              "send error to '%s': no responder subscription is attached", dest);
	} else {
		rc = zr_send(b->responder->sock, &m, ZR_DONTWAIT);
		if (rc == -EHOSTUNREACH)
			pub_fail(p, rc,
			         "send error to '%s': no connected requester holds this reply "
			         "address (it timed out or went away)",
			         dest);
		else if (rc < 0)
			pub_fail(p, rc, "send error to '%s': %s", dest, zr_strerror(rc));
		else
			atomic_fetch_add(&p->published, 1);
	}
	pthread_mutex_unlock(&b->lock);
	zr_msg_free(m);
	return rc;
}

/* see zring.h */
int
zr_reply(zr_publisher *p, const struct zr_delivery *req, const struct zr_header *h, size_t nh,
         const void *payload, size_t len)
{
	struct zr_header corr = {"correlation-id", NULL};
	bool has = false;

	if (p == NULL || req == NULL || (payload == NULL && len > 0))
		return -EINVAL;
	p->err[0] = '\0';
	if (req->reply_to == NULL)
		return pub_fail(p, -EINVAL,
		                "send error: the delivery '%s' carries no reply-to address",
		                req->name);
	corr.value = zr_delivery_header(req, "correlation-id");
	for (size_t i = 0; i < nh; i++)
		has = has || strcasecmp(h[i].name, "correlation-id") == 0;
	return pub_reply(p, req->reply_to, h, nh, corr.value != NULL && !has ? &corr : NULL,
	                 payload, len);
}

/* Where requests go: the dialled endpoint, or the local responder. */
static int
pub_request_target(struct zr_publisher *p, const char *name, char *target)
{
	zr_broker *b = p->b;
	int rc;

	pthread_mutex_lock(&b->lock);
	rc = broker_usable(b, p->err, sizeof p->err);
	if (rc == 0 && b->pattern != ZR_RPC)
		rc = pub_fail(p, -EINVAL,
		              "send error to '%s': requests need an RPC broker, this one is %s",
		              name, pattern_name(b->pattern));
	if (rc == 0 && b->side == ZR_CONNECT)
		snprintf(target, ZR__ENDPOINT_TEXT_MAX, "%s", b->endpoint);
	else if (rc == 0 && b->listener != NULL)
		snprintf(target, ZR__ENDPOINT_TEXT_MAX, "%s", b->bound);
	else if (rc == 0)
		rc = pub_fail(p, -ENOTCONN,
		              "send error to '%s': no responder subscription is attached to '%s' "
		              "(a bound RPC broker's requests go to its own responder)",
		              name, b->endpoint);
	pthread_mutex_unlock(&b->lock);
	return rc;
}

static int
pub_dealer(struct zr_publisher *p, const char *target)
{
	int zero = 0, rc;

	if (p->dealer != NULL && strcmp(p->dealer_target, target) == 0)
		return 0;
	if (p->dealer != NULL)
		zr_socket_close(p->dealer);
	p->dealer = NULL;
	rc = zr_socket_open(p->b->ctx, ZR_DEALER, &p->dealer);
	if (rc < 0)
		return rc;
	/* A bound RPC broker's requests go to its own responder. */
	rc = pub_secure(p, p->dealer, p->b->side == ZR_BIND);
	if (rc < 0) {
		zr_socket_close(p->dealer);
		p->dealer = NULL;
		return rc;
	}
	zr_setsockopt(p->dealer, ZR_LINGER, &zero, sizeof zero);
	rc = zr_connect(p->dealer, target);
	if (rc < 0) {
		zr_socket_close(p->dealer);
		p->dealer = NULL;
		return rc;
	}
	snprintf(p->dealer_target, sizeof p->dealer_target, "%s", target);
	return 0;
}

/* Waits for the reply carrying corr on the publisher's DEALER. */
static int
pub_await_reply(struct zr_publisher *p, const char *name, const char *corr, uint64_t deadline,
                struct zr_delivery **reply)
{
	struct pollfd pf[2] = {{.fd = zr_socket_fd(p->dealer), .events = POLLIN},
	                       {.fd = p->efd_cancel, .events = POLLIN}};
	struct owned_delivery *o = calloc(1, sizeof *o);

	if (o == NULL)
		return -ENOMEM;
	for (;;) {
		int left;

		if (zr_recv(p->dealer, &o->m, ZR_DONTWAIT) == 0) {
			const char *id;

			if (zr__brokermsg_decode(o->m, 0, NULL, &o->sc, &o->d) == 0 &&
			    (id = zr_delivery_header(&o->d, "correlation-id")) != NULL &&
			    strcmp(id, corr) == 0) {
				*reply = &o->d;
				return 0;
			}
			zr_msg_free(o->m); /* someone else's (or a malformed) reply */
			o->m = NULL;
			continue;
		}
		if (atomic_load(&p->b->closed)) {
			zr_delivery_free(&o->d);
			return pub_interrupted(p, name);
		}
		left = remaining_ms(deadline);
		if (left == 0) {
			zr_delivery_free(&o->d);
			return pub_fail(p, -ETIMEDOUT,
			                "request to '%s' timed out (correlation-id %s)", name,
			                corr);
		}
		if (poll(pf, 2, left) > 0 && (pf[1].revents & POLLIN)) {
			zr_delivery_free(&o->d);
			return pub_interrupted(p, name);
		}
	}
}

/* see zring.h */
int
zr_request(zr_publisher *p, const char *name, const struct zr_header *h, size_t nh,
           const void *payload, size_t len, int timeout_ms, struct zr_delivery **reply)
{
	char target[ZR__ENDPOINT_TEXT_MAX], idbuf[64];
	uint64_t deadline = deadline_of(timeout_ms);
	struct zr_header corr = {"correlation-id", NULL};
	zr_msg *m;
	int rc;

	if (p == NULL || name == NULL || reply == NULL || (payload == NULL && len > 0))
		return -EINVAL;
	*reply = NULL;
	p->err[0] = '\0';
	rc = pub_request_target(p, name, target);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < nh && corr.value == NULL; i++) {
		if (h[i].name != NULL && strcasecmp(h[i].name, "correlation-id") == 0)
			corr.value = h[i].value;
	}
	if (corr.value == NULL) {
		snprintf(idbuf, sizeof idbuf, "req-%ld-%016" PRIx64, (long)getpid(),
		         atomic_fetch_add(&p->b->corr, 1));
		corr.value = idbuf;
	}
	if (zr_msg_new(&m) < 0)
		return -ENOMEM;
	rc = zr__brokermsg_encode(m, name, h, nh, corr.value == idbuf ? &corr : NULL, payload, len,
	                          p->err, sizeof p->err);
	if (rc < 0) {
		char why[ZR_ERRTEXT_MAX];

		zr_msg_free(m);
		snprintf(why, sizeof why, "%s", p->err);
		return pub_fail(p, rc, "send error to '%s': %s", name, why);
	}
	rc = pub_dealer(p, target);
	if (rc < 0) {
		zr_msg_free(m);
		return pub_fail(p, rc, "endpoint error on '%s': %s%s", target, zr_strerror(rc),
		                broker_attach_hint(p->b, rc));
	}
	pub_wait_begin(p);
	rc = pub_send(p, p->dealer, name, target, &m, deadline, true);
	if (rc == 0)
		rc = pub_await_reply(p, name, corr.value, deadline, reply);
	pub_wait_end(p);
	zr_msg_free(m);
	p->hs_failed = false; /* the DEALER goes below */
	if (rc < 0) {
		/* Its reply may still come: this socket never serves another
		 * request, so that reply can never resolve a later one. */
		zr_socket_close(p->dealer);
		p->dealer = NULL;
	}
	return rc;
}
