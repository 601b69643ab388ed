/*
 * zring tools — the allow-list authenticator of `zring cat`, `zring subscribe`
 * and `zring publish` (--allow-plain USER:PASS, --allow-curve KEY): a PLAIN or
 * CURVE server admits only the listed credentials or client keys, and their
 * messages carry the user (PLAIN) or the key's Z85 text (CURVE) as User-Id.
 * Built on the public API only (<zring.h>).
 */
#ifndef ZR_TOOLS_ZL_AUTH_H
#define ZR_TOOLS_ZL_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zring.h>

/* One --allow-plain USER:PASS: both point into argv. */
struct zl_plain_cred {
	const char *user;
	size_t user_len;
	const char *pass;
	size_t pass_len;
};

/* One --allow-curve KEY. */
struct zl_curve_cred {
	uint8_t key[ZR_CURVE_KEY_LEN];
	char z85[ZR_CURVE_KEY_Z85_LEN + 1];
};

struct zl_auth {
	struct zl_plain_cred *plain;
	size_t nplain;
	struct zl_curve_cred *curve;
	size_t ncurve;
};

/* Room for max entries of each kind (the argument count will do). 0 or -ENOMEM. */
int zl_auth_init(struct zl_auth *au, size_t max);
void zl_auth_fini(struct zl_auth *au);

/* --allow-plain USER:PASS (value must outlive au) and --allow-curve KEY: 0, or
 * -EINVAL with one line in err. */
int zl_auth_add_plain(struct zl_auth *au, const char *value, char *err, size_t cap);
int zl_auth_add_curve(struct zl_auth *au, const char *value, char *err, size_t cap);

/* Whether any entry was given. */
bool zl_auth_any(const struct zl_auth *au);

/* The entries against the mechanism and role the -o options leave
 * (zl_sockopt_security): --allow-plain needs a PLAIN server, --allow-curve a
 * CURVE server. 0, or -EINVAL with one line in err. */
int zl_auth_check(const struct zl_auth *au, int mech, bool server, char *err, size_t cap);

/*
 * The authenticator (zr_socket_set_auth, zr_broker_set_auth; arg: the struct
 * zl_auth, which must outlive the context): admits only the listed
 * credentials or keys, comparing every entry in constant time. Runs on the io
 * thread and only reads au.
 */
int zl_auth_cb(void *arg, struct zr_zmtp_auth_req *req);

#endif /* ZR_TOOLS_ZL_AUTH_H */
