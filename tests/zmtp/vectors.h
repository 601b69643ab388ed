/*
 * Wire vectors written by hand from the RFC grammars (RFC 23 ZMTP 3.0,
 * RFC 37 ZMTP 3.1, RFC 24 PLAIN), never produced by our encoder. Each macro
 * is a C string literal; ZT_LIT() turns one into pointer + length.
 *
 * Hex escapes are always closed with a literal break ("\x05" "DEALER"), since
 * an escape swallows every hex digit that follows it.
 */
/* Wire vectors are written as adjacent literals, one per field, the way the
 * bytes sit on the wire; the formatter would put each on a line of its own. */
/* clang-format off */
#ifndef ZR_TESTS_ZMTP_VECTORS_H
#define ZR_TESTS_ZMTP_VECTORS_H

#define Z4 "\0\0\0\0"
#define Z8 Z4 Z4
#define Z16 Z8 Z8
#define Z31 Z16 Z8 Z4 "\0\0\0"

/* signature = %xFF padding %x7F, padding = 8OCTET (zero as we send it) */
#define SIG "\xff" Z8 "\x7f"
/* mechanism = 20 octets, the name NUL-padded */
#define MECH_NULL "NULL" Z16
#define MECH_PLAIN "PLAIN" Z8 Z4 "\0\0\0"
#define MECH_CURVE "CURVE" Z8 Z4 "\0\0\0"
/* greeting = signature version mechanism as-server filler(31 zero octets) */
#define GREETING(ver2, mech20, server1) SIG ver2 mech20 server1 Z31

#define G_NULL_31 GREETING("\x03\x01", MECH_NULL, "\x00")
#define G_NULL_30 GREETING("\x03\x00", MECH_NULL, "\x00")
#define G_PLAIN_31_CLIENT GREETING("\x03\x01", MECH_PLAIN, "\x00")
#define G_PLAIN_31_SERVER GREETING("\x03\x01", MECH_PLAIN, "\x01")
#define G_PLAIN_30_SERVER GREETING("\x03\x00", MECH_PLAIN, "\x01")

/*
 * READY = command-size %d5 "READY" metadata; property = name-len name
 * value-len(4, network order) value. Sizes: 1 (name length) + 5 + properties.
 */
#define PROP_ST(len1, name) "\x0b" "Socket-Type" "\x00\x00\x00" len1 name
#define PROP_ID_EMPTY "\x08" "Identity" "\x00\x00\x00\x00"

/* 6 + 1 + 11 + 4 + 4 = 26 */
#define READY_PUSH "\x04\x1a" "\x05" "READY" PROP_ST("\x04", "PUSH")
#define READY_PULL "\x04\x1a" "\x05" "READY" PROP_ST("\x04", "PULL")
#define READY_PAIR "\x04\x1a" "\x05" "READY" PROP_ST("\x04", "PAIR")
/* 6 + 1 + 11 + 4 + 3 = 25 */
#define READY_PUB "\x04\x19" "\x05" "READY" PROP_ST("\x03", "PUB")
#define READY_SUB "\x04\x19" "\x05" "READY" PROP_ST("\x03", "SUB")
#define READY_REP "\x04\x19" "\x05" "READY" PROP_ST("\x03", "REP")
/* 25 + 1 + 8 + 4 = 38: libzmq's REQ sends an empty Identity */
#define READY_REQ "\x04\x26" "\x05" "READY" PROP_ST("\x03", "REQ") PROP_ID_EMPTY
/* 6 + 1 + 11 + 4 + 6 + 13 = 41 */
#define READY_DEALER "\x04\x29" "\x05" "READY" PROP_ST("\x06", "DEALER") PROP_ID_EMPTY
#define READY_ROUTER "\x04\x29" "\x05" "READY" PROP_ST("\x06", "ROUTER") PROP_ID_EMPTY

/* PLAIN (RFC 24): HELLO = %d5 "HELLO" username password, each 1-octet
 * length + octets; WELCOME = %d7 "WELCOME"; INITIATE = %d8 "INITIATE" metadata. */
/* 1 + 5 + 1 + 5 + 1 + 6 = 19 */
#define HELLO_ADMIN_SECRET "\x04\x13" "\x05" "HELLO" "\x05" "admin" "\x06" "secret"
#define WELCOME "\x04\x08" "\x07" "WELCOME"
/* 1 + 8 + 1 + 11 + 4 + 4 = 29 */
#define INITIATE_PUSH "\x04\x1d" "\x08" "INITIATE" PROP_ST("\x04", "PUSH")
#define INITIATE_PULL "\x04\x1d" "\x08" "INITIATE" PROP_ST("\x04", "PULL")

/* ERROR = %d5 "ERROR" error-reason (1-octet length + text): 1 + 5 + 1 + 3 = 10 */
#define ERROR_400 "\x04\x0a" "\x05" "ERROR" "\x03" "400"

/* clang-format on */
#endif /* ZR_TESTS_ZMTP_VECTORS_H */
