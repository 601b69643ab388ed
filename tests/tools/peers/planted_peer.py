#!/usr/bin/python3
"""A small ZMTP 3.1 peer on raw sockets with planted defects, for the
`zring probe` tests: the probe must report each defect with the right
verdict, and nothing wrong with the clean peer.

    planted_peer.py MODE [HANDSHAKE_IVL_MS]

Binds a PULL (NULL mechanism) to a free port on 127.0.0.1, prints
"READY tcp://127.0.0.1:PORT" and serves every connection in a thread until
stdin closes. MODE:
    clean           follows RFC 23 / RFC 37 strictly
    reserved-flags  accepts frames with reserved flag bits set
    crash-ping17    exits (a crash) on a PING with a 17-octet context
    no-pong         never answers PING
    leak-empty      keeps 64 octets for every empty frame it receives, for ever
    degrade         after a frame with reserved flag bits, serves no new
                    connection (it accepts them and says nothing)
"""

import os
import socket
import sys
import threading
import time

from rawconn import Closed, RawConn

MODE = sys.argv[1] if len(sys.argv) > 1 else "clean"
HS_IVL = int(sys.argv[2]) / 1000.0 if len(sys.argv) > 2 else 5.0
MAX_MSG = 64 << 20
LEAK = []
STALLED = threading.Event()
NAME_CHARS = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.+")


class Conn(RawConn):
    def frame(self):
        flags = self.take(1)[0]
        if flags & 0xF8 and MODE == "degrade":
            STALLED.set()
        elif flags & 0xF8 and MODE != "reserved-flags":
            raise Closed()
        if flags & 0x02:
            size = int.from_bytes(self.take(8), "big")
            if size >> 63:
                raise Closed()
        else:
            size = self.take(1)[0]
        if size > MAX_MSG:
            raise Closed()
        if flags & 0x04 and flags & 0x01:
            raise Closed()
        return flags, self.take(size)


def command(name, data=b""):
    body = bytes([len(name)]) + name + data
    if len(body) > 255:
        return b"\x06" + len(body).to_bytes(8, "big") + body
    return b"\x04" + bytes([len(body)]) + body


def parse_command(body):
    if len(body) < 1 or body[0] == 0 or 1 + body[0] > len(body):
        raise Closed()
    name = body[1 : 1 + body[0]]
    if not all(65 <= c <= 90 or 97 <= c <= 122 for c in name):
        raise Closed()
    return name, body[1 + body[0] :]


def parse_props(data):
    props = []
    i = 0
    while i < len(data):
        nl = data[i]
        if nl == 0 or i + 1 + nl + 4 > len(data):
            raise Closed()
        name = data[i + 1 : i + 1 + nl]
        if not all(c in NAME_CHARS for c in name):
            raise Closed()
        vl = int.from_bytes(data[i + 1 + nl : i + 5 + nl], "big")
        j = i + 5 + nl
        if j + vl > len(data):
            raise Closed()
        props.append((name.lower(), data[j : j + vl]))
        i = j + vl
    return props


def greeting():
    g = bytearray(64)
    g[0] = 0xFF
    g[9] = 0x7F
    g[10] = 3
    g[11] = 1
    g[12:16] = b"NULL"
    return bytes(g)


def serve(sock):
    c = Conn(sock)
    c.deadline = time.monotonic() + HS_IVL
    if STALLED.is_set():
        time.sleep(HS_IVL)
        sock.close()
        return
    try:
        c.send(greeting())
        sig = c.take(11)
        if sig[0] != 0xFF or sig[9] != 0x7F or sig[10] < 3:
            raise Closed()
        rest = c.take(53)
        mech = rest[1:21]
        if mech != b"NULL" + bytes(16):
            raise Closed()
        # Our READY goes first, as libzmq's does: the probe learns our type
        # from it even when it then sends a READY we refuse.
        c.send(command(b"READY", b"\x0bSocket-Type\x00\x00\x00\x04PULL"))
        flags, body = c.frame()
        if not flags & 0x04:
            raise Closed()
        name, data = parse_command(body)
        if name != b"READY":
            raise Closed()
        types = set()
        for pname, value in parse_props(data):
            if pname == b"socket-type":
                types.add(value)
            if pname == b"identity" and len(value) > 255:
                raise Closed()
        if types != {b"PUSH"}:
            raise Closed()
        c.deadline = None
        in_msg = False
        while True:
            flags, body = c.frame()
            if not flags & 0x04:
                in_msg = bool(flags & 0x01)
                if not body and MODE == "leak-empty":
                    LEAK.append(bytes(64))
                continue
            if in_msg:
                raise Closed()
            name, data = parse_command(body)
            if name == b"PING":
                if len(data) < 2:
                    raise Closed()
                ctx = data[2:]
                if len(ctx) == 17 and MODE == "crash-ping17":
                    os._exit(70)
                if len(ctx) > 16:
                    raise Closed()
                if MODE != "no-pong":
                    c.send(command(b"PONG", ctx))
            elif name == b"PONG":
                if len(data) > 16:
                    raise Closed()
            elif name in (b"ERROR", b"READY", b"HELLO", b"INITIATE", b"WELCOME"):
                raise Closed()
            # SUBSCRIBE, CANCEL and unknown commands: ignored (RFC 37)
    except (Closed, OSError):
        pass
    finally:
        sock.close()


def main():
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(512)
    print("READY tcp://127.0.0.1:%d" % ls.getsockname()[1], flush=True)

    def acceptor():
        while True:
            s, _ = ls.accept()
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=serve, args=(s,), daemon=True).start()

    threading.Thread(target=acceptor, daemon=True).start()
    sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
