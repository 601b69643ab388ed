/*
 * The TLS adapter (issue 17): OpenSSL 3 driven sans-IO, like the codec.
 *
 * OpenSSL never sees a socket. Each session is an SSL object whose transport
 * is a BIO pair: the engine writes the ciphertext its recv completions
 * delivered into one end (zr__tls_feed, or zr__tls_recv_buf/_ack to let the
 * recv land there directly) and takes the ciphertext to send out of it
 * (zr__tls_pull, or zr__tls_send_buf/_ack to point a send at it). Plaintext
 * goes in with zr__tls_write/_writev and comes out with zr__tls_read. No call
 * blocks, sleeps or touches a file descriptor (only zr__tls_ctx_new reads
 * PEM files, once, on the caller's thread). docs/tls.md has the design.
 *
 * Bounds per session (what a peer can make us hold): ZR__TLS_BUF_IN bytes of
 * ciphertext not yet decrypted, ZR__TLS_BUF_OUT bytes of ciphertext not yet
 * sent, ZR__TLS_STAGE bytes of plaintext accepted but not yet encrypted, plus
 * OpenSSL's own record buffers (one record each way, about 17 KiB). A full
 * buffer is back-pressure, never growth: feed consumes less, write accepts
 * less. All of it is allocated when the session is made or on its first
 * record, not per message.
 *
 * Driving a session (the same loop for client and server):
 *   - after zr__tls_new and after every call below, send whatever
 *     zr__tls_pending reports (the handshake, alerts and close_notify are
 *     produced as a side effect of the other calls);
 *   - hand received ciphertext to zr__tls_feed; if it consumed less than
 *     given, read plaintext (or send ciphertext) first, then feed the rest;
 *   - once zr__tls_done, move plaintext with zr__tls_write and zr__tls_read.
 * Every function returns a count or 0 on success and a negative errno on
 * failure. Failures are sticky (STYLE.md rule 3): once a session failed,
 * every call returns the same code, and zr__tls_error says why in words.
 *
 * Thread affinity: a session is used by one thread at a time (the io thread);
 * a context may be shared by sessions on any threads once made (OpenSSL's
 * SSL_CTX is safe for that when it is no longer changed).
 */
#ifndef ZR_ENGINE_TLS_H
#define ZR_ENGINE_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Ciphertext buffered each way. Each holds at least one whole TLS record
 * (2^14 bytes of plaintext plus at most 2048 of expansion and a 5-byte
 * header), so a peer sending maximum-size records never deadlocks us. */
#define ZR__TLS_BUF_IN ((size_t)32 * 1024)
#define ZR__TLS_BUF_OUT ((size_t)32 * 1024)
/* Plaintext gathered into one record before encryption: small iovecs (frame
 * headers, short messages) share a record instead of each costing one. */
#define ZR__TLS_STAGE ((size_t)16 * 1024)
/* Longest error text zr__tls_error returns, NUL included. */
#define ZR__TLS_ERR_MAX ((size_t)256)

/* What a session's failure was, for monitor events and tests; the text from
 * zr__tls_error carries OpenSSL's own reason beside it. */
enum zr__tls_fail {
	ZR__TLS_OK = 0,
	ZR__TLS_NOT_TLS,       /* the peer's first bytes are not a TLS record */
	ZR__TLS_UNKNOWN_CA,    /* the peer's chain does not end at a trusted CA */
	ZR__TLS_NAME_MISMATCH, /* the certificate is not for the name or address expected */
	ZR__TLS_EXPIRED,       /* the certificate's notAfter has passed */
	ZR__TLS_NOT_YET_VALID, /* its notBefore is in the future */
	ZR__TLS_BAD_CERT,      /* any other verification failure */
	ZR__TLS_NO_PEER_CERT,  /* a client sent none to a server that requires one */
	ZR__TLS_ALERT,         /* the peer sent a fatal alert (it rejected us) */
	ZR__TLS_VERSION,       /* no protocol version in common */
	ZR__TLS_PROTOCOL,      /* any other TLS protocol error */
	ZR__TLS_CLOSED,        /* the peer sent close_notify (not an error for the codec) */
	ZR__TLS_NOMEM,
};

/*
 * How a context is made. Every pointer may be NULL and is only read during
 * zr__tls_ctx_new. A PEM item is either a path (*_file) or the PEM text
 * itself (*_pem, *_pem_len bytes, no NUL needed); giving both is -EINVAL.
 */
struct zr__tls_config {
	bool server;
	/* Our certificate (the leaf first, then any intermediates) and its key.
	 * Required for a server; a client with a certificate offers it when asked
	 * (mutual TLS). */
	const char *cert_file;
	const char *cert_pem;
	size_t cert_pem_len;
	const char *key_file;
	const char *key_pem;
	size_t key_pem_len;
	/* Trust anchors: a PEM file, an OpenSSL hashed directory, PEM text;
	 * any combination. A client with none of them trusts the system's
	 * default store. A server with any of them requires a client certificate
	 * that chains to them (mutual TLS); without, it asks for none. */
	const char *ca_file;
	const char *ca_dir;
	const char *ca_pem;
	size_t ca_pem_len;
	/* Clients: 1 verifies the server (the default), 0 accepts any
	 * certificate (the subject is still reported). -1 means the default.
	 * Servers: ignored; verification follows from having a CA. */
	int verify;
	/* TLS 1.3 only unless set; then TLS 1.2 is accepted too. */
	bool allow_tls12;
};

struct zr__tls_ctx;
struct zr__tls;

