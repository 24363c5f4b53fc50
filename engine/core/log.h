/* Logging to stderr, one line per call, safe from any thread (stdio locks
 * the stream per call). The level is process-wide. */
#ifndef KIQ_CORE_LOG_H
#define KIQ_CORE_LOG_H

enum kiq_log_level { KIQ_LOG_ERROR, KIQ_LOG_WARN, KIQ_LOG_INFO, KIQ_LOG_DEBUG };

void kiq_log_set_level(enum kiq_log_level level);
enum kiq_log_level kiq_log_get_level(void);
/* Parses "error", "warn", "info", "debug"; -1 when unknown. */
int kiq_log_level_parse(const char *name);
/* Names the calling thread in log lines (e.g. "processor-1"). */
void kiq_log_thread_name(const char *name);
void kiq_log(enum kiq_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define kiq_log_enabled(lvl) ((lvl) <= kiq_log_get_level())
#define KIQ_ERROR(...) kiq_log(KIQ_LOG_ERROR, __VA_ARGS__)
#define KIQ_WARN(...) kiq_log(KIQ_LOG_WARN, __VA_ARGS__)
#define KIQ_INFO(...) kiq_log(KIQ_LOG_INFO, __VA_ARGS__)
#define KIQ_DEBUG(...) \
    do { if (kiq_log_enabled(KIQ_LOG_DEBUG)) kiq_log(KIQ_LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
