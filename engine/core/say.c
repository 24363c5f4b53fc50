#include "core/say.h"

#include "core/clock.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static atomic_int log_level = KIQ_SAY_INFO;
static _Thread_local char thread_name[24] = "main";
static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};

void kiq_say_set_level(enum kiq_say_level level) { atomic_store(&log_level, level); }

enum kiq_say_level kiq_say_get_level(void) { return atomic_load(&log_level); }

int kiq_say_level_parse(const char *name)
{
    static const char *const lower[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (strcmp(name, lower[i]) == 0) return i;
    return -1;
}

void kiq_say_thread_name(const char *name)
{
    snprintf(thread_name, sizeof thread_name, "%s", name);
    /* and for ps -L, top -H, gdb and /proc/PID/task/TID/comm: at most 15 bytes */
    char comm[16];
    snprintf(comm, sizeof comm, "%s", name);
    pthread_setname_np(pthread_self(), comm);
}

static void say_line(enum kiq_say_level level, const char *suffix, const char *fmt, va_list ap)
{
    char line[2048];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "[%04d-%02d-%02d %02d:%02d:%02d.%03d] %-5s [%s] ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, (int)(tv.tv_usec / 1000), level_names[level], thread_name);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    fprintf(stderr, "%s%s\n", line, suffix);
}

void kiq_say(enum kiq_say_level level, const char *fmt, ...)
{
    if (!kiq_say_enabled(level)) return;
    va_list ap;
    va_start(ap, fmt);
    say_line(level, "", fmt, ap);
    va_end(ap);
}

void kiq_say_limited(kiq_say_limit_t *l, enum kiq_say_level level, const char *fmt, ...)
{
    if (!kiq_say_enabled(level)) return;
    int64_t now = kiq_clock_mono_ns();
    int64_t next = atomic_load_explicit(&l->next_ns, memory_order_relaxed);
    if (now < next || !atomic_compare_exchange_strong(&l->next_ns, &next, now + (int64_t)KIQ_SAY_LIMIT_MS * 1000000)) {
        atomic_fetch_add_explicit(&l->held, 1, memory_order_relaxed);
        return;
    }
    uint64_t held = atomic_exchange_explicit(&l->held, 0, memory_order_relaxed);
    char suffix[96] = "";
    if (held)
        snprintf(suffix, sizeof suffix, " (and %llu more like it in the last %d s)", (unsigned long long)held,
                 KIQ_SAY_LIMIT_MS / 1000);
    va_list ap;
    va_start(ap, fmt);
    say_line(level, suffix, fmt, ap);
    va_end(ap);
}
