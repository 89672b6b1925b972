// The synchronisation under PhiCPU's worker pool (Parallel.swift): sequentially consistent
// atomics on plain 32-bit words, a bounded spin, and parking on a futex (Linux; elsewhere a
// sleep-and-recheck loop). Kept in C so the words have stable addresses the kernel can wait on.
#include "CPhiCPU.h"

#include <sched.h>
#include <time.h>
#if defined(__linux__)
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

uint32_t phi_cpu_atomic_load(const uint32_t *word) { return __atomic_load_n(word, __ATOMIC_SEQ_CST); }

void phi_cpu_atomic_store(uint32_t *word, uint32_t value) { __atomic_store_n(word, value, __ATOMIC_SEQ_CST); }

uint32_t phi_cpu_atomic_add(uint32_t *word, uint32_t value) {
    return __atomic_fetch_add(word, value, __ATOMIC_SEQ_CST);
}

int phi_cpu_atomic_exchange_if(uint32_t *word, uint32_t expected, uint32_t desired) {
    return __atomic_compare_exchange_n(word, &expected, desired, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static inline void relax(void) {
#if defined(__x86_64__)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static inline void futex_wait(uint32_t *word, uint32_t value) {
#if defined(__linux__)
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
#else
    (void)word; (void)value;
    struct timespec pause = {0, 50000};
    nanosleep(&pause, NULL);
#endif
}

static inline void futex_wake_all(uint32_t *word) {
#if defined(__linux__)
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#else
    (void)word;
#endif
}

// Spinning past this gives the core to other runnable threads now and then (sched_yield), so a
// waiter does not starve the thread it waits for when there are more threads than cores.
#define POLITE_AFTER_NS 20000u

uint32_t phi_cpu_spin_while_equal(const uint32_t *word, uint32_t value, uint64_t spin_ns) {
    uint64_t start = 0;
    for (;;) {
        for (int i = 0; i < 64; i++) {
            const uint32_t now = __atomic_load_n(word, __ATOMIC_SEQ_CST);
            if (now != value) return now;
            relax();
        }
        const uint64_t t = now_ns();
        if (start == 0) start = t;
        if (t - start >= spin_ns) return value;
        if (t - start >= POLITE_AFTER_NS) sched_yield();
    }
}

void phi_cpu_park_while_equal(uint32_t *word, uint32_t value, uint32_t *sleepers) {
    __atomic_fetch_add(sleepers, 1, __ATOMIC_SEQ_CST);
    // Dekker with phi_cpu_publish / phi_cpu_finish_one: either the waker sees this sleeper and
    // wakes it, or this load (and the futex's own check) sees the new value.
    while (__atomic_load_n(word, __ATOMIC_SEQ_CST) == value) futex_wait(word, value);
    __atomic_fetch_sub(sleepers, 1, __ATOMIC_SEQ_CST);
}

uint32_t phi_cpu_publish(uint32_t *word, const uint32_t *sleepers) {
    const uint32_t next = __atomic_add_fetch(word, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(sleepers, __ATOMIC_SEQ_CST) != 0) futex_wake_all(word);
    return next;
}

void phi_cpu_finish(uint32_t *word, uint32_t count, const uint32_t *sleepers) {
    if (__atomic_sub_fetch(word, count, __ATOMIC_SEQ_CST) == 0 && __atomic_load_n(sleepers, __ATOMIC_SEQ_CST) != 0) {
        futex_wake_all(word);
    }
}

void phi_cpu_wait_until_zero(uint32_t *word, uint32_t *sleepers, uint64_t spin_ns) {
    uint32_t value;
    while ((value = __atomic_load_n(word, __ATOMIC_SEQ_CST)) != 0) {
        if (phi_cpu_spin_while_equal(word, value, spin_ns) == value) phi_cpu_park_while_equal(word, value, sleepers);
    }
}
