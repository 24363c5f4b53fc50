/* CRC-32C against published vectors (RFC 3720 B.4 and the usual check
 * value), chained calls, and every length and alignment against a
 * bit-at-a-time reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "record/crc32c.h"

/* The definition, one bit at a time: slow but obviously right. */
static uint32_t crc_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
    crc = ~crc;
    while (len--) {
        crc ^= *p++;
        for (int i = 0; i < 8; i++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
    }
    return ~crc;
}

static void check_both(const void *buf, size_t len, uint32_t want)
{
    assert_int_equal(kiq_crc32c(0, buf, len), want);
    assert_int_equal(crc_bitwise(0, buf, len), want);
}

static void test_check_value(void **state)
{
    (void)state;
    check_both("123456789", 9, 0xE3069283u);
    check_both("", 0, 0);
    check_both("a", 1, 0xC1D04330u);
}

static void test_rfc3720_vectors(void **state)
{
    (void)state;
    uint8_t b[48];
    memset(b, 0, 32);
    check_both(b, 32, 0x8A9136AAu);
    memset(b, 0xff, 32);
    check_both(b, 32, 0x62A8AB43u);
    for (int i = 0; i < 32; i++) b[i] = (uint8_t)i;
    check_both(b, 32, 0x46DD794Eu);
    for (int i = 0; i < 32; i++) b[i] = (uint8_t)(31 - i);
    check_both(b, 32, 0x113FDB5Cu);
    /* iSCSI SCSI Read (10) command PDU */
    static const uint8_t pdu[48] = {
        0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
        0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    };
    check_both(pdu, sizeof pdu, 0xD9963A56u);
}

static void test_chained(void **state)
{
    (void)state;
    const char *s = "123456789";
    for (size_t cut = 0; cut <= 9; cut++) {
        assert_int_equal(kiq_crc32c(kiq_crc32c(0, s, cut), s + cut, 9 - cut), 0xE3069283u);
    }
    /* three pieces of odd lengths */
    uint8_t big[300];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (uint8_t)(i * 7 + 3);
    uint32_t whole = crc_bitwise(0, big, sizeof big);
    uint32_t c = kiq_crc32c(0, big, 13);
    c = kiq_crc32c(c, big + 13, 200);
    c = kiq_crc32c(c, big + 213, sizeof big - 213);
    assert_int_equal(c, whole);
}

/* Long lengths, near the sizes folding code works in, at odd alignments
 * and chained from a nonzero CRC. */
static void test_long_runs(void **state)
{
    (void)state;
    static uint8_t buf[3 * 8192 * 2 + 64];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    const size_t lens[] = {767, 768, 769, 775, 776, 1536, 1543, 24575, 24576, 24577, 24576 + 768, 49152, 49159};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        for (size_t align = 0; align < 4; align++) {
            uint32_t want = crc_bitwise(0, buf + align, lens[i]);
            assert_int_equal(kiq_crc32c(0, buf + align, lens[i]), want);
            uint32_t head = kiq_crc32c(0, buf + align, 5);
            assert_int_equal(kiq_crc32c(head, buf + align + 5, lens[i] - 5), want);
        }
}

/* Every alignment and every short length: the head and tail cases. */
static void test_short_runs(void **state)
{
    (void)state;
    static uint8_t buf[4096 + 16];
    uint32_t x = 0x12345678;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    for (size_t align = 0; align < 8; align++) {
        for (size_t len = 0; len < 80; len++) {
            uint32_t want = crc_bitwise(0, buf + align, len);
            assert_int_equal(kiq_crc32c(0, buf + align, len), want);
        }
        uint32_t want = crc_bitwise(0, buf + align, 4096);
        assert_int_equal(kiq_crc32c(0, buf + align, 4096), want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_value),
        cmocka_unit_test(test_rfc3720_vectors),
        cmocka_unit_test(test_chained),
        cmocka_unit_test(test_short_runs),
        cmocka_unit_test(test_long_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
