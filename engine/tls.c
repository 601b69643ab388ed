/*
 * The TLS adapter: OpenSSL 3 on a BIO pair, driven sans-IO (see tls.h and
 * docs/tls.md).
 *
 * Why a BIO pair and not two memory BIOs: a pair has fixed-size ring
 * buffers (so the bounds in tls.h hold whatever the peer does, where a
 * memory BIO grows without limit) and BIO_nread0/BIO_nwrite0, which give the
 * engine the buffer itself to point its recv and send at (no copy between
 * the socket and OpenSSL).
 *
 * OpenSSL keeps its errors in a thread-local queue; every call here that
 * drives the SSL object clears it first, so a failure is classified by what
 * this call did and not by something left over from another session.
 */
#define _POSIX_C_SOURCE 200809L

#include "engine/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common/base.h"

#define TLS_NAME_MAX 253 /* a DNS name; the longest IPv6 literal is shorter */

struct zr__tls_ctx {
	SSL_CTX *ssl;
	bool server;
	bool verify;
};

struct zr__tls {
	struct zr__tls_ctx *ctx;
	SSL *ssl;
	BIO *net; /* our end of the pair; OpenSSL owns the other through ssl */
	bool done;
	bool seen_input; /* the peer's first byte has been looked at */
	bool shutdown_sent;
	/* The span zr__tls_recv_buf handed out (a recv may be in flight). */
	uint8_t *recv_span;
	size_t recv_span_len;
	enum zr__tls_fail fail;
	int err; /* the sticky negative errno once fail != ZR__TLS_OK */
	char *subject;
	size_t stage_len;
	char name[TLS_NAME_MAX + 1];
	char errtext[ZR__TLS_ERR_MAX];
	uint8_t stage[ZR__TLS_STAGE];
};

/* ----------------------------------------------------------------------- */
/* Error text */

static void tls_text(char *err, size_t errcap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int tls_failed(struct zr__tls *t, enum zr__tls_fail f, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
tls_text(char *err, size_t errcap, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errcap == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errcap, fmt, ap);
	va_end(ap);
}

/* Empties OpenSSL's error queue and returns its first entry from libssl
 * (the one that names the protocol failure; the others are context), or its
 * first entry when none is from libssl; 0 when it was empty. */
static unsigned long
tls_first_error(void)
{
	unsigned long e, first = 0, ssl = 0;

	while ((e = ERR_get_error()) != 0) {
		if (first == 0)
			first = e;
		if (ssl == 0 && ERR_GET_LIB(e) == ERR_LIB_SSL)
			ssl = e;
	}
	/* "PEM lib" only says the PEM layer failed; its own entry says how. */
	if (ssl != 0 && ERR_GET_REASON(ssl) == ERR_R_PEM_LIB && first != ssl)
		return first;
	return ssl != 0 ? ssl : first;
}

static const char *
tls_reason(unsigned long e)
{
	const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;

	return r != NULL ? r : "unknown reason";
}

/* ----------------------------------------------------------------------- */
/* Context */

static int
tls_check_file(const char *what, const char *path, char *err, size_t errcap)
{
	FILE *f = fopen(path, "rb");
	int e;

	if (f != NULL) {
		fclose(f);
		return 0;
	}
	e = errno;
	tls_text(err, errcap, "cannot read TLS %s %s: %s", what, path, strerror(e));
	return e != 0 ? -e : -EIO;
}

static int
tls_pem_bio(BIO **out, const char *what, const char *pem, size_t len, char *err, size_t errcap)
{
	if (len > INT_MAX) {
		tls_text(err, errcap, "TLS %s: PEM text too long", what);
		return -EINVAL;
	}
	*out = BIO_new_mem_buf(pem, (int)len);
	return *out != NULL ? 0 : -ENOMEM;
}

static int
tls_load_cert(SSL_CTX *ssl, const struct zr__tls_config *cfg, char *err, size_t errcap)
{
	BIO *b;
	X509 *x;
	int r;

	if (cfg->cert_file != NULL) {
		if ((r = tls_check_file("certificate", cfg->cert_file, err, errcap)) < 0)
			return r;
		if (SSL_CTX_use_certificate_chain_file(ssl, cfg->cert_file) != 1) {
			tls_text(err, errcap, "TLS certificate %s: %s", cfg->cert_file,
			         tls_reason(tls_first_error()));
			return -EBADMSG;
		}
		return 0;
	}
	if ((r = tls_pem_bio(&b, "certificate", cfg->cert_pem, cfg->cert_pem_len, err, errcap)) < 0)
		return r;
	x = PEM_read_bio_X509_AUX(b, NULL, NULL, NULL);
	if (x == NULL || SSL_CTX_use_certificate(ssl, x) != 1) {
		tls_text(err, errcap, "TLS certificate (PEM text): %s",
		         tls_reason(tls_first_error()));
		X509_free(x);
		BIO_free(b);
		return -EBADMSG;
	}
	X509_free(x);
	/* The rest of the text is the chain, up to the end of the PEM. */
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		if (SSL_CTX_add0_chain_cert(ssl, x) != 1) {
			X509_free(x);
			BIO_free(b);
			return -ENOMEM;
		}
	}
	BIO_free(b);
	ERR_clear_error(); /* the end of the text reads as "no start line" */
	return 0;
}

