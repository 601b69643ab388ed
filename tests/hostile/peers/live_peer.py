#!/usr/bin/python3
"""The well-behaved libzmq peer of tests/hostile/test_hostile.c: one pyzmq
socket connected to the target on its own connection, driven line by line,
to prove the target still serves it after an attack on other connections.

Usage: live_peer.py TYPE ENDPOINT [--curve SERVER_PUBLIC_Z85]
    TYPE      PUSH, DEALER, REQ (waits for each reply), SUB (subscribed to everything) or SUBTO (a SUB
              that subscribes only when told, to prove an XPUB hears it)
Lines read on stdin:
    SEND <text>   send one single-frame message (PUSH, DEALER)
    SUB <text>    subscribe to <text> (SUBTO)
Lines written on stdout:
    READY         once, after the socket is connected (asynchronously)
    SENT          after each SEND was handed to libzmq (REQ: REPLY <text>
                  once the reply came, or NOREPLY after 10 s)
    DONE          after each SUB
    RECV <text>   every message received (SUB, SUBTO), first frame
    FATAL <text>  a setup problem (then exit 3)
Exits when stdin reaches end of file, so it never outlives its test.
"""

import os
import sys

try:
    import zmq
except ImportError as e:
    sys.stdout.write("FATAL cannot import zmq (%s): install python3-zmq\n" % e)
    sys.stdout.flush()
    sys.exit(3)


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    kind, endpoint = sys.argv[1], sys.argv[2]
    ctx = zmq.Context()
    types = {"PUSH": zmq.PUSH, "DEALER": zmq.DEALER, "REQ": zmq.REQ, "SUB": zmq.SUB, "SUBTO": zmq.SUB}
    if kind not in types:
        out("FATAL unknown type %s" % kind)
        sys.exit(3)
    s = ctx.socket(types[kind])
    s.setsockopt(zmq.LINGER, 0)
    if "--curve" in sys.argv:
        pub, sec = zmq.curve_keypair()
        s.curve_serverkey = sys.argv[sys.argv.index("--curve") + 1].encode()
        s.curve_publickey = pub
        s.curve_secretkey = sec
    if kind == "SUB":
        s.setsockopt(zmq.SUBSCRIBE, b"")
    s.connect(endpoint)
    out("READY")
    poller = zmq.Poller()
    poller.register(sys.stdin.fileno(), zmq.POLLIN)
    if kind in ("SUB", "SUBTO"):
        poller.register(s, zmq.POLLIN)
    pending = b""
    while True:
        for what, _ in poller.poll():
            if what is s:
                while True:
                    try:
                        frames = s.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    out("RECV " + frames[0].decode("utf-8", "replace"))
                continue
            chunk = os.read(sys.stdin.fileno(), 4096)
            if not chunk:
                return
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                verb, _, arg = line.decode().partition(" ")
                if verb == "SEND":
                    s.send(arg.encode())
                    out("SENT")
                    if kind == "REQ":
                        if s.poll(10000):
                            out("REPLY " + s.recv().decode("utf-8", "replace"))
                        else:
                            out("NOREPLY")
                            return
                elif verb == "SUB":
                    s.setsockopt(zmq.SUBSCRIBE, arg.encode())
                    out("DONE")


if __name__ == "__main__":
    main()
