#include "proto/errors.h"

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
