#include "metrics/histogram.h"

static int bucket_of(uint64_t us)
{
    if (us < 16) return (int)us;
    int e = 63 - __builtin_clzll(us); /* 2^e <= us */
    int b = 16 + (e - 4) * 8 + (int)((us >> (e - 3)) & 7);
    return b < KIQ_HISTOGRAM_BUCKETS ? b : KIQ_HISTOGRAM_BUCKETS - 1;
}

/* The largest value (µs) bucket b holds. */
static double upper_us(int b)
{
    if (b < 16) return b;
    int e = (b - 16) / 8 + 4, sub = (b - 16) % 8;
    return (double)(1ULL << e) + (double)(sub + 1) * (double)(1ULL << (e - 3)) - 1;
}

static int64_t window_of(int64_t now_ms) { return (now_ms > 0 ? now_ms : 0) / KIQ_HISTOGRAM_WINDOW_MS + 1; }

void kiq_histogram_record_ns(kiq_histogram_t *h, int64_t ns, int64_t now_ms)
{
    uint64_t us = ns > 0 ? (uint64_t)ns / 1000 : 0;
    int64_t w = window_of(now_ms);
    int slot = (int)(w % KIQ_HISTOGRAM_WINDOWS);
    int_fast64_t held = atomic_load_explicit(&h->window[slot], memory_order_acquire);
    /* the first to see a new window empties the slot; an older one (a
     * thread late with its clock) counts in what the slot holds now */
    if (held < w && atomic_compare_exchange_strong(&h->window[slot], &held, w))
        for (int b = 0; b < KIQ_HISTOGRAM_BUCKETS; b++) atomic_store_explicit(&h->n[slot][b], 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->n[slot][bucket_of(us)], 1, memory_order_relaxed);
}

double kiq_histogram_quantile_ms(kiq_histogram_t *h, double q, int64_t now_ms, uint64_t *count)
{
    uint64_t n[KIQ_HISTOGRAM_BUCKETS] = {0}, total = 0;
    int64_t w = window_of(now_ms);
    for (int s = 0; s < KIQ_HISTOGRAM_WINDOWS; s++) {
        int_fast64_t held = atomic_load_explicit(&h->window[s], memory_order_acquire);
        if (held <= w - KIQ_HISTOGRAM_WINDOWS || held > w) continue;
        for (int b = 0; b < KIQ_HISTOGRAM_BUCKETS; b++) {
            uint64_t v = atomic_load_explicit(&h->n[s][b], memory_order_relaxed);
            n[b] += v;
            total += v;
        }
    }
    *count = total;
    if (total == 0) return 0;
    uint64_t want = (uint64_t)(q * (double)total + 0.999999);
    if (want < 1) want = 1;
    uint64_t seen = 0;
    for (int b = 0; b < KIQ_HISTOGRAM_BUCKETS; b++) {
        seen += n[b];
        if (seen >= want) return upper_us(b) / 1000.0;
    }
    return upper_us(KIQ_HISTOGRAM_BUCKETS - 1) / 1000.0;
}
