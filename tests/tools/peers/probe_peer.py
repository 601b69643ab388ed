#!/usr/bin/python3
"""A libzmq peer (through pyzmq) for the `zring probe` tests.

    probe_peer.py TYPE ENDPOINT [options]

Binds one socket of TYPE to ENDPOINT (port * picks a free one), or connects
it with --connect, prints "READY <endpoint>" and serves until stdin closes:
a PULL, SUB, DEALER or ROUTER drains what it gets, a REP answers every
request, a PUB publishes "tick" every 50 ms. Options:
    --connect           connect instead of bind
    --curve-server SEC  CURVE server with this Z85 secret key
    --plain-server U:P  PLAIN server; a ZAP handler admits only U with P
    --plain-client U:P  PLAIN client with these credentials
    --curve-client PUB  CURVE client of the server with this Z85 public key
                        (its own key pair is made for the run)
    --handshake-ivl MS  ZMQ_HANDSHAKE_IVL
"""

import select
import sys
import time

try:
    import zmq
except ImportError as e:
    print("FATAL cannot import zmq (%s): install python3-zmq" % e, flush=True)
    sys.exit(3)


def main(argv):
    ctx = zmq.Context()
    sock = ctx.socket(getattr(zmq, argv[0]))
    sock.linger = 0
    endpoint = argv[1]
    args = argv[2:]
    connect = False
    auth = None
    i = 0
    while i < len(args):
        opt = args[i]
        if opt == "--connect":
            connect = True
            i += 1
            continue
        val = args[i + 1]
        i += 2
        if opt == "--curve-server":
            sock.curve_server = True
            sock.curve_secretkey = val.encode()
        elif opt == "--plain-server":
            from zmq.auth.thread import ThreadAuthenticator

            user, pw = val.split(":", 1)
            auth = ThreadAuthenticator(ctx)
            auth.start()
            auth.configure_plain(domain="*", passwords={user: pw})
            sock.plain_server = True
        elif opt == "--plain-client":
            user, pw = val.split(":", 1)
            sock.plain_username = user.encode()
            sock.plain_password = pw.encode()
        elif opt == "--curve-client":
            pub, sec = zmq.curve_keypair()
            sock.curve_serverkey = val.encode()
            sock.curve_publickey = pub
            sock.curve_secretkey = sec
        elif opt == "--handshake-ivl":
            sock.setsockopt(zmq.HANDSHAKE_IVL, int(val))
        else:
            print("FATAL unknown option %s" % opt, flush=True)
            return 3
    if connect:
        sock.connect(endpoint)
        print("READY " + endpoint, flush=True)
    else:
        sock.bind(endpoint)
        print("READY " + sock.getsockopt(zmq.LAST_ENDPOINT).decode(), flush=True)
    poller = zmq.Poller()
    if argv[0] != "PUB":
        poller.register(sock, zmq.POLLIN)
    next_pub = time.monotonic()
    while True:
        r, _, _ = select.select([sys.stdin], [], [], 0)
        if r and sys.stdin.read(1) == "":
            break
        for s, _ in poller.poll(20):
            # Drain everything queued: a flood must not wait on this loop.
            for _ in range(100000):
                try:
                    frames = s.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                if argv[0] == "REP":
                    s.send_multipart(frames)
        if argv[0] == "PUB" and time.monotonic() >= next_pub:
            sock.send(b"tick")
            next_pub = time.monotonic() + 0.05
    if auth is not None:
        auth.stop()
    sock.close()
    ctx.term()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
