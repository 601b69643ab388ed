/*
 * Publish throughput when every subscriber holds many topics: one zring PUB,
 * S zring SUBs (default 10) each subscribed to T topics (default 1,000) of
 * its own, M messages (default 1,000,000) of 16 octets published round-robin
 * to one topic of each subscriber in turn (the last it subscribed, the worst
 * place for a linear scan), lossless (ZR_PUB_BLOCK). Prints messages per
 * second from the first send to the last receive, and the process's CPU
 * seconds per million messages (steadier than the rate on a shared
 * machine). One process, one context: the io thread does the matching.
 *
 *   bench_pub_topics [T [S [M]]]
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <zring/zring.h>

struct rx {
	zr_socket *s;
	long want, got;
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *
rx_main(void *arg)
{
	struct rx *r = arg;
	char buf[64];

	while (r->got < r->want && zr_recv_bytes(r->s, buf, sizeof buf, 0) >= 0)
		r->got++;
	return NULL;
}

int
main(int argc, char **argv)
{
	int topics = argc > 1 ? atoi(argv[1]) : 1000;
	int nsubs = argc > 2 ? atoi(argv[2]) : 10;
	long msgs = argc > 3 ? atol(argv[3]) : 1000000;
	int block = ZR_PUB_BLOCK, t = 10000, hwm = 10000;
	char ep[128], topic[32];
	size_t len = sizeof ep;
	zr_ctx *ctx;
	zr_socket *pub, *subs[64];
	struct rx rx[64];
	pthread_t th[64];

	if (nsubs < 1 || nsubs > 64 || topics < 1 || topics >= 1000000 || msgs < 1)
		return 2;
	if (zr_ctx_new(&ctx) != 0 || zr_socket_open(ctx, ZR_PUB, &pub) != 0)
		return 1;
	zr_setsockopt(pub, ZR_PUB_POLICY, &block, sizeof block);
	zr_setsockopt(pub, ZR_SNDHWM, &hwm, sizeof hwm);
	if (zr_bind(pub, "tcp://127.0.0.1:0") != 0)
		return 1;
	zr_getsockopt(pub, ZR_LAST_ENDPOINT, ep, &len);
	for (int i = 0; i < nsubs; i++) {
		zr_socket_open(ctx, ZR_SUB, &subs[i]);
		zr_setsockopt(subs[i], ZR_RCVTIMEO, &t, sizeof t);
		zr_setsockopt(subs[i], ZR_RCVHWM, &hwm, sizeof hwm);
		for (int k = 0; k < topics; k++) {
			int n = snprintf(topic, sizeof topic, "s%02d-topic-%06d", i, k);

			zr_setsockopt(subs[i], ZR_SUBSCRIBE, topic, (size_t)n);
		}
		zr_connect(subs[i], ep);
	}
	/* Every subscriber has all its topics once its last one matches. */
	for (int i = 0; i < nsubs; i++) {
		char buf[64];
		int n = snprintf(topic, sizeof topic, "s%02d-topic-%06d", i, topics - 1);
		int ok = 0;

		for (int tries = 0; tries < 1000 && !ok; tries++) {
			zr_send_bytes(pub, topic, (size_t)n, 0);
			ok = zr_recv_bytes(subs[i], buf, sizeof buf, ZR_DONTWAIT) >= 0;
			if (!ok) {
				struct timespec ts = {0, 10 * 1000 * 1000};

				nanosleep(&ts, NULL);
			}
		}
		if (!ok) {
			fprintf(stderr, "subscriber %d never got its topics\n", i);
			return 1;
		}
		while (zr_recv_bytes(subs[i], buf, sizeof buf, ZR_DONTWAIT) >= 0)
			;
	}
	for (int i = 0; i < nsubs; i++) {
		rx[i] = (struct rx){.s = subs[i], .want = msgs / nsubs + (i < msgs % nsubs)};
		pthread_create(&th[i], NULL, rx_main, &rx[i]);
	}
	char msg[32]; /* 16 octets sent: topics < 1,000,000 */
	struct rusage u0, u1;

	getrusage(RUSAGE_SELF, &u0);
	double t0 = now_s();

	for (long m = 0; m < msgs; m++) {
		int i = (int)(m % nsubs);

		snprintf(msg, sizeof msg, "s%02d-topic-%06d", i, topics - 1);
		zr_send_bytes(pub, msg, 16, 0);
	}
	long got = 0;

	for (int i = 0; i < nsubs; i++) {
		pthread_join(th[i], NULL);
		got += rx[i].got;
	}
	double dt = now_s() - t0;

	getrusage(RUSAGE_SELF, &u1);
	double cpu = (double)(u1.ru_utime.tv_sec - u0.ru_utime.tv_sec + u1.ru_stime.tv_sec -
	                      u0.ru_stime.tv_sec) +
	             (double)(u1.ru_utime.tv_usec - u0.ru_utime.tv_usec + u1.ru_stime.tv_usec -
	                      u0.ru_stime.tv_usec) /
	                     1e6;

	printf("%d subscribers x %d topics: %ld of %ld messages in %.2f s: %.0f msg/s, "
	       "%.2f CPU s per million\n",
	       nsubs, topics, got, msgs, dt, (double)got / dt, cpu * 1e6 / (double)msgs);
	for (int i = 0; i < nsubs; i++) {
		zr_setsockopt(subs[i], ZR_LINGER, &(int){0}, sizeof(int));
		zr_socket_close(subs[i]);
	}
	zr_setsockopt(pub, ZR_LINGER, &(int){0}, sizeof(int));
	zr_socket_close(pub);
	zr_ctx_free(ctx);
	return got == msgs ? 0 : 1;
}
