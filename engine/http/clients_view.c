/* /api/clients: the metrics clients pushed (KIP-714), and the summary of
 * a journey's client that /api/journey carries as client_telemetry. */
#include <string.h>

#include "http/views.h"
#include "server/client_telemetry.h"

typedef struct clients_args {
    kiq_broker_t *b;
    const char *client_id;
    bool cut, points;
} clients_args_t;

static int build_clients(void *arg, const kiq_view_t *v)
{
    const clients_args_t *a = arg;
    v->open(v->ctx, "clients", true);
    int rc = kiq_client_telemetry_view(a->b->telemetry, a->client_id, a->cut, a->points, v);
    v->close(v->ctx);
    return rc;
}

void kiq_http_clients(kiq_broker_t *b, const char *client_id, kiq_http_view_t *v)
{
    clients_args_t a = {b, client_id && *client_id ? client_id : NULL, false, true};
    json_t *j = kiq_http_json_of(build_clients, &a);
    if (!j) {
        kiq_http_error(v, 500, "out of memory");
        return;
    }
    kiq_http_take_json(v, 200, j);
}

void kiq_http_journey_client(kiq_broker_t *b, const kiq_journey_t *jr, json_t *out)
{
    const char *who = NULL;
    for (int i = 0; i < jr->nstages && !who; i++)
        if (jr->stages[i].point == KIQ_POINT_RECEIVED && jr->stages[i].who[0]) who = jr->stages[i].who;
    if (!who) return;
    /* the stage keeps the client id cut to fit: a longer one matches by its start */
    clients_args_t a = {b, who, strlen(who) == sizeof jr->stages[0].who - 1, false};
    json_t *j = kiq_http_json_of(build_clients, &a);
    json_t *newest = json_array_get(json_object_get(j, "clients"), 0);
    if (newest) json_object_set(out, "client_telemetry", newest);
    json_decref(j);
}
