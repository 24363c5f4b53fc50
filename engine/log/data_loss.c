/* The data loss record of a partition; see data_loss.h. */
#include "log/data_loss.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "log/file_io.h"

static int marker_path(char *path, size_t n, const char *partition_dir)
{
    if ((size_t)snprintf(path, n, "%s/" KIQ_DATA_LOSS_FILE, partition_dir) >= n)
        return kiq_error_set("%s: path too long", partition_dir);
    return 0;
}

/* One line into *e; a line that does not parse is kept whole as why. */
static void parse_line(char *line, kiq_data_loss_t *e)
{
    line[strcspn(line, "\n")] = '\0';
    long long from, to, at;
    int used = 0;
    if (sscanf(line, "%lld %lld %lld %n", &from, &to, &at, &used) == 3 && used > 0) {
        *e = (kiq_data_loss_t){.from = from, .to = to, .at_ms = at};
        snprintf(e->why, sizeof e->why, "%.255s", line + used);
    } else {
        *e = (kiq_data_loss_t){.from = -1, .to = -1, .at_ms = -1};
        snprintf(e->why, sizeof e->why, "%.255s", line);
    }
}

/* Reads the file into *out; *known set when a line names [from, to). 1,
 * 0 when there is none, -1. */
static int load(const char *path, int64_t from, int64_t to, bool *known, kiq_data_loss_t *out)
{
    *out = (kiq_data_loss_t){.from = -1, .to = -1, .at_ms = -1};
    if (known) *known = false;
    FILE *f = fopen(path, "r");
    if (!f) return errno == ENOENT ? 0 : kiq_error_errno("cannot read %s", path);
    char line[512];
    while (fgets(line, sizeof line, f)) {
        kiq_data_loss_t e;
        parse_line(line, &e);
        if (out->findings++ == 0) {
            int n = out->findings;
            *out = e;
            out->findings = n;
        }
        if (known && e.from == from && e.to == to) *known = true;
    }
    bool failed = ferror(f);
    fclose(f);
    if (failed) return kiq_error_set("cannot read %s", path);
    if (out->findings == 0) { /* an empty file is a mark all the same */
        out->findings = 1;
        snprintf(out->why, sizeof out->why, "(%s is empty)", path);
    }
    return 1;
}

int kiq_data_loss_load(const char *partition_dir, kiq_data_loss_t *out)
{
    char path[PATH_MAX];
    if (marker_path(path, sizeof path, partition_dir) < 0) return -1;
    return load(path, -1, -1, NULL, out);
}

int kiq_data_loss_record(const char *partition_dir, int64_t from, int64_t to, const char *why,
                         kiq_data_loss_t *out)
{
    char path[PATH_MAX];
    kiq_data_loss_t cur;
    bool known;
    if (marker_path(path, sizeof path, partition_dir) < 0 || load(path, from, to, &known, &cur) < 0) return -1;
    if (!known) {
        FILE *f = fopen(path, "a");
        if (!f) return kiq_error_errno("cannot write %s", path);
        bool ok = fprintf(f, "%" PRId64 " %" PRId64 " %" PRId64 " %s\n", from, to, kiq_clock_wall_ms(), why) > 0;
        ok = fflush(f) == 0 && ok && fsync(fileno(f)) == 0;
        if (fclose(f) != 0 || !ok) return kiq_error_errno("cannot write %s", path);
        if (cur.findings == 0 && kiq_fsync_dir(partition_dir) < 0) return -1;
        if (load(path, -1, -1, NULL, &cur) < 0) return -1;
    }
    if (out) *out = cur;
    return !known;
}

int kiq_data_loss_acknowledge(const char *partition_dir)
{
    char path[PATH_MAX];
    if (marker_path(path, sizeof path, partition_dir) < 0) return -1;
    if (unlink(path) < 0) return errno == ENOENT ? 1 : kiq_error_errno("cannot remove %s", path);
    return kiq_fsync_dir(partition_dir) < 0 ? -1 : 0;
}

bool kiq_data_loss_marked(const char *partition_dir)
{
    char path[PATH_MAX];
    return marker_path(path, sizeof path, partition_dir) < 0 || access(path, F_OK) == 0 || errno != ENOENT;
}
