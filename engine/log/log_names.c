#include "log/log_names.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* Kafka's own limit, which leaves room for "-<partition>" and a suffix in a
 * 255-byte file name. */
#define TOPIC_MAX 249
#define BASE_DIGITS 20

static bool topic_legal(const char *t, size_t len)
{
    if (len == 0 || len > TOPIC_MAX) return false;
    if (strcmp(t, ".") == 0 || strcmp(t, "..") == 0) return false;
    for (size_t i = 0; i < len; i++) {
        char c = t[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

int kiq_log_dir_name(char *buf, size_t n, const char *topic, int32_t partition)
{
    if (!topic || !topic_legal(topic, strlen(topic)))
        return kiq_error_set("illegal topic name '%s'", topic ? topic : "(null)");
    if (partition < 0) return kiq_error_set("negative partition %d", partition);
    int w = snprintf(buf, n, "%s-%" PRId32, topic, partition);
    if (w < 0 || (size_t)w >= n) return kiq_error_set("directory name for %s-%d too long", topic, partition);
    return 0;
}

int kiq_log_dir_parse(const char *name, char *topic, size_t n, int32_t *partition)
{
    const char *dash = strrchr(name, '-');
    if (!dash || dash == name || dash[1] == '\0') return kiq_error_set("'%s' is not <topic>-<partition>", name);
    int64_t p = 0;
    for (const char *c = dash + 1; *c; c++) {
        if (*c < '0' || *c > '9') return kiq_error_set("'%s' has a non-numeric partition", name);
        p = p * 10 + (*c - '0');
        if (p > INT32_MAX) return kiq_error_set("'%s' has a partition out of range", name);
    }
    size_t tlen = (size_t)(dash - name);
    if (tlen >= n) return kiq_error_set("topic in '%s' too long", name);
    memcpy(topic, name, tlen);
    topic[tlen] = '\0';
    if (!topic_legal(topic, tlen)) return kiq_error_set("'%s' has an illegal topic name", name);
    *partition = (int32_t)p;
    return 0;
}

int kiq_log_segment_path(char *buf, size_t n, const char *dir, int64_t base_offset, const char *suffix)
{
    if (base_offset < 0) return kiq_error_set("negative segment base offset %" PRId64, base_offset);
    /* by hand, not snprintf's "%s/%020" PRId64 "%s": a leader names its
     * segment for the observers at every append, and the format cost
     * more than the rest of the announcement */
    size_t dlen = strlen(dir), slen = strlen(suffix);
    if (dlen + 1 + BASE_DIGITS + slen >= n) return kiq_error_set("segment path in %s too long", dir);
    memcpy(buf, dir, dlen);
    buf[dlen] = '/';
    char *digits = buf + dlen + 1;
    uint64_t v = (uint64_t)base_offset;
    for (int i = BASE_DIGITS - 1; i >= 0; i--, v /= 10) digits[i] = (char)('0' + v % 10);
    memcpy(digits + BASE_DIGITS, suffix, slen + 1);
    return 0;
}

bool kiq_log_segment_name_parse(const char *name, const char *suffix, int64_t *base_offset)
{
    if (strlen(name) != BASE_DIGITS + strlen(suffix) || strcmp(name + BASE_DIGITS, suffix) != 0) return false;
    uint64_t v = 0;
    for (int i = 0; i < BASE_DIGITS; i++) {
        if (name[i] < '0' || name[i] > '9') return false;
        uint64_t d = (uint64_t)(name[i] - '0');
        if (v > ((uint64_t)INT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *base_offset = (int64_t)v;
    return true;
}

bool kiq_topic_name_valid(kiq_str_t name, const char **why)
{
    if (!name.p || name.len == 0) return *why = "topic name is empty", false;
    if (name.len > 249) return *why = "topic name is longer than 249 characters", false;
    if ((name.len == 1 && name.p[0] == '.') || (name.len == 2 && !memcmp(name.p, "..", 2)))
        return *why = "topic name cannot be '.' or '..'", false;
    for (int32_t i = 0; i < name.len; i++) {
        char c = name.p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return *why = "topic name has a character outside [a-zA-Z0-9._-]", false;
    }
    return true;
}

int kiq_log_cmp_offsets(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int kiq_log_segment_bases(const char *dir, const char *suffix, int64_t **bases_out, size_t *n_out)
{
    *bases_out = NULL;
    *n_out = 0;
    DIR *d = opendir(dir);
    if (!d) return kiq_error_errno("open directory %s", dir);
    int64_t *bases = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int64_t base;
    while ((e = readdir(d))) {
        if (!kiq_log_segment_name_parse(e->d_name, suffix, &base)) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            int64_t *p = realloc(bases, cap * sizeof *p);
            if (!p) {
                free(bases);
                closedir(d);
                return kiq_error_set("out of memory");
            }
            bases = p;
        }
        bases[n++] = base;
    }
    closedir(d);
    if (n) qsort(bases, n, sizeof *bases, kiq_log_cmp_offsets);
    *bases_out = bases;
    *n_out = n;
    return 0;
}
