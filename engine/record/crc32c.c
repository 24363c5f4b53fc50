#include "record/crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
#define HAVE_SSE42_PATH 1
#endif

/* Reflected polynomial of CRC-32C. */
#define POLY 0x82F63B78u

/* Slicing-by-8 tables, filled once; table[k][b] is the CRC of byte b followed
 * by k zero bytes, which lets eight input bytes be folded per step. */
static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int i = 0; i < 8; i++) c = (c >> 1) ^ (POLY & (0u - (c & 1)));
        table[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; b++)
        for (int k = 1; k < 8; k++) table[k][b] = (table[k - 1][b] >> 8) ^ table[0][table[k - 1][b] & 0xff];
}

uint32_t kiq_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&table_once, table_init);
    const uint8_t *p = buf;
    uint32_t c = ~crc;
    while (len && ((uintptr_t)p & 7)) {
        c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
        len--;
    }
    while (len >= 8) {
        uint32_t lo, hi;
        /* The reflected CRC takes bytes in little-endian order; memcpy keeps
         * the unaligned-safe loads legal under strict aliasing. */
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        lo = __builtin_bswap32(lo);
        hi = __builtin_bswap32(hi);
#endif
        lo ^= c;
        c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
            table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
            table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--) c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
    return ~c;
}

/* The CRC register is linear in GF(2): running it over B from state s
 * gives shift(s, |B|) ^ (B's run from 0), where shifting by n bytes is
 * multiplying by x^(8n) modulo the polynomial. That lets three runs over
 * three blocks go at once and be joined after. */

#ifdef HAVE_SSE42_PATH
/* a * b modulo the polynomial, both reflected (bit 31 is x^0). */
static uint32_t mul_mod(uint32_t a, uint32_t b)
{
    uint32_t r = 0;
    for (uint32_t bit = 1u << 31; bit && a; bit >>= 1) {
        if (a & bit) {
            r ^= b;
            a ^= bit;
        }
        b = (b >> 1) ^ (POLY & (0u - (b & 1)));
    }
    return r;
}

/* x^(8 n) modulo the polynomial, reflected. */
static uint32_t x_pow_bytes(size_t n)
{
    uint32_t r = 1u << 31, sq = 1u << 23; /* 1 and x^8 */
    for (; n; n >>= 1) {
        if (n & 1) r = mul_mod(r, sq);
        sq = mul_mod(sq, sq);
    }
    return r;
}

/* Multiplying by a fixed x^(8 n) is linear in the CRC, so it goes a byte
 * at a time through four tables (t[i][b] = b's product placed at byte i)
 * instead of mul_mod's 32 steps, which cost more than the run they join
 * for blocks of a few hundred bytes. */
typedef struct shifter {
    uint32_t t[4][256];
} shifter_t;

static void shifter_init(shifter_t *s, uint32_t k)
{
    for (int i = 0; i < 4; i++)
        for (uint32_t b = 0; b < 256; b++) s->t[i][b] = mul_mod(b << (8 * i), k);
}

static uint32_t shifted(const shifter_t *s, uint32_t c)
{
    return s->t[0][c & 0xff] ^ s->t[1][(c >> 8) & 0xff] ^ s->t[2][(c >> 16) & 0xff] ^ s->t[3][c >> 24];
}

/* The blocks of the three-way runs: long ones for big batches, short ones
 * for the rest of them; below three short blocks, one run. */
#define LONG_BLOCK 8192
#define SHORT_BLOCK 256
static shifter_t shift_long[2], shift_short[2]; /* by x^(8 L), x^(16 L) */
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

static void shift_init(void)
{
    shifter_init(&shift_long[0], x_pow_bytes(LONG_BLOCK));
    shifter_init(&shift_long[1], x_pow_bytes(2 * LONG_BLOCK));
    shifter_init(&shift_short[0], x_pow_bytes(SHORT_BLOCK));
    shifter_init(&shift_short[1], x_pow_bytes(2 * SHORT_BLOCK));
}

__attribute__((target("sse4.2"))) static uint64_t run_hw(uint64_t c, const uint8_t *p, size_t len)
{
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = _mm_crc32_u64(c, v);
    }
    while (len--) c = _mm_crc32_u8((uint32_t)c, *p++);
    return c;
}

/* Three runs over consecutive blocks of block bytes (a multiple of 8),
 * joined; as many rounds as fit. */
__attribute__((target("sse4.2"))) static uint64_t three_way(uint64_t c, const uint8_t **pp, size_t *lenp, size_t block,
                                                            const shifter_t shift[2])
{
    const uint8_t *p = *pp;
    size_t len = *lenp;
    while (len >= 3 * block) {
        uint64_t a = c, b = 0, d = 0;
        for (size_t i = 0; i < block; i += 8) {
            uint64_t va, vb, vd;
            memcpy(&va, p + i, 8);
            memcpy(&vb, p + block + i, 8);
            memcpy(&vd, p + 2 * block + i, 8);
            a = _mm_crc32_u64(a, va);
            b = _mm_crc32_u64(b, vb);
            d = _mm_crc32_u64(d, vd);
        }
        c = shifted(&shift[1], (uint32_t)a) ^ shifted(&shift[0], (uint32_t)b) ^ (uint32_t)d;
        p += 3 * block;
        len -= 3 * block;
    }
    *pp = p;
    *lenp = len;
    return c;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    uint64_t c = ~crc;
    while (len && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        len--;
    }
    if (len >= 3 * SHORT_BLOCK) {
        pthread_once(&shift_once, shift_init);
        c = three_way(c, &p, &len, LONG_BLOCK, shift_long);
        c = three_way(c, &p, &len, SHORT_BLOCK, shift_short);
    }
    return ~(uint32_t)run_hw(c, p, len);
}
#endif

uint32_t kiq_crc32c(uint32_t crc, const void *buf, size_t len)
{
#ifdef HAVE_SSE42_PATH
    /* __builtin_cpu_supports reads a flag libgcc fills before main. */
    if (__builtin_cpu_supports("sse4.2")) return crc32c_hw(crc, buf, len);
#endif
    return kiq_crc32c_sw(crc, buf, len);
}
