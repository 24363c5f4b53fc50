/* The live page's files, embedded by the build from http/page/ (see the
 * Makefile's PAGE_ rules): served as they are, no file system needed. */
#include <string.h>

#include "http/views.h"

extern const char kiq_page_index_html[], kiq_page_live_css[], kiq_page_live_js[], kiq_page_picture_js[],
    kiq_page_waterfall_js[], kiq_page_browse_js[];
extern const size_t kiq_page_index_html_len, kiq_page_live_css_len, kiq_page_live_js_len, kiq_page_picture_js_len,
    kiq_page_waterfall_js_len, kiq_page_browse_js_len;

static const kiq_http_asset_t assets[] = {
    {"/", "text/html; charset=utf-8", kiq_page_index_html, &kiq_page_index_html_len},
    {"/live.css", "text/css; charset=utf-8", kiq_page_live_css, &kiq_page_live_css_len},
    {"/live.js", "text/javascript; charset=utf-8", kiq_page_live_js, &kiq_page_live_js_len},
    {"/picture.js", "text/javascript; charset=utf-8", kiq_page_picture_js, &kiq_page_picture_js_len},
    {"/waterfall.js", "text/javascript; charset=utf-8", kiq_page_waterfall_js, &kiq_page_waterfall_js_len},
    {"/browse.js", "text/javascript; charset=utf-8", kiq_page_browse_js, &kiq_page_browse_js_len},
};

const kiq_http_asset_t *kiq_http_asset(const char *path)
{
    for (size_t i = 0; i < sizeof assets / sizeof assets[0]; i++)
        if (strcmp(assets[i].path, path) == 0) return &assets[i];
    return NULL;
}
