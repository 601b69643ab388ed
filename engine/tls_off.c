/*
 * The TLS adapter of a build without TLS (cmake -DZR_TLS=OFF): the functions
 * of tls.h with no OpenSSL behind them. Built instead of tls.c, so libssl and
 * libcrypto are neither linked nor mapped (docs/tls.md, "What OpenSSL costs
 * a process"). No context can be made, so no session exists: a tls://
 * zr_bind / zr_connect fails in zr__sock_tls_ctx with -EPROTONOSUPPORT, and
 * the calls on a session below are never reached (each answers as for a
 * failed one). zr__tls_sniff and zr__tls_ktls_kernel need no OpenSSL and
 * live in tls_sock.c for both builds.
 */
#include "engine/tls.h"

#include <errno.h>
#include <stdio.h>

#include "common/base.h"

#define TLS_OFF_TEXT "TLS: this zring was built without TLS (cmake -DZR_TLS=OFF)"

/* see tls.h */
int
zr__tls_ctx_new(struct zr__tls_ctx **out, const struct zr__tls_config *cfg, char *err,
                size_t errcap)
{
	(void)cfg;
	*out = NULL;
	if (err != NULL && errcap > 0)
		snprintf(err, errcap, "%s", TLS_OFF_TEXT);
	return -EPROTONOSUPPORT;
}

/* see tls.h */
void
zr__tls_ctx_free(struct zr__tls_ctx *c)
{
	(void)ZR_INVARIANT(c == NULL);
}

/* see tls.h */
int
zr__tls_new(struct zr__tls **out, struct zr__tls_ctx *c, const char *server_name)
{
	(void)c;
	(void)server_name;
	*out = NULL;
	return -EPROTONOSUPPORT;
}

/* see tls.h */
void
zr__tls_free(struct zr__tls *t)
{
	(void)ZR_INVARIANT(t == NULL);
}

/* see tls.h */
ssize_t
zr__tls_feed(struct zr__tls *t, const void *buf, size_t len)
{
	(void)t;
	(void)buf;
	(void)len;
	return -EPROTONOSUPPORT;
}

/* see tls.h */
uint8_t *
zr__tls_recv_buf(struct zr__tls *t, size_t *len)
{
	(void)t;
	*len = 0;
	return NULL;
}

/* see tls.h */
int
zr__tls_recv_ack(struct zr__tls *t, size_t n)
{
	(void)t;
	(void)n;
	return -EPROTONOSUPPORT;
}

/* see tls.h */
size_t
zr__tls_pending(const struct zr__tls *t)
{
	(void)t;
	return 0;
}

/* see tls.h */
size_t
zr__tls_pull(struct zr__tls *t, void *buf, size_t cap)
{
	(void)t;
	(void)buf;
	(void)cap;
	return 0;
}

/* see tls.h */
const uint8_t *
zr__tls_send_buf(struct zr__tls *t, size_t *len)
{
	(void)t;
	*len = 0;
	return NULL;
}

/* see tls.h */
int
zr__tls_send_ack(struct zr__tls *t, size_t n)
{
	(void)t;
	(void)n;
	return -EPROTONOSUPPORT;
}

/* see tls.h */
int
zr__tls_send_iov(struct zr__tls *t, struct iovec *iov)
{
	(void)t;
	(void)iov;
	return 0;
}

/* see tls.h */
ssize_t
zr__tls_writev(struct zr__tls *t, const struct iovec *iov, int iovcnt)
{
	(void)t;
	(void)iov;
	(void)iovcnt;
	return -EPROTONOSUPPORT;
}

/* see tls.h */
ssize_t
zr__tls_write(struct zr__tls *t, const void *buf, size_t len)
{
	(void)t;
	(void)buf;
	(void)len;
	return -EPROTONOSUPPORT;
}

/* see tls.h */
int
zr__tls_flush(struct zr__tls *t)
{
	(void)t;
	return -EPROTONOSUPPORT;
}

/* see tls.h */
ssize_t
zr__tls_read(struct zr__tls *t, void *buf, size_t cap)
{
	(void)t;
	(void)buf;
	(void)cap;
	return -EPROTONOSUPPORT;
}

/* see tls.h */
int
zr__tls_close(struct zr__tls *t)
{
	(void)t;
	return 0;
}

/* see tls.h */
bool
zr__tls_done(const struct zr__tls *t)
{
	(void)t;
	return false;
}

/* see tls.h */
const char *
zr__tls_peer_subject(const struct zr__tls *t)
{
	(void)t;
	return NULL;
}

/* see tls.h */
const char *
zr__tls_version(const struct zr__tls *t)
{
	(void)t;
	return NULL;
}

/* see tls.h */
enum zr__tls_fail
zr__tls_failure(const struct zr__tls *t)
{
	(void)t;
	return ZR__TLS_PROTOCOL;
}

/* see tls.h */
const char *
zr__tls_error(const struct zr__tls *t)
{
	(void)t;
	return TLS_OFF_TEXT;
}

/* see tls.h */
bool
zr__tls_ktls_openssl(void)
{
	return false;
}
