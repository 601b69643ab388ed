#!/usr/bin/python3
"""A libzmq CURVE client (through pyzmq) sending broker messages, for
tests/broker/test_security.c.

    curve_sender.py PUSH|PUB ENDPOINT SERVERKEY N

It makes a key pair, dials ENDPOINT as a CURVE client of the server with
SERVERKEY (40 Z85 characters), prints "READY", and sends N messages in the
broker's wire layout [name, headers, payload]:

    name     b"sensor.t"
    headers  b"seq: <i>\\nkind: bin"
    payload  bytes([i % 256, 0, 255]) + b"payload-<i>"

A PUB first waits for the subscriber's filter, so that nothing is lost to
the slow joiner: the socket is an XPUB (a PUB on the wire: same greeting,
same messages) whose filter message says when the subscription is there.
Then it prints "SENT <N>", waits for stdin to close and exits (0). A problem
prints "FATAL <text>" (exit 3); no filter within 15 s prints "TIMEOUT"
(exit 1). The tests run it with /usr/bin/python3 (Debian's python3-zmq).
"""

import sys

try:
    import zmq
except ImportError as e:
    print("FATAL cannot import zmq (%s): install python3-zmq" % e, flush=True)
    sys.exit(3)

WAIT_MS = 15000


def message(i):
    return [
        b"sensor.t",
        b"seq: %d\nkind: bin" % i,
        bytes([i % 256, 0, 255]) + b"payload-%d" % i,
    ]


def main(argv):
    if len(argv) != 4 or argv[0] not in ("PUSH", "PUB"):
        print("FATAL usage: curve_sender.py PUSH|PUB ENDPOINT SERVERKEY N", flush=True)
        return 3
    kind, endpoint, server_key, n = argv[0], argv[1], argv[2].encode(), int(argv[3])
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PUSH if kind == "PUSH" else zmq.XPUB)
    public, secret = zmq.curve_keypair()
    sock.curve_serverkey = server_key
    sock.curve_publickey = public
    sock.curve_secretkey = secret
    sock.sndtimeo = WAIT_MS
    sock.rcvtimeo = WAIT_MS
    sock.linger = WAIT_MS
    sock.connect(endpoint)
    print("READY", flush=True)
    try:
        if kind == "PUB":
            while True:
                sub = sock.recv()
                if sub[:1] == b"\x01":
                    break
        for i in range(n):
            sock.send_multipart(message(i))
    except zmq.Again:
        print("TIMEOUT", flush=True)
        return 1
    print("SENT %d" % n, flush=True)
    sys.stdin.read()
    sock.close()
    ctx.term()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
