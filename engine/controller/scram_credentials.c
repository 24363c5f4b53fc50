/* SCRAM credentials kept sorted in an array; see scram_credentials.h. */
#include "controller/scram_credentials.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

int kiq_scram_mech_of_wire(int8_t id)
{
    return id == KIQ_SCRAM_WIRE_SHA_256 ? KIQ_SCRAM_SHA_256 : id == KIQ_SCRAM_WIRE_SHA_512 ? KIQ_SCRAM_SHA_512 : -1;
}

static int cmp(const kiq_scram_entry_t *e, const char *user, size_t len, int8_t mechanism)
{
    size_t el = strlen(e->user);
    int c = memcmp(e->user, user, el < len ? el : len);
    if (c == 0) c = el < len ? -1 : el > len ? 1 : 0;
    return c ? c : e->mechanism - mechanism;
}

/* The index of the entry, or where it would go (*found false). */
static size_t find(const kiq_scram_store_t *s, const char *user, size_t len, int8_t mechanism, bool *found)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = cmp(&s->entries[mid], user, len, mechanism);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    *found = false;
    return lo;
}

void kiq_scram_store_clear(kiq_scram_store_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->entries[i].user);
        OPENSSL_cleanse(&s->entries[i].cred, sizeof s->entries[i].cred);
    }
    free(s->entries);
    *s = (kiq_scram_store_t){0};
}

int kiq_scram_store_put(kiq_scram_store_t *s, const char *user, size_t len, int8_t mechanism,
                        const kiq_scram_credential_t *cred)
{
    bool found;
    size_t at = find(s, user, len, mechanism, &found);
    if (found) {
        s->entries[at].cred = *cred;
        return 0;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        kiq_scram_entry_t *more = realloc(s->entries, cap * sizeof *more);
        if (!more) return -1;
        s->entries = more;
        s->cap = cap;
    }
    char *name = strndup(user, len);
    if (!name) return -1;
    memmove(&s->entries[at + 1], &s->entries[at], (s->n - at) * sizeof *s->entries);
    s->entries[at] = (kiq_scram_entry_t){name, mechanism, *cred};
    s->n++;
    return 0;
}

int kiq_scram_store_remove(kiq_scram_store_t *s, const char *user, size_t len, int8_t mechanism)
{
    bool found;
    size_t at = find(s, user, len, mechanism, &found);
    if (!found) return 1;
    free(s->entries[at].user);
    memmove(&s->entries[at], &s->entries[at + 1], (s->n - at - 1) * sizeof *s->entries);
    s->n--;
    return 0;
}

const kiq_scram_entry_t *kiq_scram_store_get(const kiq_scram_store_t *s, const char *user, size_t len,
                                             int8_t mechanism)
{
    bool found;
    size_t at = find(s, user, len, mechanism, &found);
    return found ? &s->entries[at] : NULL;
}