static bool
tls_key_mismatch(unsigned long e)
{
	return ERR_GET_LIB(e) == ERR_LIB_X509 && ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH;
}

static int
tls_load_key(SSL_CTX *ssl, const struct zr__tls_config *cfg, char *err, size_t errcap)
{
	EVP_PKEY *k;
	BIO *b;
	int r;

	if (cfg->key_file != NULL) {
		if ((r = tls_check_file("key", cfg->key_file, err, errcap)) < 0)
			return r;
		if (SSL_CTX_use_PrivateKey_file(ssl, cfg->key_file, SSL_FILETYPE_PEM) != 1) {
			unsigned long e = tls_first_error();

			tls_text(err, errcap, "TLS key %s: %s%s", cfg->key_file, tls_reason(e),
			         tls_key_mismatch(e) ? " (the key does not match the certificate)"
			                             : "");
			return -EBADMSG;
		}
		return 0;
	}
	if ((r = tls_pem_bio(&b, "key", cfg->key_pem, cfg->key_pem_len, err, errcap)) < 0)
		return r;
	k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	BIO_free(b);
	if (k == NULL || SSL_CTX_use_PrivateKey(ssl, k) != 1) {
		unsigned long e = tls_first_error();

		tls_text(err, errcap, "TLS key (PEM text): %s%s", tls_reason(e),
		         tls_key_mismatch(e) ? " (the key does not match the certificate)" : "");
		EVP_PKEY_free(k);
		return -EBADMSG;
	}
	EVP_PKEY_free(k);
	return 0;
}

static int
tls_load_ca(SSL_CTX *ssl, const struct zr__tls_config *cfg, char *err, size_t errcap)
{
	X509_STORE *st = SSL_CTX_get_cert_store(ssl);
	int r, n = 0;
	BIO *b;
	X509 *x;

	if (cfg->ca_file != NULL) {
		if ((r = tls_check_file("CA file", cfg->ca_file, err, errcap)) < 0)
			return r;
		if (SSL_CTX_load_verify_file(ssl, cfg->ca_file) != 1) {
			tls_text(err, errcap, "TLS CA file %s: %s", cfg->ca_file,
			         tls_reason(tls_first_error()));
			return -EBADMSG;
		}
	}
	if (cfg->ca_dir != NULL && SSL_CTX_load_verify_dir(ssl, cfg->ca_dir) != 1) {
		tls_text(err, errcap, "TLS CA directory %s: %s", cfg->ca_dir,
		         tls_reason(tls_first_error()));
		return -ENOENT;
	}
	if (cfg->ca_pem == NULL)
		return 0;
	if ((r = tls_pem_bio(&b, "CA", cfg->ca_pem, cfg->ca_pem_len, err, errcap)) < 0)
		return r;
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		r = X509_STORE_add_cert(st, x);
		X509_free(x);
		if (r != 1) {
			BIO_free(b);
			return -ENOMEM;
		}
		n++;
	}
	BIO_free(b);
	ERR_clear_error();
	if (n == 0) {
		tls_text(err, errcap, "TLS CA (PEM text): no certificate in it");
		return -EBADMSG;
	}
	return 0;
}

