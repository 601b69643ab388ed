/*
 * Endpoint text, addresses and the sockets behind them.
 */
#define _GNU_SOURCE /* getaddrinfo and its AI_ flags, S_ISSOCK */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "endpoint.h"

#define ENDPOINT_HOST_MAX 256

/* Port: "*" or "0" (bind only) or 1..65535 in decimal. */
static int
endpoint_port(const char *s, bool for_bind, unsigned *port)
{
	unsigned long v;
	char *end;

	if (strcmp(s, "*") == 0) {
		if (!for_bind)
			return -EINVAL;
		*port = 0;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end != '\0' || errno != 0 || v > 65535 || (v == 0 && !for_bind))
		return -EINVAL;
	*port = (unsigned)v;
	return 0;
}

static int
endpoint_parse_tcp(const char *rest, bool for_bind, bool ipv6, struct zr__endpoint *ep)
{
	char host[ENDPOINT_HOST_MAX];
	const char *colon, *h = rest;
	size_t hlen;
	unsigned port;
	int family = ipv6 ? AF_UNSPEC : AF_INET, rc;
	struct addrinfo hints, *res = NULL;

	colon = strrchr(rest, ':');
	if (colon == NULL || colon == rest)
		return -EINVAL;
	rc = endpoint_port(colon + 1, for_bind, &port);
	if (rc < 0)
		return rc;
	hlen = (size_t)(colon - rest);
	if (rest[0] == '[') {
		if (hlen < 3 || rest[hlen - 1] != ']')
			return -EINVAL;
		h = rest + 1;
		hlen -= 2;
		family = AF_INET6;
	}
	if (hlen == 0 || hlen >= sizeof host)
		return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = '\0';

	memset(ep, 0, sizeof *ep);
	ep->transport = ZR__TCP;
	if (strcmp(host, "*") == 0) {
		if (!for_bind)
			return -EINVAL;
		if (ipv6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ep->addr;

			a->sin6_family = AF_INET6;
			a->sin6_addr = in6addr_any;
			a->sin6_port = htons((uint16_t)port);
			ep->addrlen = sizeof *a;
		} else {
			struct sockaddr_in *a = (struct sockaddr_in *)&ep->addr;

			a->sin_family = AF_INET;
			a->sin_addr.s_addr = htonl(INADDR_ANY);
			a->sin_port = htons((uint16_t)port);
			ep->addrlen = sizeof *a;
		}
		return 0;
	}

	memset(&hints, 0, sizeof hints);
	hints.ai_family = family;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | (family == AF_INET6 ? AI_NUMERICHOST : 0);
	if (getaddrinfo(host, NULL, &hints, &res) != 0 || res == NULL)
		return family == AF_INET6 ? -EINVAL : -EHOSTUNREACH;
	memcpy(&ep->addr, res->ai_addr, res->ai_addrlen);
	ep->addrlen = res->ai_addrlen;
	freeaddrinfo(res);
	if (ep->addr.ss_family == AF_INET)
		((struct sockaddr_in *)&ep->addr)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)&ep->addr)->sin6_port = htons((uint16_t)port);
	return 0;
}

/* tcp:// with TLS first; the host as written is kept for the certificate
 * check (brackets dropped). */
static int
endpoint_parse_tls(const char *rest, bool for_bind, bool ipv6, struct zr__endpoint *ep)
{
	const char *colon = strrchr(rest, ':');
	size_t hlen;
	int rc = endpoint_parse_tcp(rest, for_bind, ipv6, ep);

	if (rc < 0)
		return rc;
	ep->tls = true;
	hlen = (size_t)(colon - rest);
	if (rest[0] == '[') {
		rest++;
		hlen -= 2;
	}
	if (hlen >= sizeof ep->host)
		return -EINVAL;
	memcpy(ep->host, rest, hlen);
	ep->host[hlen] = '\0';
	return 0;
}

static int
endpoint_parse_ipc(const char *rest, struct zr__endpoint *ep)
{
	struct sockaddr_un *a = (struct sockaddr_un *)&ep->addr;
	size_t len = strlen(rest);

	if (len == 0 || (rest[0] == '@' && len == 1))
		return -EINVAL;
	if (len > sizeof a->sun_path - 1)
		return -ENAMETOOLONG;
	memset(ep, 0, sizeof *ep);
	ep->transport = ZR__IPC;
	a->sun_family = AF_UNIX;
	memcpy(a->sun_path, rest, len);
	if (rest[0] == '@') {
		/* Abstract namespace: a leading NUL, and the length counts exactly
		 * the name (no terminator), as libzmq spells it. */
		a->sun_path[0] = '\0';
		ep->addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	} else {
		ep->addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
	}
	return 0;
}

/* The name is kept as text in the address storage; nothing resolves it. */
static int
endpoint_parse_inproc(const char *name, struct zr__endpoint *ep)
{
	size_t len = strnlen(name, ZR__INPROC_NAME_MAX + 1);

	if (len == 0)
		return -EINVAL;
	if (len > ZR__INPROC_NAME_MAX)
		return -ENAMETOOLONG;
	memset(ep, 0, sizeof *ep);
	ep->transport = ZR__INPROC;
	memcpy(&ep->addr, name, len);
	ep->addrlen = (socklen_t)len;
	return 0;
}

