#include "config/dynamic_configs.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "proto/errors.h"

void kiq_dynamic_configs_clear(kiq_dynamic_configs_t *c)
{
    for (int i = 0; i < KIQ_CFG__COUNT; i++) {
        free(c->value[i]);
        c->value[i] = NULL;
    }
}

int kiq_dynamic_config_find(const char *name, int len)
{
    char n[256];
    if (!name || len <= 0 || len >= (int)sizeof n) return -1;
    memcpy(n, name, (size_t)len);
    n[len] = '\0';
    int id = kiq_config_find(n);
    return id >= 0 && kiq_config_dynamic(id) ? id : -1;
}

int kiq_dynamic_configs_set(kiq_dynamic_configs_t *c, const char *name, int len, const char *value, int value_len)
{
    int id = kiq_dynamic_config_find(name, len);
    if (id < 0) {
        /* Kafka's words; unknown names are refused the same way */
        kiq_error_set("Cannot update these configs dynamically: [%.*s]", len > 0 ? len : 0, name ? name : "");
        return KIQ_ERR_INVALID_REQUEST;
    }
    char *copy = NULL;
    if (value) {
        if (!(copy = strndup(value, (size_t)value_len))) return kiq_error_set("out of memory"), KIQ_ERR_INVALID_CONFIG;
        if (kiq_config_check(id, copy) != 0) {
            free(copy);
            return KIQ_ERR_INVALID_CONFIG;
        }
    }
    free(c->value[id]);
    c->value[id] = copy;
    return KIQ_ERR_NONE;
}
