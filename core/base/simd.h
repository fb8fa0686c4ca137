/* The kernel sets and the one switch that chooses among them. Every kernel choice of the core
 * (float32, int8 and bf16 products, attention, the element-wise row kernels, vector math, the
 * search scans) asks emb_simd(): the best set this CPU runs, or a lower one that EMBED_SIMD names
 * ("avx512", "avx2", "generic"), so that every set can be tested on a machine that has the
 * highest. A set never changes within a process (read once). */
#ifndef EMBED_SIMD_H
#define EMBED_SIMD_H

/* Lowest first: a set may use what the ones below it use. */
typedef enum { EMB_SIMD_GENERIC, EMB_SIMD_AVX2, EMB_SIMD_AVX512 } emb_simd_set;

/* The set in use: the CPU's best, capped by EMBED_SIMD. */
emb_simd_set emb_simd(void);
/* The best set this CPU runs (x86-64: AVX2 means AVX2 + FMA + F16C + POPCNT; AVX-512 adds F, BW,
 * VL and DQ), whatever EMBED_SIMD says. */
emb_simd_set emb_simd_cpu(void);
/* "avx512", "avx2", "generic". */
const char *emb_simd_name(emb_simd_set s);
/* EMBED_SIMD when it names no set ("" when unset or understood), for embed_debug() to show. */
const char *emb_simd_unknown_request(void);

/* Dispatch for kernels written once in plain C and compiled for each set: EMB_SIMD_DEFINE(ret,
 * name, (params), (args)) followed by the body in braces defines `ret name(params)`, which runs
 * the body compiled for AVX-512F, for AVX2 + FMA or for baseline x86-64 as emb_simd() says (the
 * body is one always-inline function inlined into each). Elsewhere (other processors, sanitizer
 * builds of clang) the body is compiled once. EMB_SIMD_DEFINE_STATIC defines a static one. */
#if defined(__GNUC__) && defined(__x86_64__)
#define EMB_SIMD_DEFINE_IN(storage, ret, name, params, args)                                                      \
    static inline __attribute__((always_inline)) ret name##_body params;                                          \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"))) static ret name##_avx512 params { \
        return name##_body args;                                                                                  \
    }                                                                                                             \
    __attribute__((target("avx2,fma,f16c"))) static ret name##_avx2 params { return name##_body args; }           \
    static ret name##_generic params { return name##_body args; }                                                 \
    storage ret name params {                                                                                     \
        emb_simd_set s_ = emb_simd();                                                                             \
        return s_ == EMB_SIMD_AVX512 ? name##_avx512 args                                                         \
               : s_ == EMB_SIMD_AVX2 ? name##_avx2 args                                                           \
                                     : name##_generic args;                                                       \
    }                                                                                                             \
    static inline __attribute__((always_inline)) ret name##_body params
#else
#define EMB_SIMD_DEFINE_IN(storage, ret, name, params, args) storage ret name params
#endif
#define EMB_SIMD_DEFINE(ret, name, params, args) EMB_SIMD_DEFINE_IN(, ret, name, params, args)
#define EMB_SIMD_DEFINE_STATIC(ret, name, params, args) EMB_SIMD_DEFINE_IN(static, ret, name, params, args)

#endif
