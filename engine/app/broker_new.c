/* The composition root: a broker (server/) serving the API table (api/),
 * with its HTTP listener (http/) when its config names one. The one place
 * that knows all three; what include/kafkaiq.h's kiq_broker_new gives. */
#include "api/api.h"
#include "http/http_server.h"
#include "include/kafkaiq.h"
#include "server/broker.h"

kiq_broker_t *kiq_broker_new(const kiq_config_t *config)
{
    kiq_broker_t *b = kiq_broker_create(config, &kiq_api_surface);
    if (b && kiq_http_attach(b) != 0) {
        kiq_broker_free(b);
        return NULL;
    }
    return b;
}