/*
 * Makes a context (OpenSSL's SSL_CTX: certificates, trust, versions) from
 * cfg. On success *out owns it; free with zr__tls_ctx_free once no session
 * made from it is left. Returns 0; -EINVAL (missing server certificate,
 * both a path and PEM text for one item), -ENOENT/-EACCES (a file), -EBADMSG
 * (a PEM item that does not parse, a key that does not match the
 * certificate), -ENOMEM. err (errcap bytes, may be NULL) gets the reason.
 */
int zr__tls_ctx_new(struct zr__tls_ctx **out, const struct zr__tls_config *cfg, char *err,
                    size_t errcap);
void zr__tls_ctx_free(struct zr__tls_ctx *c);

/*
 * Starts a session on c (which must outlive it). server_name (clients only,
 * may be NULL with verification off): the name the server's certificate
 * must carry, usually the endpoint's host; an IPv4 or IPv6 literal (brackets
 * allowed) is checked against the IP subjectAltNames, anything else against
 * the DNS ones, and a DNS name is also sent as SNI. A client's ClientHello is
 * pending to send when this returns. Returns 0 with *out owned by the caller
 * (zr__tls_free); -EINVAL (a client that verifies with no server_name, a
 * name longer than 253), -ENOMEM.
 */
int zr__tls_new(struct zr__tls **out, struct zr__tls_ctx *c, const char *server_name);
void zr__tls_free(struct zr__tls *t);

/*
 * Ciphertext in: copies up to len bytes received from the peer and advances
 * the handshake. Returns the bytes taken (0 when the inbound buffer is full:
 * read plaintext first); the session's error code once it failed.
 */
ssize_t zr__tls_feed(struct zr__tls *t, const void *buf, size_t len);
/* The same without a copy: where the next received ciphertext may land and
 * how much fits (*len, 0 when full), then how much did land. The span stays
 * valid until zr__tls_recv_ack, across zr__tls_read, _write, _pull and the
 * send calls, so an io_uring recv may target it while plaintext is read and
 * written; no zr__tls_feed or second zr__tls_recv_buf meanwhile. */
uint8_t *zr__tls_recv_buf(struct zr__tls *t, size_t *len);
int zr__tls_recv_ack(struct zr__tls *t, size_t n);

/* Ciphertext out: bytes waiting to be sent (also after a failure: the alert
 * that tells the peer why). */
size_t zr__tls_pending(const struct zr__tls *t);
/* Copies up to cap of them into buf and drops them; returns the count. */
size_t zr__tls_pull(struct zr__tls *t, void *buf, size_t cap);
/* Without a copy: one contiguous span of them (the buffer is a ring, so a
 * second span may follow after the ack), valid until zr__tls_send_ack or
 * zr__tls_pull, across every other call (encrypting more only appends
 * behind it), so a send may be in flight from it; then how many were sent (returns 0, or an error that happened while
 * moving on with the room made; acking the alert of a failed session is 0).
 * zr__tls_send_iov fills iov with that span and
 * returns 1, or 0 when nothing is pending. */
const uint8_t *zr__tls_send_buf(struct zr__tls *t, size_t *len);
int zr__tls_send_ack(struct zr__tls *t, size_t n);
int zr__tls_send_iov(struct zr__tls *t, struct iovec *iov);

/*
 * Plaintext out: encrypts as much of the iovecs as there is room for and
 * returns the bytes accepted (0 before the handshake is done or while the
 * outbound ciphertext is full: send, then call again with the rest). Bytes
 * accepted are the adapter's: they may sit in the stage until the next write,
 * zr__tls_flush, or a send_ack makes room.
 */
ssize_t zr__tls_writev(struct zr__tls *t, const struct iovec *iov, int iovcnt);
ssize_t zr__tls_write(struct zr__tls *t, const void *buf, size_t len);
/* Encrypts whatever the stage holds. Returns 0 when it is empty afterwards,
 * 1 when it still holds bytes (the outbound ciphertext is full). */
int zr__tls_flush(struct zr__tls *t);

/* Plaintext in: decrypts into buf. Returns the bytes (0: nothing complete
 * yet), or -ESHUTDOWN once the peer closed the session with close_notify,
 * or the session's error. */
ssize_t zr__tls_read(struct zr__tls *t, void *buf, size_t cap);

/* Queues our close_notify (send it, then close the socket). Returns 0. */
int zr__tls_close(struct zr__tls *t);

bool zr__tls_done(const struct zr__tls *t);
/* The peer certificate's subject as an RFC 2253 string ("CN=client,O=x"),
 * once the handshake is done and if the peer sent one; otherwise NULL.
 * Valid until zr__tls_free. */
const char *zr__tls_peer_subject(const struct zr__tls *t);
/* The negotiated version, "TLSv1.3" or "TLSv1.2"; NULL before done. */
const char *zr__tls_version(const struct zr__tls *t);
enum zr__tls_fail zr__tls_failure(const struct zr__tls *t);
/* The failure in words ("unknown CA: ..."), "" while there is none. */
const char *zr__tls_error(const struct zr__tls *t);

/*
 * What the first bytes from a peer look like, for a plain tcp:// endpoint to
 * name a TLS client ("peer speaks TLS") and this adapter to name a plain
 * ZMTP one: 1 a TLS handshake record (0x16 0x03), 0 not, -EAGAIN when len is
 * too short to tell.
 */
int zr__tls_sniff(const uint8_t *buf, size_t len);

/*
 * Whether the kernel offers kTLS: reads path (NULL: the system's
 * /proc/sys/net/ipv4/tcp_available_ulp) and returns 1 when it lists "tls",
 * 0 when not, -errno when it cannot be read. Only detection: the adapter
 * keeps the record layer in user space either way (docs/tls.md).
 */
int zr__tls_ktls_kernel(const char *path);
/* Whether the OpenSSL we are built on can hand keys to the kernel. */
bool zr__tls_ktls_openssl(void);

#endif /* ZR_ENGINE_TLS_H */