int
zr__endpoint_parse(const char *text, bool for_bind, bool ipv6, struct zr__endpoint *ep)
{
	if (text == NULL)
		return -EINVAL;
	if (strncmp(text, "tcp://", 6) == 0)
		return endpoint_parse_tcp(text + 6, for_bind, ipv6, ep);
	if (strncmp(text, "ipc://", 6) == 0)
		return endpoint_parse_ipc(text + 6, ep);
	if (strncmp(text, "tls://", 6) == 0)
		return endpoint_parse_tls(text + 6, for_bind, ipv6, ep);
	if (strncmp(text, "inproc://", 9) == 0)
		return endpoint_parse_inproc(text + 9, ep);
	if (strstr(text, "://") == NULL)
		return -EINVAL;
	return -EPROTONOSUPPORT;
}

int
zr__endpoint_socket(const struct zr__endpoint *ep)
{
	if (ep->transport == ZR__INPROC)
		return -EPROTONOSUPPORT;
	int fd = socket(ep->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	return fd < 0 ? -errno : fd;
}

int
zr__endpoint_listen(const struct zr__endpoint *ep, int backlog)
{
	int fd = zr__endpoint_socket(ep), one = 1, rc;

	if (fd < 0) /* inproc included: never a kernel socket */
		return fd;
	if (ep->transport == ZR__TCP) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (ep->addr.ss_family == AF_INET6) {
			/* "*" with ipv6 is dual-stack; a literal v6 address stays v6. */
			int v6only = 0;

			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
		}
	} else {
		const struct sockaddr_un *a = (const struct sockaddr_un *)&ep->addr;
		struct stat st;

		if (a->sun_path[0] != '\0' && stat(a->sun_path, &st) == 0 && S_ISSOCK(st.st_mode))
			unlink(a->sun_path);
	}
	if (bind(fd, (const struct sockaddr *)&ep->addr, ep->addrlen) < 0 ||
	    listen(fd, backlog) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

static int
endpoint_format_addr(int transport, const struct sockaddr_storage *ss, socklen_t len, char *buf,
                     size_t cap, bool tls)
{
	const char *scheme = tls ? "tls" : "tcp";
	char host[INET6_ADDRSTRLEN];
	int n;

	if (transport == ZR__INPROC) {
		n = snprintf(buf, cap, "inproc://%.*s", (int)len, (const char *)ss);
	} else if (transport == ZR__IPC) {
		const struct sockaddr_un *a = (const struct sockaddr_un *)ss;
		size_t plen = len > offsetof(struct sockaddr_un, sun_path)
		                      ? len - offsetof(struct sockaddr_un, sun_path)
		                      : 0;

		if (plen > 0 && a->sun_path[0] == '\0')
			n = snprintf(buf, cap, "ipc://@%.*s", (int)(plen - 1), a->sun_path + 1);
		else
			n = snprintf(buf, cap, "ipc://%.*s", (int)strnlen(a->sun_path, plen),
			             a->sun_path);
	} else if (ss->ss_family == AF_INET6) {
		struct sockaddr_in6 a;

		memcpy(&a, ss, sizeof a);
		if (inet_ntop(AF_INET6, &a.sin6_addr, host, sizeof host) == NULL)
			return -errno;
		n = snprintf(buf, cap, "%s://[%s]:%u", scheme, host, ntohs(a.sin6_port));
	} else {
		struct sockaddr_in a;

		memcpy(&a, ss, sizeof a);
		if (inet_ntop(AF_INET, &a.sin_addr, host, sizeof host) == NULL)
			return -errno;
		n = snprintf(buf, cap, "%s://%s:%u", scheme, host, ntohs(a.sin_port));
	}
	if (n < 0 || (size_t)n >= cap)
		return -ENOBUFS;
	return n;
}

int
zr__endpoint_format(const struct zr__endpoint *ep, char *buf, size_t cap)
{
	return endpoint_format_addr(ep->transport, &ep->addr, ep->addrlen, buf, cap, ep->tls);
}

int
zr__endpoint_local(int fd, int transport, char *buf, size_t cap)
{
	struct sockaddr_storage ss = {0}; /* a short address leaves no garbage behind it */
	socklen_t len = sizeof ss;

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	return endpoint_format_addr(transport, &ss, len, buf, cap, false);
}

int
zr__endpoint_bound(int fd, const struct zr__endpoint *ep, char *buf, size_t cap)
{
	struct sockaddr_storage ss = {0};
	socklen_t len = sizeof ss;

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	return endpoint_format_addr(ep->transport, &ss, len, buf, cap, ep->tls);
}

int
zr__endpoint_peer(int fd, int transport, char *buf, size_t cap)
{
	struct sockaddr_storage ss = {0};
	socklen_t len = sizeof ss;

	if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	return endpoint_format_addr(transport, &ss, len, buf, cap, false);
}

int
zr__socket_tune(int fd, int transport, int sndbuf, int rcvbuf)
{
	int one = 1;

	if (transport == ZR__TCP && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
		return -errno;
	if (sndbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf) < 0)
		return -errno;
	if (rcvbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) < 0)
		return -errno;
	return 0;
}
