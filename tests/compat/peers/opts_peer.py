#!/usr/bin/env python3
"""A peer on the system's libzmq (pyzmq), for tests/compat/test_options.c.

usage: opts_peer.py MODE ENDPOINT [N or TOPIC]
  router-echo  ROUTER bound to ENDPOINT: answers each request with what it
               saw after the routing id: "<frames>:<frame 1 in hex>"; to a
               body "stale" it first answers with the previous request id
  push-burst   PUSH bound to ENDPOINT: sends "0".."N-1" once a peer is there,
               then prints "sent"
  router-probe ROUTER bound to ENDPOINT: prints the frames of the first
               message after the routing id, "<count>:<frames joined by .>"
  sub-first    SUB connected to ENDPOINT, subscribed to N (default: all):
               prints the first message it receives
  sub-invert   the same with INVERT_MATCHING
First line printed: "libzmq <path>", then "ready <endpoint>" once bound (the
port the kernel chose for tcp://127.0.0.1:*) or connected.
"""
import struct
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
    print("libzmq", loaded_libzmq(), flush=True)
    ctx = zmq.Context()
    if mode == "router-echo":
        r = ctx.socket(zmq.ROUTER)
        r.bind(endpoint)
        print("ready", r.last_endpoint.decode(), flush=True)
        while True:
            f = r.recv_multipart()
            ident, rest = f[0], f[1:]
            env, body = rest[:-1], rest[-1]
            if body == b"END":
                return
            if body == b"stale" and len(env) == 2:
                old = (struct.unpack("<I", env[0])[0] - 1) & 0xFFFFFFFF
                r.send_multipart([ident, struct.pack("<I", old), b"", b"stale-reply"])
            r.send_multipart([ident] + env + [b"%d:%s" % (len(rest), rest[0].hex().encode())])
    elif mode == "push-burst":
        p = ctx.socket(zmq.PUSH)
        p.bind(endpoint)
        print("ready", p.last_endpoint.decode(), flush=True)
        for i in range(int(sys.argv[3])):
            p.send(b"%d" % i)
        print("sent", flush=True)
        p.setsockopt(zmq.LINGER, 5000)
        p.close()
    elif mode == "router-probe":
        r = ctx.socket(zmq.ROUTER)
        r.bind(endpoint)
        print("ready", r.last_endpoint.decode(), flush=True)
        f = r.recv_multipart()[1:]
        print("%d:%s" % (len(f), b".".join(f).decode()), flush=True)
    elif mode in ("sub-first", "sub-invert"):
        s = ctx.socket(zmq.SUB)
        if mode == "sub-invert":
            s.setsockopt(zmq.INVERT_MATCHING, 1)
        s.subscribe(sys.argv[3].encode() if len(sys.argv) > 3 else b"")
        s.connect(endpoint)
        print("ready", endpoint, flush=True)
        print(s.recv().decode(), flush=True)
    ctx.destroy(linger=0)


main()
