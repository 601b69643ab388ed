#!/usr/bin/python3
"""A libzmq socket (through pyzmq) that the engine tests drive line by line.

Usage: epeer.py TYPE (bind|connect) ENDPOINT [NAME=VALUE ...]

TYPE is a libzmq socket type name (PUSH, PULL, PAIR, REQ, REP, DEALER,
ROUTER, PUB, SUB, XPUB, XSUB). Options, applied before bind/connect:
    identity=HEX  sndhwm=N  rcvhwm=N  sndtimeo=MS  rcvtimeo=MS  linger=MS
    maxmsgsize=N  sub=HEX (repeatable)  mandatory=1 (ROUTER_MANDATORY)
    reconnect=MS (RECONNECT_IVL)

First line written: "ENDPOINT <endpoint>" (the bound one, port included),
or "FATAL <text>" and exit 3.

A message is written as frame tokens joined by ':'. A token is either the
hex of the frame ("" is an empty frame) or "g<len>,<seed>": len generated
bytes, byte i being (i % 251 + seed) & 0xff (tests/engine/engine_util.h makes
the same bytes). Frames over 512 bytes are reported in the g form when they
match the pattern of their first byte, else as "x<len>,<crc32>".

Commands (stdin), each answered by one line:
    send TOKENS        -> "SENT" or "ERR <name>"
    recv MS            -> "MSG TOKENS" or "TIMEOUT"
    count MS           receive until nothing came for MS -> "COUNT n"
    skipuntil HEX MS   discard messages until one whose frame 0 is HEX
                       -> "SKIPPED n" or "TIMEOUT n"
    echo N MS          receive and send back unchanged, N times
                       (gives up after MS without a message) -> "ECHOED n"
    flood N MS [SIZE]  send N numbered single-frame messages of SIZE octets
                       (default 4; a 4-octet big-endian seq, then zeros) with
                       SNDTIMEO MS, stopping at the first EAGAIN
                       -> "FLOOD sent=k eagain=0|1"
    drain N MS [FIRST] receive N numbered messages, the first numbered FIRST
                       (default 0) -> "DRAIN got=k next=s bad=b"
                       (next: the seq expected next; bad: messages that were
                       not the next seq in one frame)
    quit               exit
End of file on stdin also exits, so no peer outlives its test.
"""

import sys
import zlib

try:
    import zmq
except ImportError as e:
    sys.stdout.write("FATAL cannot import zmq (%s): install python3-zmq\n" % e)
    sys.stdout.flush()
    sys.exit(3)


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def gen(length, seed):
    pat = bytes(((i + seed) & 0xFF) for i in range(251))
    reps = length // 251 + 1
    return (pat * reps)[:length]


def enc_frame(f):
    if len(f) <= 512:
        return f.hex()
    if f == gen(len(f), f[0]):
        return "g%d,%d" % (len(f), f[0])
    return "x%d,%d" % (len(f), zlib.crc32(f))


def enc(frames):
    return ":".join(enc_frame(f) for f in frames)


def dec_frame(tok):
    if tok.startswith("g"):
        n, seed = tok[1:].split(",")
        return gen(int(n), int(seed))
    return bytes.fromhex(tok)


def dec(text):
    return [dec_frame(t) for t in text.split(":")]


def serve(s, extra=None):
    """Answers the commands above on stdin until quit or end of file.

    extra maps more command names to functions(words, recv) that write
    their own answer line (tests/interop/peers/secure_peer.py adds some).
    """

    poller = zmq.Poller()
    poller.register(s, zmq.POLLIN)

    def recv(ms):
        if not poller.poll(ms):
            return None
        return s.recv_multipart()

    for line in sys.stdin:
        words = line.rstrip("\n").split(" ")
        cmd = words[0]
        try:
            if cmd == "send":
                s.send_multipart(dec(words[1] if len(words) > 1 else ""))
                out("SENT")
            elif cmd == "recv":
                m = recv(int(words[1]))
                out("TIMEOUT" if m is None else "MSG " + enc(m))
            elif cmd == "count":
                n = 0
                while recv(int(words[1])) is not None:
                    n += 1
                out("COUNT %d" % n)
            elif cmd == "skipuntil":
                want, n = bytes.fromhex(words[1]), 0
                while True:
                    m = recv(int(words[2]))
                    if m is None:
                        out("TIMEOUT %d" % n)
                        break
                    if m[0] == want:
                        out("SKIPPED %d" % n)
                        break
                    n += 1
            elif cmd == "echo":
                n = 0
                while n < int(words[1]):
                    m = recv(int(words[2]))
                    if m is None:
                        break
                    s.send_multipart(m)
                    n += 1
                out("ECHOED %d" % n)
            elif cmd == "flood":
                s.setsockopt(zmq.SNDTIMEO, int(words[2]))
                pad = bytes(max(0, int(words[3]) - 4)) if len(words) > 3 else b""
                sent, eagain = 0, 0
                for i in range(int(words[1])):
                    try:
                        s.send(i.to_bytes(4, "big") + pad)
                    except zmq.Again:
                        eagain = 1
                        break
                    sent += 1
                out("FLOOD sent=%d eagain=%d" % (sent, eagain))
            elif cmd == "drain":
                got, nxt, bad = 0, int(words[3]) if len(words) > 3 else 0, 0
                while got < int(words[1]):
                    m = recv(int(words[2]))
                    if m is None:
                        break
                    got += 1
                    seq = int.from_bytes(m[0][:4], "big")
                    if len(m) != 1 or len(m[0]) < 4 or seq != nxt:
                        bad += 1
                    nxt = seq + 1
                out("DRAIN got=%d next=%d bad=%d" % (got, nxt, bad))
            elif extra is not None and cmd in extra:
                extra[cmd](words, recv)
            elif cmd == "quit":
                break
            else:
                out("ERR unknown command " + cmd)
        except zmq.ZMQError as e:
            out("ERR %s" % zmq.strerror(e.errno).replace(" ", "_"))


def main():
    if len(sys.argv) < 4:
        out("FATAL usage: epeer.py TYPE bind|connect ENDPOINT [opts]")
        sys.exit(3)
    ctx = zmq.Context()
    try:
        s = ctx.socket(getattr(zmq, sys.argv[1]))
        s.setsockopt(zmq.LINGER, 0)
        for opt in sys.argv[4:]:
            name, _, value = opt.partition("=")
            if name == "identity":
                s.setsockopt(zmq.IDENTITY, bytes.fromhex(value))
            elif name == "sub":
                s.setsockopt(zmq.SUBSCRIBE, bytes.fromhex(value))
            elif name == "mandatory":
                s.setsockopt(zmq.ROUTER_MANDATORY, int(value))
            elif name == "reconnect":
                s.setsockopt(zmq.RECONNECT_IVL, int(value))
            else:
                s.setsockopt(getattr(zmq, name.upper()), int(value))
        if sys.argv[2] == "bind":
            s.bind(sys.argv[3])
            ep = s.getsockopt(zmq.LAST_ENDPOINT).decode()
        else:
            s.connect(sys.argv[3])
            ep = sys.argv[3]
    except Exception as e:  # reported to the test, which fails with it
        out("FATAL %s: %s" % (type(e).__name__, e))
        sys.exit(3)
    out("ENDPOINT " + ep)
    serve(s)
    s.close(0)
    ctx.term()


if __name__ == "__main__":
    main()
