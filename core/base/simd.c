/* See simd.h. */
#include "base/simd.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static const char *const set_names[] = {"generic", "avx2", "avx512"};

const char *emb_simd_name(emb_simd_set s) {
    return s >= EMB_SIMD_GENERIC && s <= EMB_SIMD_AVX512 ? set_names[s] : "?";
}

emb_simd_set emb_simd_cpu(void) {
#if defined(__GNUC__) && defined(__x86_64__)
    __builtin_cpu_init();
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("popcnt") &&
          __builtin_cpu_supports("avx")))
        return EMB_SIMD_GENERIC;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return EMB_SIMD_AVX512;
    return EMB_SIMD_AVX2;
#else
    return EMB_SIMD_GENERIC;
#endif
}

/* -1: EMBED_SIMD unset or unknown */
static int requested(void) {
    const char *want = getenv("EMBED_SIMD");
    if (!want) return -1;
    for (int s = EMB_SIMD_GENERIC; s <= EMB_SIMD_AVX512; s++)
        if (!strcmp(want, set_names[s])) return s;
    return -1;
}

const char *emb_simd_unknown_request(void) {
    const char *want = getenv("EMBED_SIMD");
    return want && *want && requested() < 0 ? want : "";
}

emb_simd_set emb_simd(void) {
    static atomic_int chosen = -1; /* every thread gets the same answer; computing it twice is harmless */
    int s = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (s < 0) {
        int cpu = (int)emb_simd_cpu(), want = requested();
        s = want >= 0 && want < cpu ? want : cpu;
        atomic_store_explicit(&chosen, s, memory_order_relaxed);
    }
    return (emb_simd_set)s;
}
