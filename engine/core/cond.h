/* Condition variables that time out by the monotonic clock, so a
 * wall-clock jump neither cuts a wait short nor stretches it. Any thread. */
#ifndef KIQ_CORE_COND_H
#define KIQ_CORE_COND_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

void kiq_cond_init_monotonic(pthread_cond_t *c);
/* Waits (mu held) until signalled or the monotonic deadline_ns
 * (kiq_clock_mono_ns) passes: false when it passed, true when woken
 * (perhaps spuriously: check the condition again). */
bool kiq_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *mu, int64_t deadline_ns);
/* The same by the system's monotonic clock (kiq_clock_system_mono_ns):
 * for waits a test's clock jump must neither end nor stretch. */
bool kiq_cond_wait_until_system(pthread_cond_t *c, pthread_mutex_t *mu, int64_t deadline_ns);
/* The same, deadline ms from now (< 0: no deadline). */
bool kiq_cond_wait_ms(pthread_cond_t *c, pthread_mutex_t *mu, int64_t ms);

#endif
