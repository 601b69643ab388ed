/*
 * zring tools — `zring keygen`: a new CURVE key pair, in Z85 (RFC 32), as
 * libzmq's zmq_curve_keypair makes it (the curve_keygen program's output in
 * a form a script can read):
 *
 *   public: <40 Z85 characters>
 *   secret: <40 Z85 characters>
 */
#ifndef ZR_TOOLS_ZL_KEYGEN_H
#define ZR_TOOLS_ZL_KEYGEN_H

/* Runs `zring keygen` with the arguments after "keygen". Returns the exit
 * status: 0 with the two lines on stdout; 0 for --help (usage on stdout);
 * 1 for any other argument (usage on stderr, nothing on stdout) or if no key
 * pair could be made (the reason on stderr). */
int zl_keygen_main(int argc, char **argv);

#endif /* ZR_TOOLS_ZL_KEYGEN_H */
