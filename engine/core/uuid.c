#include "core/uuid.h"

#include <string.h>
#include <sys/random.h>

#include "core/error.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int kiq_uuid_random(kiq_uuid_t *u)
{
    do {
        if (getrandom(u->b, sizeof u->b, 0) != (ssize_t)sizeof u->b)
            return kiq_error_errno("getrandom");
        u->b[6] = (uint8_t)((u->b[6] & 0x0f) | 0x40);
        u->b[8] = (uint8_t)((u->b[8] & 0x3f) | 0x80);
        /* Kafka reserves the all-zero id and ids whose text starts with '-' */
    } while (kiq_uuid_is_zero(u) || (u->b[0] >> 2) == 62);
    return 0;
}

void kiq_uuid_to_base64(const kiq_uuid_t *u, char *out)
{
    uint32_t acc = 0;
    int bits = 0, n = 0;
    for (int i = 0; i < 16; i++) {
        acc = acc << 8 | u->b[i];
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out[n++] = alphabet[(acc >> bits) & 63];
        }
    }
    out[n++] = alphabet[(acc << (6 - bits)) & 63];
    out[n] = '\0';
}

int kiq_uuid_from_base64(const char *s, kiq_uuid_t *u)
{
    if (strlen(s) != 22) return kiq_error_set("uuid '%s' is not 22 characters", s);
    uint32_t acc = 0;
    int bits = 0, n = 0;
    for (int i = 0; i < 22; i++) {
        const char *p = strchr(alphabet, s[i]);
        if (!p || !s[i]) return kiq_error_set("uuid '%s' is not base64", s);
        acc = acc << 6 | (uint32_t)(p - alphabet);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (n < 16) u->b[n++] = (uint8_t)(acc >> bits);
        }
    }
    return 0;
}