/* see tls.h */
int
zr__tls_ctx_new(struct zr__tls_ctx **out, const struct zr__tls_config *cfg, char *err,
                size_t errcap)
{
	bool has_cert = cfg->cert_file != NULL || cfg->cert_pem != NULL;
	bool has_key = cfg->key_file != NULL || cfg->key_pem != NULL;
	bool has_ca = cfg->ca_file != NULL || cfg->ca_dir != NULL || cfg->ca_pem != NULL;
	struct zr__tls_ctx *c;
	int r;

	tls_text(err, errcap, "%s", "");
	if ((cfg->cert_file != NULL && cfg->cert_pem != NULL) ||
	    (cfg->key_file != NULL && cfg->key_pem != NULL)) {
		tls_text(err, errcap,
		         "TLS: give a certificate or key as a file or as PEM text, "
		         "not both");
		return -EINVAL;
	}
	if (has_cert != has_key) {
		tls_text(err, errcap, "TLS: a certificate needs its key and a key its certificate");
		return -EINVAL;
	}
	if (cfg->server && !has_cert) {
		tls_text(err, errcap, "TLS: a server needs a certificate and a key");
		return -EINVAL;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return -ENOMEM;
	c->server = cfg->server;
	c->verify = cfg->server ? has_ca : cfg->verify != 0;
	ERR_clear_error();
	c->ssl = SSL_CTX_new(cfg->server ? TLS_server_method() : TLS_client_method());
	if (c->ssl == NULL) {
		free(c);
		return -ENOMEM;
	}
	r = -EINVAL;
	if (SSL_CTX_set_min_proto_version(c->ssl,
	                                  cfg->allow_tls12 ? TLS1_2_VERSION : TLS1_3_VERSION) != 1)
		goto fail;
	/* No renegotiation (TLS 1.2: a peer could make us redo the handshake at
	 * will) and no resumption: a connection lives long, a session cache
	 * would only be state to bound, and tickets cost bytes on every
	 * handshake. */
	SSL_CTX_set_options(c->ssl,
	                    SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_NO_TICKET);
	SSL_CTX_set_session_cache_mode(c->ssl, SSL_SESS_CACHE_OFF);
	if (cfg->server && SSL_CTX_set_num_tickets(c->ssl, 0) != 1)
		goto fail;
	if (has_cert && ((r = tls_load_cert(c->ssl, cfg, err, errcap)) < 0 ||
	                 (r = tls_load_key(c->ssl, cfg, err, errcap)) < 0))
		goto fail;
	if (has_cert && SSL_CTX_check_private_key(c->ssl) != 1) {
		tls_text(err, errcap, "TLS: the key does not match the certificate (%s)",
		         tls_reason(tls_first_error()));
		r = -EBADMSG;
		goto fail;
	}
	if (has_ca && (r = tls_load_ca(c->ssl, cfg, err, errcap)) < 0)
		goto fail;
	if (!cfg->server && c->verify && !has_ca && SSL_CTX_set_default_verify_paths(c->ssl) != 1) {
		tls_text(err, errcap, "TLS: cannot load the system's trusted CAs: %s",
		         tls_reason(tls_first_error()));
		r = -ENOENT;
		goto fail;
	}
	if (c->verify)
		SSL_CTX_set_verify(c->ssl,
		                   SSL_VERIFY_PEER |
		                           (cfg->server ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
		                   NULL);
	else
		SSL_CTX_set_verify(c->ssl, SSL_VERIFY_NONE, NULL);
	ERR_clear_error();
	*out = c;
	return 0;
fail:
	ERR_clear_error();
	SSL_CTX_free(c->ssl);
	free(c);
	return r;
}

/* see tls.h */
void
zr__tls_ctx_free(struct zr__tls_ctx *c)
{
	if (c == NULL)
		return;
	SSL_CTX_free(c->ssl);
	free(c);
}

/* ----------------------------------------------------------------------- */
/* Session: failures */

static int
tls_failed(struct zr__tls *t, enum zr__tls_fail f, int err, const char *fmt, ...)
{
	va_list ap;

	t->fail = f;
	t->err = err;
	va_start(ap, fmt);
	vsnprintf(t->errtext, sizeof(t->errtext), fmt, ap);
	va_end(ap);
	ERR_clear_error();
	return err;
}

/* Our own verification of the peer's certificate failed. */
static int
tls_failed_verify(struct zr__tls *t, long v)
{
	const char *why = X509_verify_cert_error_string(v);

	switch (v) {
	case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
	case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
	case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
	case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
	case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
	case X509_V_ERR_CERT_UNTRUSTED:
		return tls_failed(t, ZR__TLS_UNKNOWN_CA, -EPROTO, "unknown CA: %s", why);
	case X509_V_ERR_HOSTNAME_MISMATCH:
	case X509_V_ERR_IP_ADDRESS_MISMATCH:
		return tls_failed(t, ZR__TLS_NAME_MISMATCH, -EPROTO,
		                  "name mismatch: %s (the certificate is not for \"%s\")", why,
		                  t->name);
	case X509_V_ERR_CERT_HAS_EXPIRED:
		return tls_failed(t, ZR__TLS_EXPIRED, -EPROTO, "certificate expired: %s", why);
	case X509_V_ERR_CERT_NOT_YET_VALID:
		return tls_failed(t, ZR__TLS_NOT_YET_VALID, -EPROTO,
		                  "certificate not yet valid: %s", why);
	default:
		return tls_failed(t, ZR__TLS_BAD_CERT, -EPROTO, "bad certificate: %s", why);
	}
}

/* OpenSSL 3.0 names the TLS 1.2 alerts only ("unknown" for the others). */
static const char *
tls_alert_words(int alert)
{
	switch (alert) {
	case 109: /* RFC 8446 §6.2 missing_extension */
		return "missing extension";
	case 116: /* certificate_required */
		return "certificate required";
	case 120: /* no_application_protocol */
		return "no application protocol";
	default:
		return SSL_alert_desc_string_long(alert);
	}
}

/* A call on the SSL object returned r <= 0: sort out what happened. Returns
 * 0 for "needs more input or output space", else the sticky error. */
static int
tls_check(struct zr__tls *t, int r)
{
	int e = SSL_get_error(t->ssl, r);
	unsigned long q;
	int reason;
	long v;

	switch (e) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		return 0;
	case SSL_ERROR_ZERO_RETURN:
		return tls_failed(t, ZR__TLS_CLOSED, -ESHUTDOWN, "peer closed the TLS session");
	case SSL_ERROR_SSL:
		break;
	default:
		/* SSL_ERROR_SYSCALL cannot come from a BIO pair; anything else
		 * is a bug in how we drive OpenSSL. */
		return tls_failed(t, ZR__TLS_PROTOCOL, -EPROTO, "TLS: unexpected OpenSSL state %d",
		                  e);
	}
	q = tls_first_error();
	reason = ERR_GET_LIB(q) == ERR_LIB_SSL ? ERR_GET_REASON(q) : 0;
	v = SSL_get_verify_result(t->ssl);
	if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED && v != X509_V_OK)
		return tls_failed_verify(t, v);
	if (reason > SSL_AD_REASON_OFFSET) {
		int alert = reason - SSL_AD_REASON_OFFSET;

		if (alert == SSL_AD_PROTOCOL_VERSION)
			return tls_failed(t, ZR__TLS_VERSION, -EPROTO,
			                  "no TLS version in common: the peer sent alert \"%s\"",
			                  SSL_alert_desc_string_long(alert));
		return tls_failed(t, ZR__TLS_ALERT, -EPROTO, "alert received: %s (%s)",
		                  tls_alert_words(alert), tls_reason(q));
	}
	switch (reason) {
	case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
		return tls_failed(t, ZR__TLS_NO_PEER_CERT, -EPROTO,
		                  "no client certificate: this server requires one (%s)",
		                  tls_reason(q));
	case SSL_R_UNSUPPORTED_PROTOCOL:
	case SSL_R_NO_PROTOCOLS_AVAILABLE:
	case SSL_R_VERSION_TOO_LOW:
	case SSL_R_VERSION_TOO_HIGH:
		return tls_failed(t, ZR__TLS_VERSION, -EPROTO, "no TLS version in common: %s",
		                  tls_reason(q));
	case SSL_R_WRONG_VERSION_NUMBER:
	case SSL_R_HTTP_REQUEST:
	case SSL_R_HTTPS_PROXY_REQUEST:
	case SSL_R_PACKET_LENGTH_TOO_LONG:
	case SSL_R_UNKNOWN_PROTOCOL:
		/* Only the peer's first record can show that it does not
		 * speak TLS at all; later, these are protocol errors. */
		if (SSL_get_state(t->ssl) == TLS_ST_BEFORE ||
		    SSL_get_state(t->ssl) == TLS_ST_CW_CLNT_HELLO)
			return tls_failed(
				t, ZR__TLS_NOT_TLS, -EPROTO,
				"not TLS: the peer's first bytes are not a TLS record (%s)",
				tls_reason(q));
		break;
	default:
		break;
	}
	return tls_failed(t, ZR__TLS_PROTOCOL, -EPROTO, "TLS protocol error: %s", tls_reason(q));
}

