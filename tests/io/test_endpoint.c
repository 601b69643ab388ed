/*
 * io/endpoint: endpoint text in, addresses and sockets out, text back.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "io/endpoint.h"

struct parse_row {
	int line;
	const char *text;
	bool for_bind;
	int want;           /* 0 or the negative errno */
	const char *format; /* the text zr__endpoint_format gives back, when want == 0 */
};

static const struct parse_row parse_rows[] = {
	{__LINE__, "tcp://127.0.0.1:5555", false, 0, "tcp://127.0.0.1:5555"},
	{__LINE__, "tcp://127.0.0.1:5555", true, 0, "tcp://127.0.0.1:5555"},
	{__LINE__, "tcp://*:5555", true, 0, "tcp://0.0.0.0:5555"},
	{__LINE__, "tcp://*:*", true, 0, "tcp://0.0.0.0:0"},
	{__LINE__, "tcp://*:0", true, 0, "tcp://0.0.0.0:0"},
	{__LINE__, "tcp://[::1]:7000", false, 0, "tcp://[::1]:7000"},
	{__LINE__, "tcp://localhost:7000", false, 0, "tcp://127.0.0.1:7000"},
	{__LINE__, "ipc:///tmp/zring.sock", true, 0, "ipc:///tmp/zring.sock"},
	{__LINE__, "ipc://@zring-abstract", true, 0, "ipc://@zring-abstract"},
	{__LINE__, "ipc://relative.sock", false, 0, "ipc://relative.sock"},
	{__LINE__, "tcp://*:5555", false, -EINVAL, NULL},
	{__LINE__, "tcp://127.0.0.1:*", false, -EINVAL, NULL},
	{__LINE__, "tcp://127.0.0.1:0", false, -EINVAL, NULL},
	{__LINE__, "tcp://127.0.0.1:65536", true, -EINVAL, NULL},
	{__LINE__, "tcp://127.0.0.1:-1", true, -EINVAL, NULL},
	{__LINE__, "tcp://127.0.0.1:80x", true, -EINVAL, NULL},
	{__LINE__, "tcp://127.0.0.1", true, -EINVAL, NULL},
	{__LINE__, "tcp://:5555", true, -EINVAL, NULL},
	{__LINE__, "tcp://[::1:5555", true, -EINVAL, NULL},
	{__LINE__, "tcp://[]:5555", true, -EINVAL, NULL},
	{__LINE__, "tcp://no-such-host.invalid:5555", false, -EHOSTUNREACH, NULL},
	{__LINE__, "ipc://", true, -EINVAL, NULL},
	{__LINE__, "ipc://@", true, -EINVAL, NULL},
	{__LINE__, "udp://127.0.0.1:5555", true, -EPROTONOSUPPORT, NULL},
	{__LINE__, "inproc://x", true, 0, "inproc://x"},
	{__LINE__, "inproc://a b/c:*", false, 0, "inproc://a b/c:*"},
	{__LINE__, "inproc://", true, -EINVAL, NULL},
	{__LINE__, "127.0.0.1:5555", true, -EINVAL, NULL},
	{__LINE__, "", true, -EINVAL, NULL},
};

Test(io_endpoint, parses_and_formats_every_row_of_the_table)
{
	for (size_t i = 0; i < sizeof parse_rows / sizeof parse_rows[0]; i++) {
		const struct parse_row *r = &parse_rows[i];
		struct zr__endpoint ep;
		char buf[ZR__ENDPOINT_TEXT_MAX];
		int rc = zr__endpoint_parse(r->text, r->for_bind, false, &ep);

		cr_assert_eq(rc, r->want, "line %d: %s gave %d, want %d", r->line, r->text, rc,
		             r->want);
		if (rc == 0) {
			cr_assert_gt(zr__endpoint_format(&ep, buf, sizeof buf), 0, "line %d",
			             r->line);
			cr_assert_str_eq(buf, r->format, "line %d", r->line);
		}
	}
}

