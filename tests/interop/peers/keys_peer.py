#!/usr/bin/python3
"""Z85 and CURVE keys as libzmq computes them, for tests/interop/test_keys_pyzmq.c.

Reads request lines on stdin and answers each with one line on stdout, in
order. Two oracles answer the Z85 requests: pyzmq's zmq.utils.z85 and
libzmq's own zmq_z85_encode / zmq_z85_decode (through ctypes, from the
libzmq that pyzmq loads). The key requests go to libzmq through pyzmq
(zmq.curve_public, zmq.curve_keypair).

Requests and answers:
    enc <hex>      -> "enc <pyzmq text> <libzmq text>"
    dec <text>     -> "dec <pyzmq hex|ERR> <libzmq hex|ERR>"
                      (ERR: that oracle refused the text; "-" is empty hex)
    pub <secret>   -> "pub <public>"   zmq.curve_public(secret)
    pair           -> "pair <public> <secret>"   zmq.curve_keypair()
A setup problem prints "FATAL <text>" and exits 3.
"""
import ctypes
import ctypes.util
import sys

try:
    import zmq
    from zmq.utils import z85
except ImportError as e:
    print("FATAL pyzmq missing (Debian: python3-zmq): %s" % e, flush=True)
    sys.exit(3)


def load_libzmq():
    # pyzmq's own backend links libzmq; load the same soname.
    for name in ("libzmq.so.5", ctypes.util.find_library("zmq")):
        if name:
            try:
                lib = ctypes.CDLL(name)
                break
            except OSError:
                continue
    else:
        print("FATAL libzmq.so.5 not loadable", flush=True)
        sys.exit(3)
    lib.zmq_z85_encode.restype = ctypes.c_char_p
    lib.zmq_z85_encode.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.zmq_z85_decode.restype = ctypes.c_void_p
    lib.zmq_z85_decode.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    return lib


def hexor(b):
    return b.hex() if b else "-"


def main():
    if not zmq.has("curve"):
        print("FATAL libzmq built without CURVE", flush=True)
        sys.exit(3)
    lib = load_libzmq()
    out = []
    for raw in sys.stdin:
        line = raw.rstrip("\n")
        op, _, arg = line.partition(" ")
        if op == "enc":
            data = bytes.fromhex(arg)
            py = z85.encode(data).decode("ascii")
            buf = ctypes.create_string_buffer(len(data) // 4 * 5 + 1)
            r = lib.zmq_z85_encode(buf, data, len(data))
            lz = buf.value.decode("ascii") if r is not None else "ERR"
            out.append("enc %s %s" % (py or "-", lz or "-"))
        elif op == "dec":
            text = arg.encode("latin-1")
            try:
                py = hexor(z85.decode(text))
            except Exception:
                py = "ERR"
            buf = ctypes.create_string_buffer(len(text) // 5 * 4 + 1)
            r = lib.zmq_z85_decode(buf, text)
            lz = hexor(buf.raw[: len(text) // 5 * 4]) if r is not None else "ERR"
            out.append("dec %s %s" % (py, lz))
        elif op == "pub":
            out.append("pub %s" % zmq.curve_public(arg.encode("ascii")).decode("ascii"))
        elif op == "pair":
            pub, sec = zmq.curve_keypair()
            out.append("pair %s %s" % (pub.decode("ascii"), sec.decode("ascii")))
        else:
            print("FATAL unknown request %r" % line, flush=True)
            sys.exit(3)
    sys.stdout.write("".join(s + "\n" for s in out))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
