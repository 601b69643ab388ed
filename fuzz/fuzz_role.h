/*
 * The four role harnesses (fuzz_null_client.c, fuzz_null_server.c,
 * fuzz_plain_client.c, fuzz_plain_server.c): one connection codec in a fixed
 * mechanism and role, fed the peer's stream at a fixed clock, no script. The
 * input's first bytes choose whether a valid peer greeting is put in front, so
 * the fuzzer reaches the handshake at once; the rest is the peer's stream.
 *
 * Input layout:
 *   byte 0  bit 0 prepend a valid peer greeting (the mechanism ours, the
 *           as-server octet the opposite of ours), bit 1 its minor is 0,
 *           bit 2 libzmq-style padding, bit 3 drain output after every chunk
 *           in the chunked run, bit 4 our minor is 0, bits 5-6 identity (NULL)
 *           or credentials (PLAIN client); PLAIN server: bit 5 no
 *           authenticator (accept all, as libzmq without ZAP), bit 6 it
 *           answers later (ZR_ZMTP_AUTH_PENDING); bit 7 a small
 *           max_msg_frames (fz_frame_limits[4 + byte 3 % 4])
 *   byte 1  our socket type (index into the 19 handshake types)
 *   byte 2  PLAIN server: the authenticator's verdicts, 2 bits per HELLO
 *           (200, 300, 400, 500); otherwise bits 0-1 the properties we send
 *   byte 3  seed of the chunk sizes
 *   rest    the peer's byte stream
 */
#ifndef ZR_FUZZ_FUZZ_ROLE_H
#define ZR_FUZZ_FUZZ_ROLE_H

#include "fuzz_conn_driver.h"
#include "fuzz_conn_tables.h"

#define ROLE_HEADER 4

static void
role_fuzz(const uint8_t *data, size_t size, int mechanism, bool as_server)
{
	struct cd_params p;
	uint8_t *stream;
	size_t rest;

	if (size < ROLE_HEADER)
		return;
	memset(&p, 0, sizeof p);
	zr_zmtp_config_default(&p.cfg, ct_socktypes[data[1] % 19]);
	p.cfg.mechanism = mechanism;
	p.cfg.as_server = as_server;
	p.cfg.minor = (data[0] & 0x10) ? 0 : 1;
	p.pump_each_chunk = (data[0] & 0x08) != 0;
	p.now0 = 1000;
	p.seed = data[3];
	if (data[0] & 0x80)
		p.cfg.max_msg_frames = fz_frame_limits[4 + data[3] % 4];
	if (mechanism == ZR_MECH_PLAIN && as_server) {
		p.use_auth = (data[0] & 0x20) == 0;
		p.defer_auth = (data[0] & 0x40) != 0;
		p.verdicts = &data[2];
		p.n_verdicts = 1;
	} else {
		p.cfg.props = ct_prop_sets[data[2] & 3].p;
		p.cfg.props_count = ct_prop_sets[data[2] & 3].n;
	}
	if (mechanism == ZR_MECH_NULL) {
		p.cfg.routing_id = ct_identities[data[0] >> 5 & 3].p;
		p.cfg.routing_id_len = ct_identities[data[0] >> 5 & 3].len;
	} else if (!as_server) {
		const struct ct_creds *c = &ct_cred_sets[data[0] >> 5 & 3];

		p.cfg.username = c->user;
		p.cfg.username_len = c->user_len;
		p.cfg.password = c->pass;
		p.cfg.password_len = c->pass_len;
	}

	rest = size - ROLE_HEADER;
	stream = fz_alloc(rest + ZR_ZMTP_GREETING_SIZE);
	if (data[0] & 0x01) {
		cd_peer_greeting(stream, (data[0] & 0x02) ? 0 : 1, mechanism,
		                 mechanism == ZR_MECH_PLAIN && !as_server, (data[0] & 0x04) != 0);
		p.data_len = ZR_ZMTP_GREETING_SIZE;
	}
	if (rest > 0)
		memcpy(stream + p.data_len, data + ROLE_HEADER, rest);
	p.data_len += rest;
	p.data = stream;

	cd_fuzz(&p);
	free(stream);
}

#endif /* ZR_FUZZ_FUZZ_ROLE_H */