/* ----------------------------------------------------------------------- */
/* Session: driving */

static int
tls_on_done(struct zr__tls *t)
{
	X509 *peer = SSL_get0_peer_certificate(t->ssl);
	BIO *m;
	char *p;
	long n;

	t->done = true;
	if (peer == NULL)
		return 0;
	if ((m = BIO_new(BIO_s_mem())) == NULL)
		return tls_failed(t, ZR__TLS_NOMEM, -ENOMEM, "out of memory");
	/* RFC 2253 with UTF-8 left as UTF-8 (User-Id is a string property). */
	if (X509_NAME_print_ex(m, X509_get_subject_name(peer), 0,
	                       XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB) < 0 ||
	    (n = BIO_get_mem_data(m, &p)) < 0 || (t->subject = malloc((size_t)n + 1)) == NULL) {
		BIO_free(m);
		return tls_failed(t, ZR__TLS_NOMEM, -ENOMEM, "out of memory");
	}
	memcpy(t->subject, p, (size_t)n);
	t->subject[n] = '\0';
	BIO_free(m);
	return 0;
}

static int
tls_stage_flush(struct zr__tls *t)
{
	size_t w;
	int r;

	if (t->stage_len == 0)
		return 0;
	ERR_clear_error();
	/* A retry after WANT_WRITE passes the same stage and length, as
	 * OpenSSL requires: nothing is appended while stage_len is set. */
	r = SSL_write_ex(t->ssl, t->stage, t->stage_len, &w);
	if (r == 1) {
		if (!ZR_INVARIANT(w == t->stage_len))
			return tls_failed(t, ZR__TLS_PROTOCOL, -EPROTO, "TLS: short write");
		t->stage_len = 0;
		return 0;
	}
	r = tls_check(t, r);
	return r < 0 ? r : 1;
}

