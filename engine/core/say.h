/* Logging to stderr, one line per call, safe from any thread (stdio locks
 * the stream per call). The level is process-wide. */
#ifndef KIQ_CORE_SAY_H
#define KIQ_CORE_SAY_H

#include <stdint.h>

enum kiq_say_level { KIQ_SAY_ERROR, KIQ_SAY_WARN, KIQ_SAY_INFO, KIQ_SAY_DEBUG };

void kiq_say_set_level(enum kiq_say_level level);
enum kiq_say_level kiq_say_get_level(void);
/* Parses "error", "warn", "info", "debug"; -1 when unknown. */
int kiq_say_level_parse(const char *name);
/* Names the calling thread in log lines (e.g. "processor-1") and to the
 * system (its first 15 bytes). */
void kiq_say_thread_name(const char *name);
void kiq_say(enum kiq_say_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A line that may repeat as fast as a peer can make it (one per malformed
 * frame, refused connection, failed append): said at most once per
 * KIQ_SAY_LIMIT_MS from each call site, with how many were held back
 * since. Any thread. */
#define KIQ_SAY_LIMIT_MS 10000
typedef struct kiq_say_limit {
    _Atomic int64_t next_ns;
    _Atomic uint64_t held;
} kiq_say_limit_t;
void kiq_say_limited(kiq_say_limit_t *l, enum kiq_say_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define kiq_say_enabled(lvl) ((lvl) <= kiq_say_get_level())
#define KIQ_ERROR(...) kiq_say(KIQ_SAY_ERROR, __VA_ARGS__)
#define KIQ_WARN(...) kiq_say(KIQ_SAY_WARN, __VA_ARGS__)
#define KIQ_INFO(...) kiq_say(KIQ_SAY_INFO, __VA_ARGS__)
#define KIQ_SAY_LIMITED_(level, ...)                              \
    do {                                                          \
        static kiq_say_limit_t kiq_say_limit_;                    \
        kiq_say_limited(&kiq_say_limit_, level, __VA_ARGS__);     \
    } while (0)
#define KIQ_WARN_LIMITED(...) KIQ_SAY_LIMITED_(KIQ_SAY_WARN, __VA_ARGS__)
#define KIQ_ERROR_LIMITED(...) KIQ_SAY_LIMITED_(KIQ_SAY_ERROR, __VA_ARGS__)
#define KIQ_DEBUG(...) \
    do { if (kiq_say_enabled(KIQ_SAY_DEBUG)) kiq_say(KIQ_SAY_DEBUG, __VA_ARGS__); } while (0)

#endif
