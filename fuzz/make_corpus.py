#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/<target>/.

Every byte is laid out by hand from the RFC layouts (RFC 23 ZMTP 3.0, RFC 37
ZMTP 3.1, RFC 24 PLAIN), not produced by zring's encoder, so the seeds are an
independent reading of the wire format. Files are named by the SHA-1 of their
content, so running this again is harmless and never duplicates a seed; it
never deletes anything (the corpora also hold minimised crash reproducers and
inputs merged from fuzzing runs).

Each harness expects a few configuration bytes in front of the stream; the
layouts are documented at the top of each fuzz/fuzz_<target>.c (and in
fuzz_role.h, fuzz_conn_driver.h). Usage: python3 fuzz/make_corpus.py
"""

import hashlib
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

MORE, LONG, COMMAND = 0x01, 0x02, 0x04

# The socket type numbers libzmq uses, and the order of the role harnesses'
# table (fuzz_conn_tables.h: ct_socktypes).
TYPES = ["PAIR", "PUB", "SUB", "REQ", "REP", "DEALER", "ROUTER", "PULL", "PUSH", "XPUB",
         "XSUB", "STREAM", "SERVER", "CLIENT", "RADIO", "DISH", "GATHER", "SCATTER",
         "DGRAM", "PEER", "CHANNEL"]
ROLE_TYPES = ["PAIR", "PUB", "SUB", "REQ", "REP", "DEALER", "ROUTER", "PULL", "PUSH", "XPUB",
              "XSUB", "SERVER", "CLIENT", "RADIO", "DISH", "GATHER", "SCATTER", "PEER",
              "CHANNEL"]


def role_index(name):
    return ROLE_TYPES.index(name)


# --------------------------------------------------------------------------
# Wire layout (RFC 23 / 37)

def greeting(mech=b"NULL", minor=1, as_server=0, major=3, pad=b"\x00" * 8, sig9=0x7F,
             sig0=0xFF, filler=b"\x00" * 31):
    """signature (FF, 8 padding octets, 7F), version, 20-octet mechanism,
    as-server, 31-octet filler."""
    g = bytes([sig0]) + pad + bytes([sig9, major, minor]) + mech.ljust(20, b"\x00")[:20]
    g += bytes([as_server]) + filler
    assert len(g) == 64
    return g


def libzmq_greeting(mech=b"NULL", minor=1, as_server=0):
    # libzmq writes its identity length + 1 into the last padding octet.
    return greeting(mech, minor, as_server, pad=b"\x00" * 7 + b"\x01")


def frame(body, flags=0, force_long=False):
    """flags octet, 1-octet size (<= 255) or 8-octet network-order size."""
    if len(body) > 255 or force_long:
        return bytes([flags | LONG]) + struct.pack(">Q", len(body)) + body
    return bytes([flags, len(body)]) + body


def command(name, data=b""):
    """A command frame: name length, name, data."""
    return frame(bytes([len(name)]) + name + data, COMMAND)


def prop(name, value):
    """name length (1), name, value length (4, network order), value."""
    return bytes([len(name)]) + name + struct.pack(">I", len(value)) + value


def metadata(socktype, identity=None, extra=()):
    m = prop(b"Socket-Type", socktype.encode())
    if identity is not None:
        m += prop(b"Identity", identity)
    for n, v in extra:
        m += prop(n, v)
    return m


def ready(socktype, identity=None, extra=()):
    return command(b"READY", metadata(socktype, identity, extra))


def initiate(socktype, identity=None, extra=()):
    return command(b"INITIATE", metadata(socktype, identity, extra))


def hello(user, password):
    return command(b"HELLO", bytes([len(user)]) + user + bytes([len(password)]) + password)


def welcome():
    return command(b"WELCOME")


def error(reason):
    return command(b"ERROR", bytes([len(reason)]) + reason)


def ping(ttl=0, ctx=b""):
    return command(b"PING", struct.pack(">H", ttl) + ctx)


def pong(ctx=b""):
    return command(b"PONG", ctx)


def subscribe(topic):
    return command(b"SUBSCRIBE", topic)


def cancel(topic):
    return command(b"CANCEL", topic)


def message(*parts):
    out = b""
    for i, p in enumerate(parts):
        out += frame(p, MORE if i + 1 < len(parts) else 0)
    return out


# --------------------------------------------------------------------------

written = {}


def put(target, blob):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(blob).hexdigest()
    path = os.path.join(d, name)
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(blob)
    written[target] = written.get(target, 0) + 1


# --------------------------------------------------------------------------
# greeting: raw greeting octets

def seeds_greeting():
    t = "greeting"
    for mech in (b"NULL", b"PLAIN", b"CURVE"):
        for minor in (0, 1):
            put(t, greeting(mech, minor))
            put(t, libzmq_greeting(mech, minor))
    put(t, greeting(b"PLAIN", 1, as_server=1))
    put(t, greeting(b"NULL", 1, major=4))          # a later major: accepted
    put(t, greeting(b"NULL", 1, major=2))          # ZMTP 2.0: -ZR_EVERSION
    put(t, greeting(b"NULL", 1, sig9=0x00))        # octet 9: -ZR_ESIGNATURE
    put(t, greeting(b"NULL", 1, sig0=0x01))        # ZMTP 1.0 length octet
    put(t, greeting(b"null"))                       # lowercase: malformed
    put(t, greeting(b""))                           # empty mechanism
    put(t, greeting(b"NUL\x00L"))                   # octets after the NUL
    put(t, greeting(b"X-MY_MECH.1+2"))              # well-formed, unknown
    put(t, greeting(b"ABCDEFGHIJKLMNOPQRST"))       # exactly 20
    put(t, greeting(b"NULL", filler=b"\xAA" * 31))  # filler is not judged
    put(t, greeting(b"NULL") + b"\x04\x06\x05READY")  # what follows a greeting
    g = greeting(b"NULL")
    for n in (1, 2, 9, 10, 11, 12, 63):
        put(t, g[:n])
    put(t, b"\xff\x00\x00\x00\x00\x00\x00\x00\x01\x7f\x03")  # libzmq's first 11


# --------------------------------------------------------------------------
# frame: [limits][seed] stream

def seeds_frame():
    t = "frame"
    sizes = (0, 1, 254, 255, 256, 257, 1000)
    for cfg in (0x00, 0x80):
        for seed in (0, 7):
            for n in sizes:
                put(t, bytes([cfg, seed]) + frame(b"x" * n))
            put(t, bytes([cfg, seed]) + message(b"", b"a" * 255, b"b" * 256, b"c"))
    put(t, b"\x00\x00" + frame(b"abc", force_long=True))        # long form, small size
    put(t, b"\x00\x00" + command(b"READY", metadata("DEALER", b"id")) + message(b"hello"))
    put(t, b"\x00\x03" + ping(10, b"ctx") + message(b"a", b"b") + pong(b"ctx"))
    put(t, b"\x00\x01" + command(b"X" * 255, b"y" * 300))        # long command
    put(t, b"\x00\x00" + b"\x08\x00")                            # reserved flag bit
    put(t, b"\x00\x00" + b"\x05\x00")                            # command with MORE
    put(t, b"\x00\x00" + frame(b"a", MORE) + ping())             # command inside a message
    put(t, b"\x00\x00" + b"\x02\x80" + b"\x00" * 7)             # size above 2^63-1
    put(t, b"\x00\x00" + b"\x02\xff\xff\xff\xff\xff\xff\xff\xff")
    # limits: max_msg 255 (index 3), max_cmd 255 (index 3 << 3)
    put(t, bytes([0x03, 0]) + frame(b"m" * 255) + frame(b"m" * 256))
    put(t, bytes([0x03, 0]) + message(b"m" * 200, b"m" * 56))   # the sum counts
    put(t, bytes([0x18, 0]) + command(b"A", b"c" * 253) + command(b"A", b"c" * 254))
    put(t, bytes([0x49, 0]) + command(b"A", b"c" * 10) + command(b"A", b"c" * 300))  # raised limit
    put(t, bytes([0x01, 0]) + frame(b"") + frame(b"x"))          # max_msg 0
    put(t, bytes([0x07, 0x11]) + frame(b"q" * 1000, MORE) + frame(b"r" * 65, MORE) + frame(b""))
    # max_msg_frames from the seed's top 3 bits: 0x80 -> 1, 0xa0 -> 2, 0xc0 -> 3, 0xe0 -> 8
    empties = frame(b"", MORE) * 9
    for seed in (0x80, 0xa0, 0xc0, 0xe0):
        put(t, bytes([0x00, seed]) + message(b"", b"", b"") + empties)  # at the limit, then over
        put(t, bytes([0x80, seed | 3]) + message(b"a", b"b") + ping() + frame(b"x", MORE) + frame(b"y" * 300))
    put(t, b"\x00\x01" + empties * 8)                           # far below the default


# --------------------------------------------------------------------------
# command: [mechanism + socktype pair][socktype pair] body

def body(cmd_frame):
    """The body of a short command frame built by command()."""
    assert cmd_frame[0] & COMMAND
    if cmd_frame[0] & LONG:
        return cmd_frame[9:]
    return cmd_frame[2:]


def seeds_command():
    t = "command"
    null_cmds = [
        ready("DEALER"), ready("ROUTER", b"peer-1"), ready("SUB", None, [(b"X-App", b"v")]),
        ready("PUSH", b""), command(b"READY"), error(b"400"), error(b""), error(b"x" * 255),
        ping(), ping(600, b"c" * 16), ping(1, b"c" * 17), pong(), pong(b"p" * 16), pong(b"p" * 17),
        subscribe(b""), subscribe(b"topic"), cancel(b"topic"), command(b"JOIN", b"g"),
        command(b"LEAVE", b"g"), command(b"UNKNOWN", b"data"),
    ]
    for i, c in enumerate(null_cmds):
        put(t, bytes([0x00, i]) + body(c))
    plain_cmds = [
        hello(b"admin", b"secret"), hello(b"", b""), hello(b"u" * 255, b"p" * 255),
        welcome(), initiate("DEALER", b"id"), initiate("REQ"), command(b"WELCOME", b"x"),
        command(b"HELLO", b"\x05adm"), command(b"HELLO", b"\x01u\x01pp"),
    ]
    for i, c in enumerate(plain_cmds):
        put(t, bytes([0x01, i]) + body(c))
        put(t, bytes([0x00, i]) + body(c))  # the same under NULL: unknown
    put(t, bytes([0x02, 0]) + body(hello(b"a", b"b")))
    # malformed names and metadata
    put(t, b"\x00\x00" + b"")
    put(t, b"\x00\x00" + b"\x00READY")
    put(t, b"\x00\x00" + b"\x09READY")
    put(t, b"\x00\x00" + b"\x05RE4DY")
    put(t, b"\x00\x00" + b"\x05READY" + b"\x00" + b"\x00\x00\x00\x00")
    put(t, b"\x00\x00" + b"\x05READY" + b"\x0bSocket-Type\x00\x00\x00\x07PUSH")
    put(t, b"\x00\x00" + b"\x05READY" + b"\x0bSocket-Type\x00\x00")
    put(t, b"\x00\x00" + b"\x05READY" + b"\x0bSocket Type\x00\x00\x00\x04PUSH")
    put(t, b"\x00\x00" + b"\x05READY" + prop(b"Identity", b"i" * 256))
    put(t, b"\x00\x00" + b"\x05READY" + prop(b"identity", b"i" * 255))
    put(t, b"\x00\x00" + b"\x05READY" + b"\x03X-A\x80\x00\x00\x00")
    put(t, b"\x00\x00" + b"\x05READY" + b"\x03X-A\x7f\xff\xff\xff")
    put(t, b"\x00\x00" + b"\x05READY" + prop(b"socket-type", b"push") + prop(b"SOCKET-TYPE", b"PUB"))
    # bare metadata blocks / socket type values
    for name in TYPES + ["push", "PUSHX", ""]:
        put(t, b"\x00\x00" + name.encode())


# --------------------------------------------------------------------------
# role harnesses: [flags][socktype index][props / verdicts][seed] stream

def role(flags, socktype, extra, seed, stream):
    return bytes([flags, role_index(socktype), extra, seed]) + stream


def seeds_null(target):
    mine_peer = [("DEALER", "ROUTER"), ("ROUTER", "DEALER"), ("REQ", "REP"), ("REP", "REQ"),
                 ("PUB", "SUB"), ("SUB", "PUB"), ("XPUB", "XSUB"), ("PUSH", "PULL"),
                 ("PULL", "PUSH"), ("PAIR", "PAIR"), ("CLIENT", "SERVER"), ("RADIO", "DISH"),
                 ("SCATTER", "GATHER"), ("PEER", "PEER"), ("CHANNEL", "CHANNEL")]
    for i, (mine, peer) in enumerate(mine_peer):
        ident = b"peer-%d" % i if peer in ("REQ", "DEALER", "ROUTER") else None
        hs = ready(peer, ident)
        traffic = b""
        if peer in ("SUB", "XSUB"):
            traffic = subscribe(b"") + subscribe(b"weather") + cancel(b"weather")
        elif peer in ("PUSH", "DEALER", "REQ", "ROUTER", "REP", "PAIR"):
            traffic = message(b"", b"hello") + message(b"x" * 255) + message(b"y" * 256)
        else:
            traffic = message(b"one")
        # the whole transcript, greeting included
        put(target, role(0x00, mine, 0, i, greeting(b"NULL") + hs + traffic))
        put(target, role(0x00, mine, 1, i, libzmq_greeting(b"NULL") + hs + traffic))
        # greeting prepended by the harness (flags bit 0)
        put(target, role(0x01, mine, 0, i, hs + traffic))
    base = greeting(b"NULL")
    put(target, role(0x01, "DEALER", 0, 3, ready("ROUTER") + ping(10, b"ctx") + ping(0) +
                     pong(b"c") + command(b"FUTURE") + message(b"m")))
    put(target, role(0x03, "DEALER", 0, 4, ready("ROUTER")))             # peer is 3.0
    put(target, role(0x08, "DEALER", 0, 5, base + ready("ROUTER") + ping(5, b"a") + ping(5, b"b")))
    put(target, role(0x10, "DEALER", 2, 6, base + ready("ROUTER", b"")))  # we are 3.0
    put(target, role(0x60, "DEALER", 3, 7, base + ready("ROUTER", b"r" * 255)))
    # malformed and refused
    put(target, role(0x01, "DEALER", 0, 0, error(b"400")))
    put(target, role(0x01, "DEALER", 0, 0, command(b"READY", prop(b"Identity", b"x"))))
    put(target, role(0x01, "DEALER", 0, 0, ready("PUB")))                 # incompatible
    put(target, role(0x01, "DEALER", 0, 0, ready("FOO")))                 # not a type
    put(target, role(0x01, "DEALER", 0, 0, message(b"early")))
    put(target, role(0x01, "DEALER", 0, 0, ready("ROUTER") + ready("ROUTER")))
    put(target, role(0x01, "DEALER", 0, 0, ping()))                       # PING in handshake
    put(target, role(0x01, "DEALER", 0, 0, command(b"HELLO", b"\x00\x00")))
    put(target, role(0x01, "DEALER", 0, 0, ready("ROUTER") + frame(b"a", MORE) + ping()))
    put(target, role(0x01, "DEALER", 0, 0, ready("ROUTER") + b"\x02\x80" + b"\x00" * 7))
    put(target, role(0x01, "DEALER", 0, 0, ready("ROUTER") + error(b"bye")))
    # a small max_msg_frames (flags bit 7, the seed picks 1, 2, 3 or 8), then a flood of empty
    # MORE frames
    for seed in range(4):
        put(target, role(0x81, "DEALER", 0, seed, ready("ROUTER") + message(b"", b"", b"") +
                         frame(b"", MORE) * 9))
    put(target, role(0x00, "DEALER", 0, 0, greeting(b"PLAIN") + ready("ROUTER")))
    put(target, role(0x00, "DEALER", 0, 0, greeting(b"NULL", major=2)))
    put(target, role(0x00, "DEALER", 0, 0, b"\x01\x00"))                 # ZMTP 1.0


def seeds_plain_client():
    t = "plain_client"
    srv = greeting(b"PLAIN", 1, as_server=1)
    for i, (mine, peer) in enumerate([("DEALER", "ROUTER"), ("REQ", "REP"), ("PUSH", "PULL"),
                                       ("SUB", "PUB"), ("PAIR", "PAIR")]):
        hs = welcome() + ready(peer, b"srv" if peer in ("ROUTER", "REP") else None)
        traffic = message(b"", b"reply") if peer in ("ROUTER", "REP") else b""
        put(t, role(0x00, mine, 0, i, srv + hs + traffic))
        put(t, role(0x01, mine, 1, i, hs + traffic))
        put(t, role(0x41, mine, 0, i, hs + traffic + ping(1, b"x")))   # empty credentials
        put(t, role(0x21 | 0x08, mine, 0, i, hs + traffic))           # 255-octet credentials
    put(t, role(0x00, "DEALER", 0, 0, libzmq_greeting(b"PLAIN", 1, 1) + welcome() + ready("ROUTER")))
    put(t, role(0x01, "DEALER", 0, 0, error(b"400")))                 # refused
    put(t, role(0x01, "DEALER", 0, 0, welcome() + error(b"500")))
    put(t, role(0x01, "DEALER", 0, 0, ready("ROUTER")))               # READY before WELCOME
    put(t, role(0x01, "DEALER", 0, 0, welcome() + welcome()))
    put(t, role(0x01, "DEALER", 0, 0, command(b"WELCOME", b"x")))
    put(t, role(0x01, "DEALER", 0, 0, hello(b"a", b"b")))
    put(t, role(0x01, "DEALER", 0, 0, welcome() + initiate("ROUTER")))
    put(t, role(0x01, "DEALER", 0, 0, welcome() + ready("ROUTER") + message(b"m") + welcome()))
    put(t, role(0x00, "DEALER", 0, 0, greeting(b"NULL") + ready("ROUTER")))
    put(t, role(0x00, "DEALER", 0, 0, greeting(b"CURVE") + welcome()))


def seeds_plain_server():
    t = "plain_server"
    cli = greeting(b"PLAIN", 1, as_server=0)
    for i, (mine, peer) in enumerate([("ROUTER", "DEALER"), ("REP", "REQ"), ("PULL", "PUSH"),
                                       ("PUB", "SUB"), ("PAIR", "PAIR")]):
        hs = hello(b"admin", b"secret") + initiate(peer, b"cli" if peer in ("DEALER", "REQ") else None)
        traffic = message(b"", b"request") if peer in ("DEALER", "REQ") else b""
        if peer == "SUB":
            traffic = subscribe(b"news")
        for verdicts in (0x00, 0x01, 0x02, 0x03):   # 200, 300, 400, 500 for the first HELLO
            put(t, role(0x00, mine, verdicts, i, cli + hs + traffic))
        put(t, role(0x01, mine, 0, i, hs + traffic))
        put(t, role(0x21, mine, 0, i, hs + traffic))                   # no authenticator
    put(t, role(0x00, "ROUTER", 0, 0, libzmq_greeting(b"PLAIN") + hello(b"", b"") + initiate("DEALER")))
    put(t, role(0x01, "ROUTER", 0, 0, hello(b"u" * 255, b"p" * 255) + initiate("DEALER", b"i" * 255)))
    put(t, role(0x01, "ROUTER", 0, 0, initiate("DEALER")))             # INITIATE before HELLO
    put(t, role(0x01, "ROUTER", 0, 0, hello(b"a", b"b") + hello(b"a", b"b")))
    put(t, role(0x01, "ROUTER", 0, 0, command(b"HELLO", b"\x05adm")))  # truncated
    put(t, role(0x01, "ROUTER", 0, 0, command(b"HELLO", b"\x01a\x01bc")))
    put(t, role(0x01, "ROUTER", 0, 0, hello(b"a", b"b") + initiate("PUB")))
    put(t, role(0x01, "ROUTER", 0, 0, hello(b"a", b"b") + command(b"INITIATE")))
    put(t, role(0x01, "ROUTER", 0, 0, hello(b"a", b"b") + ready("DEALER")))
    put(t, role(0x01, "ROUTER", 0, 0, error(b"400")))
    put(t, role(0x01, "ROUTER", 0, 0, message(b"early")))


# --------------------------------------------------------------------------
# conn: 9 header octets, script, stream (fuzz_conn.c / fuzz_conn_driver.h)

DT = [0, 1, 2, 9, 10, 50, 99, 100, 101, 199, 200, 250, 500, 999, 1000, 1001, 1999, 2000, 2500,
      4999, 5000, 9999, 10000, 10001, 29999, 30000, 30001, 60000, 100000, 6553500, 6553600,
      86400000]
DATA_REST = 0x40
OUT_ALL = 0xDF
TICK = 0x80
EMPTY = 0xE0
ABORT = 0xFF


def data_n(n):
    assert 1 <= n <= 32
    return n - 1


def adv_tick(ms):
    return 0xA0 | DT.index(ms)


def adv(ms):
    return 0x60 | DT.index(ms)


def out_ack(param):
    return 0xC0 | param


def conn(socktype, mech=0, as_server=False, minor=1, auth=False, pump=False, prepend=False,
         peer_minor=1, libzmq_pad=False, now0=1, limits=0, hb=0, misc=0, verdicts=0, seed=0,
         script=b"", stream=b""):
    b0 = TYPES.index(socktype) if socktype in TYPES else 21
    mech_bits = {0: 0, 1: 3, 2: 6, 9: 7}[mech]
    minor_bits = {1: 0, 0: 2, 2: 3}[minor]
    b1 = mech_bits | (0x08 if as_server else 0) | minor_bits << 4 | (0x40 if auth else 0) | \
        (0x80 if pump else 0)
    b2 = (0x01 if prepend else 0) | (0x02 if peer_minor == 0 else 0) | (0x04 if libzmq_pad else 0) \
        | now0 << 6
    hdr = bytes([b0, b1, b2, limits, hb, misc, verdicts, seed, len(script)])
    return hdr + bytes(script) + stream


def seeds_conn():
    t = "conn"
    g = greeting(b"NULL")
    # NULL DEALER <-> ROUTER, heartbeats every 1000 ms (hb index 4), TTL 100 ms (index 1)
    hs = ready("ROUTER", b"r1")
    put(t, conn("DEALER", stream=g + hs + message(b"", b"hi")))
    put(t, conn("DEALER", hb=0x04 | 0x08, seed=3,
                script=[DATA_REST, OUT_ALL, adv_tick(1000), OUT_ALL, adv_tick(1000), adv_tick(1000),
                        OUT_ALL],
                stream=g + hs + ping(10, b"ctx") + message(b"m")))
    put(t, conn("DEALER", hb=0x04, seed=9,
                script=[data_n(32), data_n(32), data_n(10), OUT_ALL, adv_tick(999), adv_tick(1),
                        out_ack(3), out_ack(31), adv_tick(500), DATA_REST, TICK, OUT_ALL],
                stream=g + hs + pong(b"") + message(b"a" * 300)))
    # heartbeat timeout: no traffic after our PING
    put(t, conn("DEALER", hb=0x04 | 0x40, prepend=True,
                script=[DATA_REST, OUT_ALL, adv_tick(1000), OUT_ALL, adv_tick(1000), adv_tick(2000)],
                stream=hs))
    # peer TTL: PING with TTL 1 (100 ms), then silence
    put(t, conn("PUB", prepend=True, script=[DATA_REST, OUT_ALL, adv_tick(50), adv_tick(100)],
                stream=ready("SUB") + ping(1) + subscribe(b"x")))
    # handshake timeout (misc bits 0-1 = 2: 1 ms; 3: 100 ms; 0: 30 s)
    put(t, conn("PUSH", misc=0x03, script=[data_n(10), adv_tick(50), adv_tick(100)], stream=g))
    put(t, conn("PUSH", misc=0x00, script=[adv_tick(29999), adv_tick(1)], stream=g))
    put(t, conn("PUSH", misc=0x01, script=[adv_tick(86400000)], stream=g + ready("PULL")))
    # PLAIN client and server, with an authenticator
    srv = greeting(b"PLAIN", 1, as_server=1)
    cli = greeting(b"PLAIN", 1, as_server=0)
    put(t, conn("DEALER", mech=1, script=[DATA_REST, OUT_ALL],
                stream=srv + welcome() + ready("ROUTER") + message(b"x")))
    put(t, conn("DEALER", mech=1, misc=0x80, seed=5,
                script=[data_n(32), data_n(32), OUT_ALL, data_n(9), out_ack(5), DATA_REST, OUT_ALL],
                stream=srv + welcome() + ready("ROUTER")))
    for v in (0x00, 0x01, 0x02, 0x03):
        put(t, conn("ROUTER", mech=1, as_server=True, auth=True, verdicts=v,
                    script=[DATA_REST, OUT_ALL],
                    stream=cli + hello(b"admin", b"secret") + initiate("DEALER", b"d") + message(b"q")))
    put(t, conn("ROUTER", mech=1, as_server=True, pump=True, stream=cli + hello(b"", b"") +
                initiate("DEALER") + ping(0, b"c1") + ping(0, b"c2")))
    # limits (byte 3): max_msg 255 (3), max_cmd 30 (3 << 3), max handshake 30 (1 << 6)
    put(t, conn("PULL", limits=0x03 | 0x18 | 0x40,
                stream=g + ready("PUSH") + message(b"z" * 255) + message(b"z" * 256)))
    put(t, conn("PULL", limits=0x40, stream=g + ready("PUSH", None, [(b"X-Long", b"v" * 64)])))
    # minor 0 on either side, libzmq padding, big clocks
    put(t, conn("SUB", minor=0, now0=3, hb=0x04, script=[DATA_REST, OUT_ALL, adv_tick(1000)],
                stream=greeting(b"NULL", 0) + ready("PUB") + message(b"t", b"v")))
    put(t, conn("XSUB", peer_minor=0, prepend=True, libzmq_pad=True, now0=2, hb=0x05,
                script=[DATA_REST, adv_tick(10000), OUT_ALL], stream=ready("XPUB") + ping(0)))
    # abort, empty feeds, config refused by init
    put(t, conn("DEALER", script=[data_n(20), EMPTY, ABORT, DATA_REST, OUT_ALL], stream=g + hs))
    put(t, conn("DEALER", script=[DATA_REST, ABORT, OUT_ALL, TICK], stream=g + hs))
    put(t, conn("STREAM", stream=g))
    put(t, conn("DEALER", mech=2, stream=g))
    put(t, conn("DEALER", minor=2, stream=g))
    put(t, conn("ROUTER", misc=0x0C | 0x30, stream=g))   # 255-octet identity + big property
    # malformed
    put(t, conn("DEALER", prepend=True, script=[DATA_REST, OUT_ALL], stream=ready("PUB")))
    put(t, conn("DEALER", prepend=True, script=[DATA_REST, OUT_ALL], stream=message(b"early")))
    put(t, conn("DEALER", prepend=True, script=[DATA_REST, OUT_ALL], stream=hs + error(b"x" * 200)))


# --------------------------------------------------------------------------
# conn_curve_server, conn_curve_client: a config octet, a delay, the chunk seed, then
# operations for the real peer (layout at the top of
# fuzz_conn_curve.h). The handshake itself comes from the harness.

def ccs_op(kind, arg=0):
    return bytes([(arg << 3) | kind])


def ccs_frame(data, more=False):
    if len(data) > 255:
        return ccs_op(0, 1 | (2 if more else 0)) + struct.pack(">H", len(data)) + data
    return ccs_op(0, 2 if more else 0) + bytes([len(data)]) + data


def ccs_raw_flags(flags, data):
    return ccs_op(1) + bytes([flags, len(data)]) + data


CCS_CMD = {"SUBSCRIBE": 0, "CANCEL": 1, "PING": 2, "PONG": 3, "ERROR": 4, "READY": 5, "JOIN": 6}


def ccs_cmd(name, payload=b""):
    return ccs_op(2, CCS_CMD[name]) + bytes([len(payload)]) + payload


def ccs_plain(data):
    return ccs_op(3) + bytes([len(data)]) + data


def ccs_xor(at, x):
    return ccs_op(4) + struct.pack(">HB", at, x)


def ccs_replay(back=0):
    return ccs_op(5, back)


def ccs_gap():
    return ccs_op(6, 0)


def ccs_reflag(flags):
    return ccs_op(6, 16 | flags)


def ccs_time(dt_index):
    return ccs_op(7, dt_index)


def ccs(b0=0, delay=0, seed=0, ops=()):
    return bytes([b0, delay, seed]) + b"".join(ops)


def seeds_conn_curve():
    for t in ("conn_curve_server", "conn_curve_client"):
        seeds_conn_curve_one(t)


def seeds_conn_curve_one(t):
    hello, world = ccs_frame(b"hello", more=True), ccs_frame(b"world")
    put(t, ccs())
    put(t, ccs(ops=[hello, world, ccs_cmd("PING", b"\x00\x32"), ccs_time(14)]))
    put(t, ccs(b0=0x01, seed=7, ops=[ccs_cmd("SUBSCRIBE", b"topic"), ccs_cmd("CANCEL", b"topic"),
                                     ccs_cmd("SUBSCRIBE"), ccs_frame(b"x")]))
    put(t, ccs(b0=0x42, seed=3, ops=[ccs_frame(b"", more=True), ccs_frame(b"r" * 300, more=True),
                                     ccs_frame(b"end")]))
    put(t, ccs(b0=0x03, ops=[ccs_frame(b"req"), ccs_replay()]))
    put(t, ccs(ops=[hello, ccs_xor(20, 1)]))
    put(t, ccs(delay=26))               # INITIATE 61 s after HELLO: cookie expired
    put(t, ccs(delay=24))               # 60 s: still accepted
    put(t, ccs(b0=0x80))                # the authenticator refuses
    put(t, ccs(b0=0x10, ops=[ccs_plain(b"\x04\x05\x08INIT")]))
    put(t, ccs(b0=0x20, ops=[ccs_plain(b"\x04\x05" + b"\x05HELLO")]))
    put(t, ccs(b0=0x30, ops=[ccs_plain(b"\xff" + b"\x00" * 8 + b"\x7f\x03\x01CURVE")]))
    put(t, ccs(b0=0x04, ops=[ccs_frame(b"m" * 64), ccs_frame(b"m" * 65)]))
    put(t, ccs(b0=0x04, ops=[ccs_frame(b"m" * 40, more=True), ccs_frame(b"m" * 30)]))
    put(t, ccs(b0=0x08, ops=[ccs_time(14), ccs_time(14), ccs_cmd("PING", b"\x00\x0a" + b"ctx"),
                             ccs_time(17), ccs_time(21)]))
    put(t, ccs(ops=[ccs_raw_flags(0x03, b"\x04PING\x00\x00")]))
    put(t, ccs(ops=[ccs_raw_flags(0x80, b"odd flags")]))
    put(t, ccs(ops=[world, ccs_reflag(0x01)]))
    put(t, ccs(ops=[world, ccs_reflag(0x04)]))   # RFC 26's form: accepted
    put(t, ccs(ops=[ccs_gap(), world, ccs_gap(), world]))
    put(t, ccs(ops=[hello, ccs_cmd("PING", b"\x00\x00")]))
    put(t, ccs(ops=[ccs_cmd("ERROR", b"\x03bye")]))
    put(t, ccs(ops=[ccs_cmd("READY")]))
    put(t, ccs(ops=[ccs_cmd("JOIN", b"group")]))
    put(t, ccs(b0=0x02, ops=[ccs_plain(b"\x00\x05hello")]))
    put(t, ccs(b0=0x02, ops=[ccs_plain(b"\x04\x07\x04PING\x00\x00")]))
    put(t, ccs(ops=[hello, world, ccs_replay(1)]))


# fuzz_tls: byte 0 picks the target's role (bit 0: server), then 3-byte
# operations [op, a, b] with n = a | b << 8 (layout at the top of fuzz_tls.c).
def tls_op(op, n=0):
    return bytes([op, n & 0xFF, (n >> 8) & 0xFF])


def tls_seq(server, *ops):
    return bytes([1 if server else 0]) + b"".join(ops)


def seeds_tls():
    t = "tls"
    W, PULL, RAW, XOR, FEED, READ, TW, DROP = range(8)
    whole = tls_op(FEED, 0xFFFE)        # feed the whole wire (a even: feed)
    span = tls_op(FEED, 0xFFFF)         # the same through the recv span (a odd)
    inflight = tls_op(FEED, 0xFF03)     # the span, reading while it is armed (a & 2)
    for server in (False, True):
        put(t, tls_seq(server, tls_op(W, 63), tls_op(PULL), whole, tls_op(READ, 63)))
        put(t, tls_seq(server, tls_op(W, 63), tls_op(PULL), span, tls_op(READ, 0)))
        put(t, tls_seq(server, tls_op(W, 19999), tls_op(W, 19999), tls_op(PULL),
                       *[tls_op(FEED, 99), tls_op(READ, 999), tls_op(FEED, 98)] * 8))
        put(t, tls_seq(server, tls_op(W, 63), tls_op(PULL), whole, tls_op(W, 9), tls_op(PULL),
                       inflight, tls_op(READ, 99)))
        put(t, tls_seq(server, tls_op(W, 63), tls_op(PULL), tls_op(XOR, 30), whole,
                       tls_op(READ, 63)))
        put(t, tls_seq(server, tls_op(W, 63), tls_op(PULL), tls_op(XOR, 2), whole,
                       tls_op(READ, 63)))
        put(t, tls_seq(server, tls_op(W, 10), tls_op(W, 10), tls_op(PULL),
                       tls_op(DROP, 0), whole, tls_op(READ, 63)))
        put(t, tls_seq(server, tls_op(TW, 63), tls_op(W, 5), tls_op(DROP, 1),
                       tls_op(PULL), whole, tls_op(READ, 63), tls_op(TW, 20000)))
    # Raw records: a header promising more than a record may hold, a
    # plaintext alert and ChangeCipherSpec after the handshake, an
    # application record of garbage, SSLv2-looking and ZMTP-looking bytes.
    for raw in (b"\x17\x03\x03\xff\xff", b"\x15\x03\x03\x00\x02\x02\x28",
                b"\x14\x03\x03\x00\x01\x01", b"\x17\x03\x03\x00\x20" + bytes(32),
                b"\x80\x2e\x01\x03\x01", b"\xff" + bytes(8) + b"\x7f\x03\x01NULL"):
        put(t, tls_seq(False, tls_op(RAW, len(raw)) + raw, whole, tls_op(READ, 99)))
        put(t, tls_seq(True, tls_op(W, 7), tls_op(PULL), tls_op(RAW, len(raw)) + raw, span,
                       tls_op(READ, 99)))


def main():
    seeds_greeting()
    seeds_frame()
    seeds_command()
    seeds_null("null_client")
    seeds_null("null_server")
    seeds_plain_client()
    seeds_plain_server()
    seeds_conn()
    seeds_conn_curve()
    seeds_tls()
    for target in sorted(written):
        print("%-14s %3d seeds" % (target, written[target]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
