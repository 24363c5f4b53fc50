#include "core/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char error_slot[512];

/* Formats through a scratch buffer: a caller may pass the slot's own text
 * (kiq_error_get()) as an argument, to add context to a lower error. */
int kiq_error_setv(const char *fmt, va_list ap)
{
    char tmp[sizeof error_slot];
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    memcpy(error_slot, tmp, sizeof tmp);
    return -1;
}

int kiq_error_set(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kiq_error_setv(fmt, ap);
    va_end(ap);
    return -1;
}

int kiq_error_errno(const char *fmt, ...)
{
    int saved = errno;
    va_list ap;
    va_start(ap, fmt);
    kiq_error_setv(fmt, ap);
    va_end(ap);
    size_t n = strlen(error_slot);
    snprintf(error_slot + n, sizeof error_slot - n, ": %s", strerror(saved));
    errno = saved;
    return -1;
}

const char *kiq_error_get(void) { return error_slot; }

void kiq_error_clear(void) { error_slot[0] = '\0'; }
