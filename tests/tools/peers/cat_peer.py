#!/usr/bin/python3
"""A libzmq peer (through pyzmq) for the `zring cat` tests.

    cat_peer.py TYPE bind|connect ENDPOINT [actions]

It binds (to ENDPOINT; port * picks a free one) or connects one socket of
TYPE, prints "READY <endpoint>", does its actions in this order, prints
"DONE" and exits.

Set up before binding or connecting (anywhere among the actions):
    --routing-id ID     ZMQ_ROUTING_ID
    --plain-server U:P  PLAIN server; a ZAP handler admits only user U with
                        password P
    --subscribe TOPIC   SUB: ZMQ_SUBSCRIBE (repeatable; "" for everything)

Actions:
    --send FRAMES       send one message (repeatable)
    --recv N            receive N messages, print each
    --serve N           REP: receive N requests, print each, reply to each
                        with --reply-prefix + frame 0, then the other frames
    --reply-prefix P    (default "RE:")
    --request FRAMES    REQ: send a request, print the reply (repeatable)
    --publish FRAMES    PUB: publish every FRAMES (repeatable) in rounds, every
                        20 ms, "{i}" replaced by the round number, until stdin
                        closes
    --hold ""           keep the socket until stdin closes
FRAMES is a JSON list of strings, each character one octet (Latin-1), e.g.
'["a","","b"]'. Every message received is printed as "MSG <FRAMES>", compact
JSON. A receive waits 15 s at most ("TIMEOUT", exit 1); a setup problem prints
"FATAL <text>" (exit 3). The tests run it with /usr/bin/python3, where
Debian's python3-zmq lives.
"""

import json
import select
import sys
import time

try:
    import zmq
except ImportError as e:
    print("FATAL cannot import zmq (%s): install python3-zmq" % e, flush=True)
    sys.exit(3)

WAIT_MS = 15000


def frames_of(text):
    return [f.encode("latin-1") for f in json.loads(text)]


def show(frames):
    text = json.dumps([f.decode("latin-1") for f in frames], separators=(",", ":"))
    print("MSG " + text, flush=True)


def recv(sock):
    try:
        return sock.recv_multipart()
    except zmq.Again:
        print("TIMEOUT", flush=True)
        sys.exit(1)


def main(argv):
    if len(argv) < 3 or argv[1] not in ("bind", "connect"):
        print("FATAL usage: cat_peer.py TYPE bind|connect ENDPOINT [actions]", flush=True)
        return 3
    ctx = zmq.Context()
    sock = ctx.socket(getattr(zmq, argv[0]))
    sock.rcvtimeo = WAIT_MS
    sock.sndtimeo = WAIT_MS
    sock.linger = WAIT_MS
    args = argv[3:]
    auth = None
    for opt, val in zip(args[::2], args[1::2]):
        if opt == "--routing-id":
            sock.setsockopt(zmq.ROUTING_ID, val.encode("latin-1"))
        elif opt == "--plain-server":
            from zmq.auth.thread import ThreadAuthenticator

            user, password = val.split(":", 1)
            auth = ThreadAuthenticator(ctx)
            auth.start()
            auth.configure_plain(domain="*", passwords={user: password})
            sock.plain_server = True
        elif opt == "--subscribe":
            sock.setsockopt(zmq.SUBSCRIBE, val.encode("latin-1"))
    if argv[1] == "bind":
        sock.bind(argv[2])
        endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
    else:
        sock.connect(argv[2])
        endpoint = argv[2]
    print("READY " + endpoint, flush=True)

    prefix = b"RE:"
    publish = []
    hold = False
    i = 0
    while i < len(args):
        opt, val = args[i], args[i + 1] if i + 1 < len(args) else ""
        i += 2
        if opt == "--send":
            sock.send_multipart(frames_of(val))
        elif opt == "--recv":
            for _ in range(int(val)):
                show(recv(sock))
        elif opt == "--reply-prefix":
            prefix = val.encode("latin-1")
        elif opt == "--serve":
            for _ in range(int(val)):
                req = recv(sock)
                show(req)
                sock.send_multipart([prefix + req[0]] + req[1:])
        elif opt == "--request":
            sock.send_multipart(frames_of(val))
            show(recv(sock))
        elif opt == "--publish":
            publish.append(val)
        elif opt == "--hold":
            hold = True
        elif opt in ("--routing-id", "--plain-server", "--subscribe"):
            pass
        else:
            print("FATAL unknown action " + opt, flush=True)
            return 3

    if publish:
        deadline = time.monotonic() + WAIT_MS / 1000
        n = 0
        while time.monotonic() < deadline:
            n += 1
            for text in publish:
                sock.send_multipart(frames_of(text.replace("{i}", str(n))))
            ready, _, _ = select.select([sys.stdin], [], [], 0.02)
            if ready and not sys.stdin.buffer.read1(4096):
                break
    if hold:
        deadline = time.monotonic() + WAIT_MS / 1000
        while time.monotonic() < deadline:
            sock.getsockopt(zmq.EVENTS)  # libzmq acts on commands only inside calls
            ready, _, _ = select.select([sys.stdin], [], [], 0.05)
            if ready and not sys.stdin.buffer.read1(4096):
                break
    print("DONE", flush=True)
    sock.close()
    if auth is not None:
        auth.stop()
    ctx.term()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
