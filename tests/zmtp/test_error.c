/*
 * zr_strerror and zr_errno (<zring/error.h>) for every protocol code, plain
 * errno values and the edges of the protocol range.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <zring/error.h>

Test(zmtp_error, keeps_protocol_codes_above_every_errno)
{
	cr_assert_gt(ZR_EBASE, 133 /* EHWPOISON, the largest Linux errno */);
	cr_assert_eq(ZR_ESIGNATURE, ZR_EBASE);
	cr_assert_eq(ZR_OK, 0);
	cr_assert_eq(ZR_NEED_MORE, 1);
}

Test(zmtp_error, names_every_protocol_code_with_its_own_text)
{
	const char *unknown = zr_strerror(-(ZR_ELAST + 1000));

	for (int c = ZR_EBASE; c < ZR_ELAST; c++) {
		const char *s = zr_strerror(-c);

		cr_assert_not_null(s, "code %d", c);
		cr_assert_gt(strlen(s), 0, "code %d", c);
		cr_assert_str_neq(s, unknown, "code %d has no text", c);
		cr_assert_str_neq(s, zr_strerror(-EPROTO), "code %d", c);
		for (int d = ZR_EBASE; d < c; d++)
			cr_assert_str_neq(s, zr_strerror(-d), "codes %d and %d share a text", c, d);
	}
}

Test(zmtp_error, reads_a_positive_code_as_its_negation)
{
	for (int c = ZR_EBASE; c < ZR_ELAST; c++)
		cr_assert_eq(zr_strerror(c), zr_strerror(-c), "code %d", c);
	cr_assert_eq(zr_strerror(EAGAIN), zr_strerror(-EAGAIN));
}

Test(zmtp_error, names_errno_values_and_success)
{
	static const int errs[] = {EAGAIN,       EINVAL,    ETIMEDOUT, EPROTO,  EMSGSIZE,
	                           ENOTCONN,     ECANCELED, ENOBUFS,   ENOTSUP, EACCES,
	                           ECONNREFUSED, ENOENT,    ENOMEM};
	const char *unknown = zr_strerror(-(ZR_ELAST + 1000));

	cr_assert_not_null(zr_strerror(0));
	cr_assert_str_neq(zr_strerror(0), unknown);
	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		const char *s = zr_strerror(-errs[i]);

		cr_assert_not_null(s);
		cr_assert_str_neq(s, unknown, "errno %d has no text", errs[i]);
		cr_assert_str_neq(s, zr_strerror(0), "errno %d", errs[i]);
	}
	cr_assert_str_neq(zr_strerror(-EAGAIN), zr_strerror(-EINVAL));
}

Test(zmtp_error, never_returns_null_for_codes_outside_every_range)
{
	static const int odd[] = {-1999, -ZR_ELAST, -(ZR_ELAST + 1), -100000, 100000, -2147483647};

	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		cr_assert_not_null(zr_strerror(odd[i]), "code %d", odd[i]);
}

Test(zmtp_error, folds_protocol_codes_into_the_documented_errno_classes)
{
	for (int c = ZR_EBASE; c < ZR_ELAST; c++) {
		int want;

		switch (c) {
		case ZR_ETOOLARGE:
		case ZR_ECMDSIZE:
		case ZR_ETOOMANYFRAMES:
			want = -EMSGSIZE;
			break;
		case ZR_EHANDSHAKE_TIMEOUT:
		case ZR_EHEARTBEAT_TIMEOUT:
			want = -ETIMEDOUT;
			break;
		case ZR_EAUTH:
		case ZR_ECURVEBOX: /* the keys do not match: authentication */
		case ZR_ECURVEKEY:
		case ZR_ECURVEHUNGUP:
			want = -EACCES;
			break;
		case ZR_EPEERERROR:
			want = -ECONNREFUSED;
			break;
		default:
			want = -EPROTO; /* "the rest -> EPROTO" (error.h) */
			break;
		}
		cr_expect_eq(zr_errno(-c), want, "code %d (%s): %d, want %d", c, zr_strerror(-c),
		             zr_errno(-c), want);
	}
}

Test(zmtp_error, passes_negative_errno_values_through)
{
	cr_assert_eq(zr_errno(-EAGAIN), -EAGAIN);
	cr_assert_eq(zr_errno(-ETIMEDOUT), -ETIMEDOUT);
	cr_assert_eq(zr_errno(-EINVAL), -EINVAL);
	cr_assert_eq(zr_errno(0), 0);
	cr_assert_eq(zr_errno(-(ZR_ELAST)), -(ZR_ELAST),
	             "one past the last code is not a protocol code");
}
