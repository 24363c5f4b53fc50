/* The quorum's voter sets as Kafka writes them in the metadata log
 * (KIP-853): a control batch of a VotersRecord (control type 6), preceded
 * in the bootstrap batch by a KRaftVersionRecord (type 5). Each voter's
 * endpoint is its controller listener. Plain functions of their
 * arguments, any thread. */
#ifndef KIQ_CONTROLLER_QUORUM_VOTERS_H
#define KIQ_CONTROLLER_QUORUM_VOTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/writer.h"
#include "record/batch.h"
#include "raft/raft.h"

#define KIQ_CONTROL_KRAFT_VERSION 5
#define KIQ_CONTROL_KRAFT_VOTERS 6

/* Where one voter listens for the quorum (its first endpoint). */
typedef struct kiq_quorum_endpoint {
    char name[32]; /* the listener's name */
    char host[256];
    int port; /* 0: none known */
} kiq_quorum_endpoint_t;

/* One control batch holding set (eps[i] the endpoint of set->voters[i]),
 * after a KRaftVersionRecord of kraft.version 1 when bootstrap; *count its
 * records. 0, or -1 with the reason. */
int kiq_quorum_voters_batch(const kiq_raft_voter_set_t *set, const kiq_quorum_endpoint_t *eps, bool bootstrap,
                            kiq_wr_t *out, int32_t *count);
/* The VotersRecord of set added to a control batch being built, after a
 * KRaftVersionRecord of kraft.version 1 when version (a bootstrap batch,
 * a snapshot's header batch). 0, or -1 with the reason. */
int kiq_quorum_voters_add(kiq_batch_builder_t *bb, const kiq_raft_voter_set_t *set, const kiq_quorum_endpoint_t *eps,
                          bool version, int64_t now);
/* The voter set a batch writes: 1 with *set and eps (one per voter) when
 * it is a control batch holding a VotersRecord, 0 when it holds none, -1
 * (the reason in the error slot) when it does not decode. */
int kiq_quorum_voters_decode(const uint8_t *batch, size_t len, kiq_raft_voter_set_t *set,
                             kiq_quorum_endpoint_t *eps);

#endif
