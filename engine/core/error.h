/* Per-thread error slot: functions return 0/-1 (or a Kafka error code) and
 * leave the human-readable reason here; only the Lua boundary and the
 * command turn it into text for the user. Thread-local, so no lock. */
#ifndef KIQ_CORE_ERROR_H
#define KIQ_CORE_ERROR_H

#include <stdarg.h>

/* Record the reason for the failure about to be returned. Always returns -1
 * so callers can write `return kiq_error_set(...)`. */
int kiq_error_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int kiq_error_setv(const char *fmt, va_list ap);
/* Like kiq_error_set but appends strerror(errno). */
int kiq_error_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The last reason recorded on this thread ("" when none). */
const char *kiq_error_get(void);
void kiq_error_clear(void);

#endif
