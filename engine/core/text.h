/* Bounded copies of text into fixed buffers: what snprintf(dst, cap, "%s",
 * src) does, without its formatting machinery (the request path copies a
 * peer's address, principal and client id for every request). */
#ifndef KIQ_CORE_TEXT_H
#define KIQ_CORE_TEXT_H

#include <stddef.h>
#include <string.h>

/* len bytes of src, cut to cap - 1, and a NUL (cap > 0). */
static inline void kiq_text_copy(char *dst, size_t cap, const char *src, size_t len)
{
    if (len >= cap) len = cap - 1;
    if (len) memcpy(dst, src, len);
    dst[len] = '\0';
}

/* The C string src, cut to cap - 1 bytes (cap > 0). */
static inline void kiq_text_copy_cstr(char *dst, size_t cap, const char *src)
{
    kiq_text_copy(dst, cap, src, strnlen(src, cap));
}

#endif
