#include "support/corpus.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

/* what scripts/corpus/extract.py writes first */
#define INDEX_HEADER "file\tapi_key\tapi_version\tcorrelation_id\tbytes\tclient\n"

const char *kiq_test_corpus_dir(void)
{
    const char *d = getenv("KIQ_CORPUS_DIR");
    return d && *d ? d : "tests/corpus";
}

int kiq_test_corpus_each(void (*fn)(const kiq_test_frame_t *f, void *ctx), void *ctx)
{
    char path[1024], line[1024];
    snprintf(path, sizeof path, "%s/index.tsv", kiq_test_corpus_dir());
    FILE *idx = fopen(path, "r");
    if (!idx) fail_msg("cannot open %s", path);
    if (!fgets(line, sizeof line, idx) || strcmp(line, INDEX_HEADER) != 0)
        fail_msg("%s: the first line is not the header " INDEX_HEADER, path);
    int frames = 0;
    while (fgets(line, sizeof line, idx)) {
        kiq_test_frame_t f;
        char end;
        if (sscanf(line, "%255s %d %d %d %zu %63s %c", f.file, &f.key, &f.version, &f.correlation_id, &f.bytes,
                   f.client, &end) != 6)
            fail_msg("%s: malformed line %d: %s", path, frames + 2, line);
        fn(&f, ctx);
        frames++;
    }
    fclose(idx);
    return frames;
}

uint8_t *kiq_test_corpus_read(const kiq_test_frame_t *f)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", kiq_test_corpus_dir(), f->file);
    FILE *in = fopen(path, "rb");
    if (!in) fail_msg("cannot open %s", path);
    uint8_t *buf = malloc(f->bytes + 1);
    assert_non_null(buf);
    size_t n = fread(buf, 1, f->bytes + 1, in);
    fclose(in);
    if (n != f->bytes) fail_msg("%s: %zu bytes, the index says %zu", path, n, f->bytes);
    return buf;
}

static int bin_files(const char *path)
{
    DIR *d = opendir(path);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        n += len > 4 && strcmp(e->d_name + len - 4, ".bin") == 0;
    }
    closedir(d);
    return n;
}

int kiq_test_corpus_files(void)
{
    DIR *d = opendir(kiq_test_corpus_dir());
    if (!d) fail_msg("cannot open %s", kiq_test_corpus_dir());
    int n = 0;
    struct dirent *e;
    char sub[1024];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(sub, sizeof sub, "%s/%s", kiq_test_corpus_dir(), e->d_name);
        n += bin_files(sub);
    }
    closedir(d);
    return n;
}
