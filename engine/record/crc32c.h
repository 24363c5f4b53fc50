/* CRC-32C (Castagnoli), the checksum of RecordBatch v2. Pure functions,
 * callable from any thread. */
#ifndef KIQ_RECORD_CRC32C_H
#define KIQ_RECORD_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extends `crc` (0 to start) over buf[0..len); chaining calls over pieces
 * gives the CRC of the whole. */
uint32_t kiq_crc32c(uint32_t crc, const void *buf, size_t len);

#endif
