/* The request frames real clients sent to KafkaIQ (tests/corpus, captured
 * by scripts/capture_corpus.sh), as its index.tsv lists them. */
#ifndef KIQ_TEST_CORPUS_H
#define KIQ_TEST_CORPUS_H

#include <stddef.h>
#include <stdint.h>

typedef struct kiq_test_frame {
    char file[256]; /* FOLDER/API-vN-I.bin, relative to the corpus */
    int key, version;
    int32_t correlation_id;
    size_t bytes;
    char client[64]; /* the client library and its version: librdkafka-2.15.1 */
} kiq_test_frame_t;

/* KIQ_CORPUS_DIR, else tests/corpus (the tests run from the repository). */
const char *kiq_test_corpus_dir(void);
/* Calls fn with each frame of the index, in its order; fails the test when
 * the index is missing or a line is malformed. Returns how many. */
int kiq_test_corpus_each(void (*fn)(const kiq_test_frame_t *f, void *ctx), void *ctx);
/* The frame's bytes (malloc'd, f->bytes of them); fails the test when the
 * file is missing or its size is not the index's. */
uint8_t *kiq_test_corpus_read(const kiq_test_frame_t *f);
/* How many .bin files the corpus's folders hold. */
int kiq_test_corpus_files(void);

#endif