Test(io_endpoint, refuses_an_ipc_path_longer_than_the_kernel_takes)
{
	char text[256];
	struct zr__endpoint ep;

	memset(text, 'a', sizeof text);
	memcpy(text, "ipc:///", 7);
	text[6 + sizeof(((struct sockaddr_un *)0)->sun_path)] = '\0'; /* one octet too many */
	cr_assert_eq(zr__endpoint_parse(text, true, false, &ep), -ENAMETOOLONG);
	text[6 + sizeof(((struct sockaddr_un *)0)->sun_path) - 1] = '\0'; /* exactly the limit */
	cr_assert_eq(zr__endpoint_parse(text, true, false, &ep), 0);
}

Test(io_endpoint, an_inproc_name_is_1_to_127_octets_and_never_a_kernel_socket)
{
	char text[9 + ZR__INPROC_NAME_MAX + 2];
	struct zr__endpoint ep;

	memcpy(text, "inproc://", 9);
	memset(text + 9, 'n', ZR__INPROC_NAME_MAX + 1);
	text[9 + ZR__INPROC_NAME_MAX + 1] = '\0'; /* one octet too many */
	cr_assert_eq(zr__endpoint_parse(text, true, false, &ep), -ENAMETOOLONG);
	text[9 + ZR__INPROC_NAME_MAX] = '\0'; /* exactly the limit */
	cr_assert_eq(zr__endpoint_parse(text, true, false, &ep), 0);
	cr_assert_eq(ep.transport, ZR__INPROC);
	cr_assert_eq(zr__endpoint_listen(&ep, 4), -EPROTONOSUPPORT);
	cr_assert_eq(zr__endpoint_socket(&ep), -EPROTONOSUPPORT);
}

Test(io_endpoint, star_with_ipv6_binds_dual_stack)
{
	struct zr__endpoint ep;
	char buf[ZR__ENDPOINT_TEXT_MAX];

	cr_assert_eq(zr__endpoint_parse("tcp://*:6000", true, true, &ep), 0);
	cr_assert_eq(ep.addr.ss_family, AF_INET6);
	cr_assert_gt(zr__endpoint_format(&ep, buf, sizeof buf), 0);
	cr_assert_str_eq(buf, "tcp://[::]:6000");
}

Test(io_endpoint, reports_address_in_use_on_a_second_bind)
{
	struct zr__endpoint ep, again;
	char bound[ZR__ENDPOINT_TEXT_MAX];
	int a, b;

	cr_assert_eq(zr__endpoint_parse("tcp://127.0.0.1:0", true, false, &ep), 0);
	a = zr__endpoint_listen(&ep, 4);
	cr_assert_geq(a, 0);
	cr_assert_gt(zr__endpoint_local(a, ZR__TCP, bound, sizeof bound), 0);
	cr_assert_eq(zr__endpoint_parse(bound, true, false, &again), 0);
	b = zr__endpoint_listen(&again, 4);
	cr_assert_eq(b, -EADDRINUSE, "second bind of %s gave %d", bound, b);
	close(a);
}

Test(io_endpoint, rebinding_an_ipc_path_replaces_a_stale_socket_file)
{
	char text[96];
	struct zr__endpoint ep;
	int a, b;

	snprintf(text, sizeof text, "ipc:///tmp/zring-stale-%d.sock", (int)getpid());
	cr_assert_eq(zr__endpoint_parse(text, true, false, &ep), 0);
	a = zr__endpoint_listen(&ep, 4);
	cr_assert_geq(a, 0);
	close(a); /* the file stays behind, as after a crash */
	cr_assert_eq(access(text + 6, F_OK), 0);
	b = zr__endpoint_listen(&ep, 4);
	cr_assert_geq(b, 0, "rebind: %s", strerror(-b));
	close(b);
	unlink(text + 6);
}
