#include "support/log_fixture.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "record/batch.h"
#include "record/compression.h"

void kiq_test_remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *e;
    char sub[512];
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        kiq_test_remove_tree(sub);
    }
    closedir(d);
    rmdir(path);
}

void kiq_test_make_batch(kiq_wr_t *w, int n, int64_t ts)
{
    char value[100];
    memset(value, 'x', sizeof value);
    kiq_batch_builder_t b;
    kiq_batch_builder_init(&b, KIQ_CODEC_NONE, ts);
    for (int i = 0; i < n; i++)
        assert_int_equal(kiq_batch_builder_add(&b, "key", 3, value, sizeof value, NULL, 0, ts + i), 0);
    assert_int_equal(kiq_batch_builder_finish(&b, w), 0);
    kiq_batch_builder_free(&b);
}
