#!/usr/bin/python3
"""A CurveZMQ client (RFC 26) on raw sockets with planted defects, for the
`zring probe --listen --mechanism curve` tests: the probe, as the CURVE
server, must report each defect with the right verdict.

    planted_curve_client.py MODE ENDPOINT SERVER_PUBLIC_KEY_Z85

Connects a PUSH to ENDPOINT (tcp://HOST:PORT), prints "READY ENDPOINT",
runs the client handshake, answers every boxed PING with a boxed PONG, and
connects again whenever a connection ends, until stdin closes. MODE:
    clean               refuses what RFC 26 says to refuse
    accept-bad-welcome  a WELCOME whose box does not open is taken anyway:
                        the client answers it with an INITIATE
    accept-replay       takes a MESSAGE whose nonce is not above the last
    crash-flags         exits (a crash) on a MESSAGE whose plaintext flags
                        octet has a reserved bit set
Boxes go through libsodium (ctypes), the library the codec uses.
"""

import ctypes
import ctypes.util
import os
import socket
import sys
import threading
import time

from rawconn import Closed, RawConn

Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

sodium = ctypes.CDLL(ctypes.util.find_library("sodium") or "libsodium.so.23")
if sodium.sodium_init() < 0:
    print("FATAL sodium_init", flush=True)
    sys.exit(3)


def z85_decode(s):
    out = bytearray()
    for i in range(0, len(s), 5):
        v = 0
        for ch in s[i:i + 5]:
            v = v * 85 + Z85.index(ch)
        out += v.to_bytes(4, "big")
    return bytes(out)


def keypair():
    pk = ctypes.create_string_buffer(32)
    sk = ctypes.create_string_buffer(32)
    sodium.crypto_box_keypair(pk, sk)
    return pk.raw, sk.raw


def box(m, nonce, pk, sk):
    c = ctypes.create_string_buffer(len(m) + 16)
    sodium.crypto_box_easy(c, m, ctypes.c_ulonglong(len(m)), nonce, pk, sk)
    return c.raw


def unbox(c, nonce, pk, sk):
    if len(c) < 16:
        return None
    m = ctypes.create_string_buffer(len(c) - 16 + 1)
    rc = sodium.crypto_box_open_easy(m, c, ctypes.c_ulonglong(len(c)), nonce, pk, sk)
    return m.raw[:len(c) - 16] if rc == 0 else None


def frame(flags, body):
    if len(body) > 255:
        return bytes([flags | 0x02]) + len(body).to_bytes(8, "big") + body
    return bytes([flags, len(body)]) + body


class Conn(RawConn):
    def frame(self):
        flags = self.take(1)[0]
        if flags & 0x02:
            size = int.from_bytes(self.take(8), "big")
        else:
            size = self.take(1)[0]
        if size > 1 << 20:
            raise Closed()
        return flags, self.take(size)


def session(mode, sock, server_key):
    c = Conn(sock)
    greeting = b"\xff" + bytes(8) + b"\x7f\x03\x01" + b"CURVE".ljust(20, b"\0") + bytes(32)
    sock.sendall(greeting)
    c.take(64)
    cn_pk, cn_sk = keypair()
    c_pk, c_sk = keypair()
    n8 = (1).to_bytes(8, "big")
    hello = (b"\x05HELLO\x01\x00" + bytes(72) + cn_pk + n8 +
             box(bytes(64), b"CurveZMQHELLO---" + n8, server_key, cn_sk))
    sock.sendall(frame(0x04, hello))
    _, body = c.frame()
    if len(body) != 168 or body[:8] != b"\x07WELCOME":
        raise Closed()
    plain = unbox(body[24:], b"WELCOME-" + body[8:24], server_key, cn_sk)
    if plain is None:
        if mode != "accept-bad-welcome":
            raise Closed()
        plain = bytes(128)  # the defect: carry on with what did not open
    sn_pk, cookie = plain[:32], plain[32:128]
    vn = os.urandom(16)
    vouch = box(cn_pk + server_key, b"VOUCH---" + vn, sn_pk, c_sk)
    meta = b"\x0bSocket-Type" + (4).to_bytes(4, "big") + b"PUSH"
    n8 = (2).to_bytes(8, "big")
    initiate = (b"\x08INITIATE" + cookie + n8 +
                box(c_pk + vn + vouch + meta, b"CurveZMQINITIATE" + n8, sn_pk, cn_sk))
    sock.sendall(frame(0x04, initiate))
    _, body = c.frame()
    if len(body) < 30 or body[:6] != b"\x05READY":
        raise Closed()
    if unbox(body[14:], b"CurveZMQREADY---" + body[6:14], sn_pk, cn_sk) is None:
        raise Closed()
    peer_nonce = int.from_bytes(body[6:14], "big")
    nonce = 3
    while True:
        _, body = c.frame()
        if len(body) < 33 or body[:8] != b"\x07MESSAGE":
            raise Closed()
        n = int.from_bytes(body[8:16], "big")
        if n <= peer_nonce and mode != "accept-replay":
            raise Closed()
        plain = unbox(body[16:], b"CurveZMQMESSAGES" + body[8:16], sn_pk, cn_sk)
        if plain is None:
            raise Closed()
        peer_nonce = max(n, peer_nonce)
        if mode == "crash-flags" and len(plain) > 0 and plain[0] & 0xFC:
            os._exit(1)
        if len(plain) >= 8 and plain[0] & 0x02 and plain[1:6] == b"\x04PING":
            n8 = nonce.to_bytes(8, "big")
            nonce += 1
            pong = b"\x02\x04PONG" + plain[8:]
            msg = b"\x07MESSAGE" + n8 + box(pong, b"CurveZMQMESSAGEC" + n8, sn_pk, cn_sk)
            sock.sendall(frame(0x00, msg))


def watch_stdin():
    while sys.stdin.read(1) != "":
        pass
    os._exit(0)


def main(argv):
    mode, endpoint, key = argv[0], argv[1], z85_decode(argv[2])
    host, port = endpoint[len("tcp://"):].rsplit(":", 1)
    threading.Thread(target=watch_stdin, daemon=True).start()
    print("READY " + endpoint, flush=True)
    while True:
        try:
            sock = socket.create_connection((host, int(port)))
        except OSError:
            time.sleep(0.1)
            continue
        try:
            session(mode, sock, key)
        except Closed:
            pass
        finally:
            sock.close()
        time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
