/*
 * The allow-list authenticator (zl_auth.h), shared by `zring cat`, `zring
 * subscribe` and `zring publish`.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zl_auth.h"
#include "zl_sockopt.h"

/* see zl_auth.h */
int
zl_auth_init(struct zl_auth *au, size_t max)
{
	memset(au, 0, sizeof *au);
	au->plain = calloc(max + 1, sizeof(*au->plain));
	au->curve = calloc(max + 1, sizeof(*au->curve));
	if (au->plain == NULL || au->curve == NULL) {
		zl_auth_fini(au);
		return -ENOMEM;
	}
	return 0;
}

/* see zl_auth.h */
void
zl_auth_fini(struct zl_auth *au)
{
	free(au->plain);
	free(au->curve);
	memset(au, 0, sizeof *au);
}

/* see zl_auth.h. Split at the first colon (a password may hold more). An
 * empty user is refused: a PLAIN client with an empty username is a NULL
 * client (libzmq). */
int
zl_auth_add_plain(struct zl_auth *au, const char *value, char *err, size_t cap)
{
	const char *colon = strchr(value, ':');
	struct zl_plain_cred *c = &au->plain[au->nplain];

	if (colon == NULL || colon == value) {
		snprintf(err, cap, "--allow-plain wants USER:PASS with a non-empty USER");
		return -EINVAL;
	}
	c->user = value;
	c->user_len = (size_t)(colon - value);
	c->pass = colon + 1;
	c->pass_len = strlen(colon + 1);
	if (c->user_len > ZR_ZMTP_USER_ID_MAX || c->pass_len > 255) {
		snprintf(err, cap, "--allow-plain: USER and PASS have 255 octets at most");
		return -EINVAL;
	}
	au->nplain++;
	return 0;
}

/* see zl_auth.h */
int
zl_auth_add_curve(struct zl_auth *au, const char *value, char *err, size_t cap)
{
	struct zl_curve_cred *c = &au->curve[au->ncurve];

	if (zl_sockopt_key("--allow-curve", value, c->key, err, cap) < 0)
		return -EINVAL;
	zr_curve_key_encode(c->z85, c->key);
	au->ncurve++;
	return 0;
}

/* see zl_auth.h */
bool
zl_auth_any(const struct zl_auth *au)
{
	return au->nplain > 0 || au->ncurve > 0;
}

/* see zl_auth.h */
int
zl_auth_check(const struct zl_auth *au, int mech, bool server, char *err, size_t cap)
{
	if (au->nplain > 0 && !(mech == ZR_MECH_PLAIN && server)) {
		snprintf(err, cap, "--allow-plain is for a PLAIN server: add -o PLAIN_SERVER=1");
		return -EINVAL;
	}
	if (au->ncurve > 0 && !(mech == ZR_MECH_CURVE && server)) {
		snprintf(err, cap,
		         "--allow-curve is for a CURVE server: add -o CURVE_SERVER=1 and "
		         "-o CURVE_SECRETKEY=KEY");
		return -EINVAL;
	}
	return 0;
}

/*
 * Whether the peer's a[0..alen) equals our b[0..blen), in a time that depends
 * on blen and on whether the lengths are equal, never on where the octets
 * differ: a password must not be guessable octet by octet from the timing.
 */
static bool
zl_auth_same(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	volatile uint8_t diff = alen != blen;

	for (size_t i = 0; i < blen; i++)
		diff |= (uint8_t)(b[i] ^ (i < alen ? a[i] : 0));
	return diff == 0;
}

/* see zl_auth.h. Every entry is compared (no early exit on a match). */
int
zl_auth_cb(void *arg, struct zr_zmtp_auth_req *req)
{
	const struct zl_auth *au = arg;
	size_t hit = SIZE_MAX;

	if (req->mechanism == ZR_MECH_PLAIN) {
		for (size_t i = 0; i < au->nplain; i++) {
			const struct zl_plain_cred *c = &au->plain[i];
			bool user = zl_auth_same(req->username, req->username_len,
			                         (const uint8_t *)c->user, c->user_len);
			bool pass = zl_auth_same(req->password, req->password_len,
			                         (const uint8_t *)c->pass, c->pass_len);
			if (user & pass && hit == SIZE_MAX)
				hit = i;
		}
		if (hit != SIZE_MAX) {
			memcpy(req->user_id, au->plain[hit].user, au->plain[hit].user_len);
			req->user_id[au->plain[hit].user_len] = '\0';
			return 200;
		}
		snprintf(req->text, sizeof req->text, "wrong username or password");
		return 400;
	}
	if (req->mechanism == ZR_MECH_CURVE && req->client_key != NULL) {
		for (size_t i = 0; i < au->ncurve; i++)
			if (zl_auth_same(req->client_key, ZR_CURVE_KEY_LEN, au->curve[i].key,
			                 ZR_CURVE_KEY_LEN) &&
			    hit == SIZE_MAX)
				hit = i;
		if (hit != SIZE_MAX) {
			snprintf(req->user_id, sizeof req->user_id, "%s", au->curve[hit].z85);
			return 200;
		}
		char z85[ZR_CURVE_KEY_Z85_LEN + 1];
		zr_curve_key_encode(z85, req->client_key);
		snprintf(req->text, sizeof req->text, "client key %s is not allowed", z85);
		return 400;
	}
	snprintf(req->text, sizeof req->text, "no credentials of this mechanism are allowed");
	return 400;
}
