/*
 * A socket's TLS contexts (tls:// endpoints): made from its options once,
 * on the app thread, by the first tls:// zr_connect (client) or zr_bind
 * (server), so that file reads and their errors happen in that call and
 * every connection of the socket shares the certificates and trust store.
 * The io thread only starts sessions on them (conn.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>

#include "engine.h"

/* A value starting like PEM is the PEM text; anything else a path. */
static bool
tls_is_pem(const char *v)
{
	return strncmp(v, "-----BEGIN", 10) == 0;
}

int
zr__sock_tls_ctx(struct zr_socket *s, bool server)
{
	struct zr__tls_ctx **slot = server ? &s->tls_server : &s->tls_client;
	const struct zr__options *o = &s->opt;
	struct zr__tls_config cfg = {
		.server = server,
		.verify = o->tls_verify,
		.allow_tls12 = o->tls_version_min == ZR_TLS_V12,
	};
	struct stat st;

	if (*slot != NULL)
		return 0;
	if (o->tls_cert != NULL) {
		if (tls_is_pem(o->tls_cert)) {
			cfg.cert_pem = o->tls_cert;
			cfg.cert_pem_len = o->tls_cert_len;
		} else {
			cfg.cert_file = o->tls_cert;
		}
	}
	if (o->tls_key != NULL) {
		if (tls_is_pem(o->tls_key)) {
			cfg.key_pem = o->tls_key;
			cfg.key_pem_len = o->tls_key_len;
		} else {
			cfg.key_file = o->tls_key;
		}
	}
	if (o->tls_ca != NULL) {
		if (tls_is_pem(o->tls_ca)) {
			cfg.ca_pem = o->tls_ca;
			cfg.ca_pem_len = o->tls_ca_len;
		} else if (stat(o->tls_ca, &st) == 0 && S_ISDIR(st.st_mode)) {
			cfg.ca_dir = o->tls_ca;
		} else {
			cfg.ca_file = o->tls_ca;
		}
	}
	return zr__tls_ctx_new(slot, &cfg, NULL, 0);
}

static void
tls_text_free(char **p, size_t *len)
{
	if (*p != NULL) {
		sodium_memzero(*p, *len);
		free(*p);
	}
	*p = NULL;
	*len = 0;
}

void
zr__sock_tls_free(struct zr_socket *s)
{
	zr__tls_ctx_free(s->tls_client);
	zr__tls_ctx_free(s->tls_server);
	s->tls_client = NULL;
	s->tls_server = NULL;
	tls_text_free(&s->opt.tls_cert, &s->opt.tls_cert_len);
	tls_text_free(&s->opt.tls_key, &s->opt.tls_key_len);
	tls_text_free(&s->opt.tls_ca, &s->opt.tls_ca_len);
	tls_text_free(&s->opt.tls_server_name, &s->opt.tls_server_name_len);
}

/* ---- Without a session, and without OpenSSL (built with ZR_TLS=OFF too) ---- */

/* see tls.h */
int
zr__tls_sniff(const uint8_t *buf, size_t len)
{
	if (len == 0)
		return -EAGAIN;
	if (buf[0] != 0x16) /* TLS ContentType handshake */
		return 0;
	if (len < 2)
		return -EAGAIN;
	return buf[1] == 0x03; /* the record's major version */
}

/* see tls.h */
int
zr__tls_ktls_kernel(const char *path)
{
	char buf[512];
	FILE *f = fopen(path != NULL ? path : "/proc/sys/net/ipv4/tcp_available_ulp", "re");
	size_t n;
	char *tok, *save = NULL;
	int e;

	if (f == NULL) {
		e = errno;
		return e != 0 ? -e : -EIO;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (tok = strtok_r(buf, " \t\n", &save); tok != NULL; tok = strtok_r(NULL, " \t\n", &save))
		if (strcmp(tok, "tls") == 0)
			return 1;
	return 0;
}
