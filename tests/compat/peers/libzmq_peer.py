#!/usr/bin/env python3
"""A peer on the system's libzmq (pyzmq), for tests/compat/test_interop.c.

usage: libzmq_peer.py MODE ENDPOINT [CURVE ROLE KEYS...]
  MODE rep-bind      REP bound to ENDPOINT: prints the bound endpoint, echoes
                     every multipart request until one whose first frame is END
  MODE req-connect   REQ connected to ENDPOINT: sends 3 multipart requests and
                     checks each echo; exit status 0 when all came back whole
  MODE req-refused   REQ connected to ENDPOINT, expecting the server to refuse
                     it: prints "refused EVENT VALUE" for the first handshake
                     failure its monitor reports (or "refused none")
  curve server SECRET             be a CURVE server
  curve client SERVERPUB PUB SEC  be a CURVE client
  plain client USER PASS          be a PLAIN client
First line printed: "libzmq <path of the libzmq.so it loaded>", so the test can
check that this peer is not on the drop-in.
"""
import sys

import zmq


def loaded_libzmq():
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libzmq" in line:
                return line.split()[-1]
    return "?"


def main():
    mode, endpoint = sys.argv[1], sys.argv[2]
    extra = sys.argv[3:]
    print("libzmq", loaded_libzmq(), flush=True)
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REP if mode == "rep-bind" else zmq.REQ)
    sock.linger = 0
    sock.rcvtimeo = 20000
    sock.sndtimeo = 20000
    if extra and extra[0] == "plain":
        sock.plain_username = extra[2].encode()
        sock.plain_password = extra[3].encode()
    elif extra and extra[0] == "curve":
        if extra[1] == "server":
            sock.curve_server = True
            sock.curve_secretkey = extra[2].encode()
        else:
            sock.curve_serverkey = extra[2].encode()
            sock.curve_publickey = extra[3].encode()
            sock.curve_secretkey = extra[4].encode()
    status = 0
    if mode == "rep-bind":
        sock.bind(endpoint)
        print(sock.last_endpoint.decode(), flush=True)
        while True:
            parts = sock.recv_multipart()
            sock.send_multipart(parts)
            if parts[0] == b"END":
                break
    elif mode == "req-refused":
        mon = sock.get_monitor_socket()
        sock.connect(endpoint)
        failed = zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
        seen = "none"
        while mon.poll(20000):
            frames = mon.recv_multipart()
            event, value = int.from_bytes(frames[0][:2], "little"), int.from_bytes(
                frames[0][2:6], "little")
            if event & failed:
                seen = "%d %d" % (event, value)
                break
        print("refused", seen, flush=True)
        sock.disable_monitor()
        mon.close()
    else:
        sock.connect(endpoint)
        for i in range(3):
            parts = [b"req%d" % i, b"", bytes(range(256)) * (i * 40 + 1)]
            sock.send_multipart(parts)
            if sock.recv_multipart() != parts:
                status = 1
        print("done", status, flush=True)
    ctx.destroy(linger=0)
    return status


if __name__ == "__main__":
    sys.exit(main())