/* Moves the handshake on, or the stage out once it is done. */
static int
tls_drive(struct zr__tls *t)
{
	int r;

	if (t->err != 0)
		return t->err;
	if (t->done) {
		r = tls_stage_flush(t);
		return r < 0 ? r : 0;
	}
	ERR_clear_error();
	r = SSL_do_handshake(t->ssl);
	if (r == 1)
		return tls_on_done(t);
	return tls_check(t, r);
}

/* A ZMTP greeting opens with 0xFF (the signature, RFC 23/ZMTP); a TLS
 * record with 20..23. Saying which one the peer sent beats OpenSSL's
 * "wrong version number". */
static int
tls_look_at_first(struct zr__tls *t, uint8_t first)
{
	t->seen_input = true;
	if (first == 0xFF)
		return tls_failed(t, ZR__TLS_NOT_TLS, -EPROTO,
		                  "not TLS: peer speaks plain ZMTP, not TLS");
	return 0;
}

/* see tls.h */
int
zr__tls_new(struct zr__tls **out, struct zr__tls_ctx *c, const char *server_name)
{
	struct zr__tls *t;
	BIO *inner = NULL;
	char bare[TLS_NAME_MAX + 1];
	unsigned char ip[16];
	size_t n = 0;
	int r;

	if (server_name != NULL) {
		n = strlen(server_name);
		/* "[::1]" as written in an endpoint. */
		if (n >= 2 && server_name[0] == '[' && server_name[n - 1] == ']') {
			server_name++;
			n -= 2;
		}
		if (n == 0 || n > TLS_NAME_MAX)
			return -EINVAL;
		memcpy(bare, server_name, n);
		bare[n] = '\0';
	}
	if (!c->server && c->verify && server_name == NULL)
		return -EINVAL;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return -ENOMEM;
	t->ctx = c;
	if (server_name != NULL)
		memcpy(t->name, bare, n + 1);
	ERR_clear_error();
	if ((t->ssl = SSL_new(c->ssl)) == NULL ||
	    BIO_new_bio_pair(&inner, ZR__TLS_BUF_OUT, &t->net, ZR__TLS_BUF_IN) != 1) {
		r = -ENOMEM;
		goto fail;
	}
	SSL_set_bio(t->ssl, inner, inner);
	if (c->server) {
		SSL_set_accept_state(t->ssl);
	} else {
		SSL_set_connect_state(t->ssl);
		if (server_name != NULL) {
			X509_VERIFY_PARAM *p = SSL_get0_param(t->ssl);
			bool is_ip = inet_pton(AF_INET, bare, ip) == 1 ||
			             inet_pton(AF_INET6, bare, ip) == 1;

			r = -EINVAL;
			if (is_ip) {
				/* RFC 6066 §3: no IP literals in SNI. */
				if (c->verify && X509_VERIFY_PARAM_set1_ip_asc(p, bare) != 1)
					goto fail;
			} else {
				X509_VERIFY_PARAM_set_hostflags(
					p, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
				if ((c->verify && X509_VERIFY_PARAM_set1_host(p, bare, 0) != 1) ||
				    SSL_set_tlsext_host_name(t->ssl, bare) != 1)
					goto fail;
			}
		}
		if ((r = tls_drive(t)) < 0)
			goto fail;
	}
	*out = t;
	return 0;
fail:
	ERR_clear_error();
	zr__tls_free(t);
	return r;
}

/* see tls.h */
void
zr__tls_free(struct zr__tls *t)
{
	if (t == NULL)
		return;
	SSL_free(t->ssl); /* frees the inner BIO */
	BIO_free(t->net);
	free(t->subject);
	free(t);
}

/* ----------------------------------------------------------------------- */
/* Session: ciphertext */

/* see tls.h */
ssize_t
zr__tls_feed(struct zr__tls *t, const void *buf, size_t len)
{
	size_t room;
	int r;

	if (t->err != 0)
		return t->err;
	room = BIO_ctrl_get_write_guarantee(t->net);
	if (len > room)
		len = room;
	if (len == 0)
		return 0;
	if (!t->seen_input && (r = tls_look_at_first(t, *(const uint8_t *)buf)) < 0)
		return r;
	if (BIO_write(t->net, buf, (int)len) != (int)len)
		return tls_failed(t, ZR__TLS_PROTOCOL, -EPROTO,
		                  "TLS: inbound buffer refused bytes");
	r = tls_drive(t);
	return r < 0 ? r : (ssize_t)len;
}

/* see tls.h */
uint8_t *
zr__tls_recv_buf(struct zr__tls *t, size_t *len)
{
	char *p = NULL;
	ossl_ssize_t n;

	*len = 0;
	if (t->err != 0)
		return NULL;
	n = BIO_nwrite0(t->net, &p);
	if (n <= 0)
		return NULL;
	*len = (size_t)n;
	t->recv_span = (uint8_t *)p;
	t->recv_span_len = (size_t)n;
	return t->recv_span;
}

/* see tls.h */
int
zr__tls_recv_ack(struct zr__tls *t, size_t n)
{
	char *p = NULL;
	ossl_ssize_t room;
	int r;

	if (t->err != 0)
		return t->err;
	if (n == 0)
		return 0;
	if (!ZR_INVARIANT(t->recv_span != NULL && n <= t->recv_span_len))
		return -EINVAL;
	room = BIO_nwrite0(t->net, &p);
	/* A BIO pair rewinds its ring to the start when a read empties it,
	 * so plaintext read while the recv was in flight can have moved the
	 * write position away from the span. Nothing else writes to the ring
	 * meanwhile, so the bytes are intact where they landed; an empty ring
	 * has room for all of them at its start. */
	if ((uint8_t *)p != t->recv_span) {
		if (!ZR_INVARIANT(room > 0 && n <= (size_t)room))
			return -EINVAL;
		memmove(p, t->recv_span, n);
	}
	t->recv_span = NULL;
	t->recv_span_len = 0;
	if (!t->seen_input && (r = tls_look_at_first(t, (uint8_t)p[0])) < 0)
		return r;
	if (BIO_nwrite(t->net, &p, (int)n) != (int)n)
		return tls_failed(t, ZR__TLS_PROTOCOL, -EPROTO,
		                  "TLS: inbound buffer refused bytes");
	return tls_drive(t);
}

/* see tls.h */
size_t
zr__tls_pending(const struct zr__tls *t)
{
	return BIO_ctrl_pending(t->net);
}

/* After ciphertext left, OpenSSL may go on with what waited for room. */
static void
tls_after_send(struct zr__tls *t)
{
	if (t->err == 0)
		(void)tls_drive(t);
}

/* see tls.h */
size_t
zr__tls_pull(struct zr__tls *t, void *buf, size_t cap)
{
	size_t have = BIO_ctrl_pending(t->net);
	int r;

	if (cap > have)
		cap = have;
	if (cap == 0)
		return 0;
	r = BIO_read(t->net, buf, (int)cap);
	if (r <= 0)
		return 0;
	tls_after_send(t);
	return (size_t)r;
}

/* see tls.h */
const uint8_t *
zr__tls_send_buf(struct zr__tls *t, size_t *len)
{
	char *p = NULL;
	ossl_ssize_t n = BIO_nread0(t->net, &p);

	*len = n > 0 ? (size_t)n : 0;
	return n > 0 ? (const uint8_t *)p : NULL;
}

/* see tls.h */
int
zr__tls_send_ack(struct zr__tls *t, size_t n)
{
	char *p = NULL;
	int before = t->err;

	if (n == 0)
		return 0;
	if (!ZR_INVARIANT(n <= BIO_ctrl_pending(t->net)) || BIO_nread(t->net, &p, (int)n) != (int)n)
		return -EINVAL;
	tls_after_send(t);
	/* Sending the alert of a session that had failed already is no new
	 * failure; one that happened now (the stage could not be encrypted) is. */
	return before != 0 ? 0 : t->err;
}

/* see tls.h */
int
zr__tls_send_iov(struct zr__tls *t, struct iovec *iov)
{
	size_t len;
	const uint8_t *p = zr__tls_send_buf(t, &len);

	if (p == NULL)
		return 0;
	iov->iov_base = (void *)(uintptr_t)p;
	iov->iov_len = len;
	return 1;
}

/* ----------------------------------------------------------------------- */
/* Session: plaintext */

/* see tls.h */
ssize_t
zr__tls_writev(struct zr__tls *t, const struct iovec *iov, int iovcnt)
{
	size_t accepted = 0;
	int i, r;

	if (t->err != 0)
		return t->err;
	if (!t->done)
		return 0;
	if ((r = tls_stage_flush(t)) != 0)
		return r < 0 ? r : 0;
	for (i = 0; i < iovcnt; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t len = iov[i].iov_len;

		while (len > 0) {
			size_t k = ZR__TLS_STAGE - t->stage_len;

			if (k > len)
				k = len;
			memcpy(t->stage + t->stage_len, p, k);
			t->stage_len += k;
			accepted += k;
			p += k;
			len -= k;
			if (t->stage_len == ZR__TLS_STAGE && (r = tls_stage_flush(t)) != 0)
				return r < 0 ? r : (ssize_t)accepted;
		}
	}
	if ((r = tls_stage_flush(t)) < 0)
		return r;
	return (ssize_t)accepted;
}

/* see tls.h */
ssize_t
zr__tls_write(struct zr__tls *t, const void *buf, size_t len)
{
	struct iovec iov = {.iov_base = (void *)(uintptr_t)buf, .iov_len = len};

	return zr__tls_writev(t, &iov, 1);
}

/* see tls.h */
int
zr__tls_flush(struct zr__tls *t)
{
	if (t->err != 0)
		return t->err;
	if (!t->done)
		return t->stage_len > 0;
	return tls_stage_flush(t);
}

/* see tls.h */
ssize_t
zr__tls_read(struct zr__tls *t, void *buf, size_t cap)
{
	size_t n = 0;
	int r;

	if (t->err != 0)
		return t->err;
	if (!t->done) {
		if ((r = tls_drive(t)) < 0)
			return r;
		if (!t->done)
			return 0;
	}
	if (cap == 0)
		return 0;
	ERR_clear_error();
	r = SSL_read_ex(t->ssl, buf, cap, &n);
	if (r == 1)
		return (ssize_t)n;
	return tls_check(t, r);
}

/* see tls.h */
int
zr__tls_close(struct zr__tls *t)
{
	if (t->shutdown_sent || t->ssl == NULL)
		return 0;
	t->shutdown_sent = true;
	ERR_clear_error();
	/* Before the handshake finished, or after a fatal error (whose alert
	 * is already queued), there is nothing to close politely: OpenSSL
	 * refuses and the caller just closes the socket. A peer's close_notify
	 * is answered with ours. */
	if (t->done && (t->err == 0 || t->fail == ZR__TLS_CLOSED))
		(void)SSL_shutdown(t->ssl);
	ERR_clear_error();
	return 0;
}

/* ----------------------------------------------------------------------- */
/* Session: what it knows */

/* see tls.h */
bool
zr__tls_done(const struct zr__tls *t)
{
	return t->done && t->err == 0;
}

/* see tls.h */
const char *
zr__tls_peer_subject(const struct zr__tls *t)
{
	return t->done ? t->subject : NULL;
}

/* see tls.h */
const char *
zr__tls_version(const struct zr__tls *t)
{
	return t->done ? SSL_get_version(t->ssl) : NULL;
}

/* see tls.h */
enum zr__tls_fail
zr__tls_failure(const struct zr__tls *t)
{
	return t->fail;
}

/* see tls.h */
const char *
zr__tls_error(const struct zr__tls *t)
{
	return t->errtext;
}

/* ----------------------------------------------------------------------- */
/* What the OpenSSL we are built on offers (zr__tls_sniff and
 * zr__tls_ktls_kernel need no OpenSSL: tls_sock.c) */

/* see tls.h */
bool
zr__tls_ktls_openssl(void)
{
#ifdef OPENSSL_NO_KTLS
	return false;
#else
	return true;
#endif
}
