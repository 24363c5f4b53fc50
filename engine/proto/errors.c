#include "proto/errors.h"

#include <stdint.h>
#include <strings.h>

const char *kiq_error_name(int code)
{
    switch (code) {
#define KIQ_ERR_NAME(name, value) \
    case value: return #name;
        KIQ_KAFKA_ERRORS(KIQ_ERR_NAME)
#undef KIQ_ERR_NAME
    default: return "UNKNOWN";
    }
}

int kiq_error_code_of(const char *name)
{
#define KIQ_ERR_CODE(n, value) \
    if (strcasecmp(name, #n) == 0) return value;
    KIQ_KAFKA_ERRORS(KIQ_ERR_CODE)
#undef KIQ_ERR_CODE
    return INT32_MIN;
}
