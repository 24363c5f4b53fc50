/* Kafka UUIDs (topic ids, cluster ids): random v4, shown as URL-safe base64
 * without padding (22 characters), as Kafka prints them. Any thread. */
#ifndef KIQ_CORE_UUID_H
#define KIQ_CORE_UUID_H

#include <stdbool.h>
#include <stdint.h>

typedef struct kiq_uuid {
    uint8_t b[16];
} kiq_uuid_t;

static inline bool kiq_uuid_is_zero(const kiq_uuid_t *u)
{
    for (int i = 0; i < 16; i++)
        if (u->b[i]) return false;
    return true;
}

int kiq_uuid_random(kiq_uuid_t *u);
/* Writes 22 characters and a NUL into out (at least 23 bytes). */
void kiq_uuid_to_base64(const kiq_uuid_t *u, char *out);
int kiq_uuid_from_base64(const char *s, kiq_uuid_t *u);

#endif
