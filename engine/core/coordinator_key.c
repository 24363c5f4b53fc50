/* A coordinator key's partition; see coordinator_key.h. */
#include "core/coordinator_key.h"

/* The next UTF-16 code unit of Java's String for UTF-8 s, from *i; a code
 * point above U+FFFF gives its high surrogate and leaves *pending the low. */
static uint32_t next_unit(const uint8_t *s, size_t len, size_t *i, uint32_t *pending)
{
    if (*pending) {
        uint32_t u = *pending;
        *pending = 0;
        return u;
    }
    uint8_t c = s[(*i)++];
    int extra = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
    if (extra < 0) return 0xfffd;
    uint32_t cp = extra == 0 ? c : c & (0x3f >> extra);
    for (int k = 0; k < extra; k++) {
        if (*i >= len || (s[*i] & 0xc0) != 0x80) return 0xfffd;
        cp = cp << 6 | (s[(*i)++] & 0x3f);
    }
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0xfffd;
    if (cp < 0x10000) return cp;
    cp -= 0x10000;
    *pending = 0xdc00 | (cp & 0x3ff);
    return 0xd800 | (cp >> 10);
}

int32_t kiq_coordinator_partition(const char *key, size_t len, int32_t partitions)
{
    uint32_t h = 0, pending = 0;
    size_t i = 0;
    while (i < len || pending) h = 31 * h + next_unit((const uint8_t *)key, len, &i, &pending);
    int32_t v = (int32_t)h;
    int32_t abs = v == INT32_MIN ? 0 : v < 0 ? -v : v; /* Kafka's Utils.abs */
    return partitions > 0 ? abs % partitions : 0;
}
