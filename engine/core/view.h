/* A language-neutral way to hand a nested view of the broker's state to
 * whoever shows it: a builder walks the state and calls these, and each
 * boundary makes its own values (JSON objects for /api, Lua tables for
 * b:state()), so what a state holds is assembled once. Inside an object
 * every value has a name; inside an array names are NULL. */
#ifndef KIQ_CORE_VIEW_H
#define KIQ_CORE_VIEW_H

#include <stdbool.h>

typedef struct kiq_view {
    void (*number)(void *ctx, const char *name, double value);
    void (*string)(void *ctx, const char *name, const char *value);
    void (*boolean)(void *ctx, const char *name, bool value);
    /* a nested object (array false) or array, until the matching close */
    void (*open)(void *ctx, const char *name, bool array);
    void (*close)(void *ctx);
    void *ctx;
} kiq_view_t;

#endif
