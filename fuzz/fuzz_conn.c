/*
 * Fuzz harness: the whole connection state machine (zr_zmtp_init, _feed,
 * _tick, _out, _out_ack, _want, _deadline, _abort) with a fake clock.
 *
 * Input layout (see fuzz_conn_driver.h for the script and the checks):
 *   byte 0  our socket type: byte % 22 (21 is no socket type at all)
 *   byte 1  bits 0-2 mechanism (0-2 NULL, 3-5 PLAIN, 6 CURVE, 7 unknown),
 *           bit 3 as_server, bits 4-5 minor (0,1: 1; 2: 0; 3: 2, invalid),
 *           bit 6 install an authenticator, bit 7 drain output after every
 *           chunk in the chunked run
 *   byte 2  bit 0 prepend a valid peer greeting, bit 1 its minor is 0,
 *           bit 2 libzmq-style padding, bit 3 its as-server octet,
 *           bits 4-5 its mechanism (ours, NULL, PLAIN, CURVE),
 *           bits 6-7 the clock's start (0, 1000, 2^40, 2^62)
 *   byte 3  bits 0-2 max_msg_size, 3-5 max_cmd_size, 6-7 max_handshake_cmd
 *   byte 4  bits 0-2 heartbeat_ivl, 3-4 heartbeat_ttl, 5-6 heartbeat_timeout,
 *           bit 7 a small max_msg_frames (fz_frame_limits[4 + byte 7 % 4])
 *   byte 5  bits 0-1 handshake_ivl, 2-3 identity, 4-5 properties, 6-7 credentials
 *   byte 6  the authenticator's verdicts, 2 bits per HELLO (200/300/400/500)
 *   byte 7  seed of the chunk sizes; bit 7 also: the authenticator answers
 *           later (ZR_ZMTP_AUTH_PENDING, then zr_zmtp_auth_reply)
 *   byte 8  n, the script length; then n script bytes; the rest is the
 *           peer's byte stream
 */
#include "fuzz_conn_driver.h"
#include "fuzz_conn_tables.h"

static const uint64_t conn_max_msg[8] = {
	ZR_ZMTP_DEFAULT_MAX_MSG_SIZE, 1, 100, 255, 256, 1000, 65536, UINT64_MAX,
};
static const uint32_t conn_max_cmd[8] = {
	ZR_ZMTP_DEFAULT_MAX_CMD_SIZE, 0, 8, 30, 255, 256, 1000, UINT32_MAX,
};
static const uint32_t conn_max_hs[4] = {ZR_ZMTP_DEFAULT_MAX_HANDSHAKE_CMD, 30, 256, 1280};
static const uint32_t conn_hb_ivl[8] = {0, 0, 1, 100, 1000, 10000, 30000, UINT32_MAX};
static const uint32_t conn_hb_ttl[4] = {0, 100, 6553500, UINT32_MAX};
static const uint32_t conn_hb_timeout[4] = {0, 1, 1000, 50000};
static const uint32_t conn_hs_ivl[4] = {30000, 0, 1, 100};
static const uint64_t conn_now0[4] = {0, 1000, (uint64_t)1 << 40, (uint64_t)1 << 62};
static const int conn_mechs[8] = {
	ZR_MECH_NULL,  ZR_MECH_NULL,  ZR_MECH_NULL,  ZR_MECH_PLAIN,
	ZR_MECH_PLAIN, ZR_MECH_PLAIN, ZR_MECH_CURVE, 5,
};
static const uint8_t conn_minors[4] = {1, 1, 0, 2};

#define CONN_HEADER 9

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cd_params p;
	uint8_t greeting[ZR_ZMTP_GREETING_SIZE];
	uint8_t *stream;
	size_t ctl_len, rest;
	int socktype, peer_mech;

	if (size < CONN_HEADER)
		return 0;
	memset(&p, 0, sizeof p);
	socktype = data[0] % 22;
	if (socktype == 21)
		socktype = 99;
	zr_zmtp_config_default(&p.cfg, socktype);
	p.cfg.mechanism = conn_mechs[data[1] & 7];
	p.cfg.as_server = (data[1] & 0x08) != 0;
	p.cfg.minor = conn_minors[data[1] >> 4 & 3];
	p.use_auth = (data[1] & 0x40) != 0;
	p.pump_each_chunk = (data[1] & 0x80) != 0;

	p.now0 = conn_now0[data[2] >> 6];
	p.cfg.max_msg_size = conn_max_msg[data[3] & 7];
	p.cfg.max_cmd_size = conn_max_cmd[data[3] >> 3 & 7];
	p.cfg.max_handshake_cmd = conn_max_hs[data[3] >> 6];
	p.cfg.heartbeat_ivl_ms = conn_hb_ivl[data[4] & 7];
	p.cfg.heartbeat_ttl_ms = conn_hb_ttl[data[4] >> 3 & 3];
	p.cfg.heartbeat_timeout_ms = conn_hb_timeout[data[4] >> 5 & 3];
	if (data[4] & 0x80)
		p.cfg.max_msg_frames = fz_frame_limits[4 + data[7] % 4];
	p.cfg.handshake_ivl_ms = conn_hs_ivl[data[5] & 3];
	p.cfg.routing_id = ct_identities[data[5] >> 2 & 3].p;
	p.cfg.routing_id_len = ct_identities[data[5] >> 2 & 3].len;
	p.cfg.props = ct_prop_sets[data[5] >> 4 & 3].p;
	p.cfg.props_count = ct_prop_sets[data[5] >> 4 & 3].n;
	if (p.cfg.mechanism == ZR_MECH_PLAIN && !p.cfg.as_server) {
		const struct ct_creds *c = &ct_cred_sets[data[5] >> 6];

		p.cfg.username = c->user;
		p.cfg.username_len = c->user_len;
		p.cfg.password = c->pass;
		p.cfg.password_len = c->pass_len;
	}
	p.verdicts = &data[6];
	p.n_verdicts = 1;
	p.seed = data[7];
	p.defer_auth = (data[7] & 0x80) != 0;

	ctl_len = data[8];
	rest = size - CONN_HEADER;
	if (ctl_len > rest)
		ctl_len = rest;
	p.ctl = data + CONN_HEADER;
	p.ctl_len = ctl_len;

	/* The peer's stream, with a valid greeting in front when asked. */
	peer_mech = (data[2] >> 4 & 3) == 0 ? p.cfg.mechanism : (data[2] >> 4 & 3) - 1;
	cd_peer_greeting(greeting, (data[2] & 0x02) ? 0 : 1, peer_mech, (data[2] & 0x08) != 0,
	                 (data[2] & 0x04) != 0);
	rest -= ctl_len;
	stream = fz_alloc(rest + sizeof greeting);
	p.data_len = 0;
	if (data[2] & 0x01) {
		memcpy(stream, greeting, sizeof greeting);
		p.data_len = sizeof greeting;
	}
	if (rest > 0)
		memcpy(stream + p.data_len, data + CONN_HEADER + ctl_len, rest);
	p.data_len += rest;
	p.data = stream;

	cd_fuzz(&p);
	free(stream);
	return 0;
}
