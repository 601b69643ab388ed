/*
 * io/ — endpoints: "tcp://host:port" and "ipc://path" (or "ipc://@name" for
 * Linux's abstract namespace) turned into socket addresses, listening and
 * connecting sockets, and the bound address read back as text. Internal.
 */
#ifndef ZR_IO_ENDPOINT_H
#define ZR_IO_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

enum zr__transport {
	ZR__TCP = 1,
	ZR__IPC = 2,
	/* Never a kernel socket: the engine pairs the two sockets itself
	 * (engine/inproc.c); the name sits in addr as a NUL-ended string. */
	ZR__INPROC = 4,
};

/* An inproc:// name: 1 to 127 octets (any but NUL), so that it fits, with
 * its NUL, in struct zr__endpoint's address storage. */
#define ZR__INPROC_NAME_MAX 127

#define ZR__ENDPOINT_TEXT_MAX 160 /* "ipc://" + a 107-octet path, or tcp + [v6]:port */

struct zr__endpoint {
	int transport; /* enum zr__transport */
	socklen_t addrlen;
	struct sockaddr_storage addr;
	/* tls://: a tcp endpoint whose connections run TLS first (engine/tls.h);
	 * host is the name as written, what the server's certificate must carry. */
	bool tls;
	char host[256];
};

/*
 * Parses text ("tcp://", "tls://" with the same address forms, "ipc://"). for_bind allows "*" as the host (any address) and "*" or 0 as
 * the port (the kernel picks one: read it back with zr__endpoint_local).
 * ipv6 makes "*" the dual-stack "::" and lets host names resolve to IPv6
 * too (libzmq's ZMQ_IPV6); a bracketed "[::1]" is IPv6 either way. Host
 * names are resolved here, blocking. Returns 0, -EINVAL (malformed),
 * -EPROTONOSUPPORT (unknown transport), -ENAMETOOLONG (ipc path over 107
 * octets, inproc name over ZR__INPROC_NAME_MAX) or -EHOSTUNREACH (the name
 * does not resolve). "inproc://name" needs a non-empty name; listen and
 * socket refuse it (-EPROTONOSUPPORT): the engine connects those itself.
 */
int zr__endpoint_parse(const char *text, bool for_bind, bool ipv6, struct zr__endpoint *ep);

/*
 * A listening socket bound to ep (SO_REUSEADDR for tcp; for an ipc path a
 * stale socket file left by an earlier process is removed first, as libzmq
 * does). Returns the fd (>= 0) or -errno (-EADDRINUSE, -EACCES, ...).
 */
int zr__endpoint_listen(const struct zr__endpoint *ep, int backlog);

/* A fresh socket (close-on-exec) of ep's family, for connecting. Returns the fd or -errno. */
int zr__endpoint_socket(const struct zr__endpoint *ep);

/* Writes ep as text ("tcp://127.0.0.1:5555", "tcp://[::1]:5555", "ipc:///tmp/x",
 * "ipc://@name", "inproc://name"). Returns the length or -ENOBUFS. */
int zr__endpoint_format(const struct zr__endpoint *ep, char *buf, size_t cap);

/* The address a socket is bound to, as text (see zr__endpoint_format). */
int zr__endpoint_local(int fd, int transport, char *buf, size_t cap);
/* The same for a listener of ep: "tls://..." for a tls endpoint. */
int zr__endpoint_bound(int fd, const struct zr__endpoint *ep, char *buf, size_t cap);

/* The address of a connected socket's peer, as text (an ipc peer usually
 * has no name: "ipc://"). */
int zr__endpoint_peer(int fd, int transport, char *buf, size_t cap);

/* Per-connection socket options: TCP_NODELAY on tcp, and SO_SNDBUF /
 * SO_RCVBUF when > 0 (set them before connect/listen: they also fix the
 * kernel's buffer sizes, switching autotuning off). Returns 0 or -errno. */
int zr__socket_tune(int fd, int transport, int sndbuf, int rcvbuf);

#endif /* ZR_IO_ENDPOINT_H */
