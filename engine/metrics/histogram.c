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

void kiq_histogram_record_ns(kiq_histogram_t *h, int64_t ns)
{
    uint64_t us = ns > 0 ? (uint64_t)ns / 1000 : 0;
    atomic_fetch_add_explicit(&h->n[bucket_of(us)], 1, memory_order_relaxed);
}

double kiq_histogram_quantile_ms(kiq_histogram_t *h, double q, uint64_t *count)
{
    uint64_t n[KIQ_HISTOGRAM_BUCKETS], total = 0;
    for (int b = 0; b < KIQ_HISTOGRAM_BUCKETS; b++) total += n[b] = atomic_load_explicit(&h->n[b], memory_order_relaxed);
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
