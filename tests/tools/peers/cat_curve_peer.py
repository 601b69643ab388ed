#!/usr/bin/python3
"""A libzmq CURVE peer (through pyzmq) for the `zring cat` security tests.

    cat_curve_peer.py TYPE bind|connect ENDPOINT [options] [actions]

It sets up one socket of TYPE as a CURVE server or client, binds (port *
picks a free one) or connects, prints "READY <endpoint>", does its actions
in order, prints "DONE" and exits.

Options (keys as 40 Z85 characters):
    --server SECRET     a CURVE server with this secret key (no ZAP handler:
                        libzmq then admits any client key)
    --client PUBLIC SECRET SERVERKEY
                        a CURVE client with this key pair, of that server
Actions:
    --send FRAMES       send one message (repeatable)
    --recv N            receive N messages, print each as "MSG <FRAMES>"
    --failed            wait for the monitor's first handshake failure and
                        print "FAILED <event name> <value>"
FRAMES is a JSON list of strings (Latin-1). A receive or wait gives up after
15 s ("TIMEOUT", exit 1); a setup problem prints "FATAL <text>" (exit 3).
"""

import json
import sys

try:
    import zmq
    from zmq.utils.monitor import recv_monitor_message
except ImportError as e:
    print("FATAL cannot import zmq (%s): install python3-zmq" % e, flush=True)
    sys.exit(3)

WAIT_MS = 15000
FAILURES = {
    zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL: "HANDSHAKE_FAILED_NO_DETAIL",
    zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL: "HANDSHAKE_FAILED_PROTOCOL",
    zmq.EVENT_HANDSHAKE_FAILED_AUTH: "HANDSHAKE_FAILED_AUTH",
}


def frames_of(text):
    return [f.encode("latin-1") for f in json.loads(text)]


def main(argv):
    if len(argv) < 3 or argv[1] not in ("bind", "connect"):
        print("FATAL usage: cat_curve_peer.py TYPE bind|connect ENDPOINT ...", flush=True)
        return 3
    ctx = zmq.Context()
    sock = ctx.socket(getattr(zmq, argv[0]))
    sock.rcvtimeo = WAIT_MS
    sock.sndtimeo = WAIT_MS
    sock.linger = WAIT_MS
    mon = sock.get_monitor_socket(
        zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
        | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
        | zmq.EVENT_HANDSHAKE_FAILED_AUTH
    )
    mon.rcvtimeo = WAIT_MS
    args = argv[3:]
    actions = []
    i = 0
    while i < len(args):
        opt = args[i]
        if opt == "--server":
            sock.curve_secretkey = args[i + 1].encode()
            sock.curve_server = True
            i += 2
        elif opt == "--client":
            sock.curve_publickey = args[i + 1].encode()
            sock.curve_secretkey = args[i + 2].encode()
            sock.curve_serverkey = args[i + 3].encode()
            i += 4
        elif opt in ("--send", "--recv"):
            actions.append((opt, args[i + 1]))
            i += 2
        elif opt == "--failed":
            actions.append((opt, None))
            i += 1
        else:
            print("FATAL unknown argument " + opt, flush=True)
            return 3
    if argv[1] == "bind":
        sock.bind(argv[2])
        endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
    else:
        sock.connect(argv[2])
        endpoint = argv[2]
    print("READY " + endpoint, flush=True)

    for opt, val in actions:
        try:
            if opt == "--send":
                sock.send_multipart(frames_of(val))
            elif opt == "--recv":
                for _ in range(int(val)):
                    frames = sock.recv_multipart()
                    text = json.dumps([f.decode("latin-1") for f in frames],
                                      separators=(",", ":"))
                    print("MSG " + text, flush=True)
            elif opt == "--failed":
                ev = recv_monitor_message(mon)
                print("FAILED %s %d" % (FAILURES.get(ev["event"], str(ev["event"])),
                                        ev["value"]), flush=True)
        except zmq.Again:
            print("TIMEOUT", flush=True)
            return 1
    print("DONE", flush=True)
    sock.disable_monitor()
    mon.close()
    sock.close()
    ctx.term()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
