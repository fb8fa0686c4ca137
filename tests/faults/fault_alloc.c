/* The counting allocator (see fault_alloc.h). The wrapped functions are what nm lists as
 * called by core/ and ext/ objects; frees pass through untouched. */
#include "fault_alloc.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <execinfo.h>
#include <sanitizer/common_interface_defs.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static atomic_int armed, fired, tracing;
static atomic_long counted;
static long target;
static unsigned long long *sites;
static long sites_cap;
static unsigned long long fired_site;

void faults_arm(long n) {
    void *frames[2];
    backtrace(frames, 2); /* the first call loads the unwinder, which allocates: not in a count */
    target = n;
    fired_site = 0;
    atomic_store(&fired, 0);
    atomic_store(&counted, 0);
    atomic_store(&armed, 1);
}

void faults_disarm(void) { atomic_store(&armed, 0); }
long faults_count(void) { return atomic_load(&counted); }
int faults_fired(void) { return atomic_load(&fired); }
void faults_trace(int on) { atomic_store(&tracing, on); }

void faults_record_sites(unsigned long long *out, long cap) {
    sites = out;
    sites_cap = cap;
}

unsigned long long faults_fired_site(void) { return fired_site; }

enum { MAX_FRAMES = 128 };
static int outer_frames; /* the frames above the caller of faults_stack_base */

void faults_stack_base(void) {
    void *frames[MAX_FRAMES];
    outer_frames = backtrace(frames, MAX_FRAMES) - 2;
}

/* FNV-1a over the return addresses of the allocation's stack, up to the statement's runner;
 * from the wrapper's caller (the compiler may call this from two places in fail_now). */
__attribute__((noinline)) static unsigned long long site_hash(void) {
    void *frames[MAX_FRAMES];
    int depth = backtrace(frames, MAX_FRAMES);
    if (depth < MAX_FRAMES && depth > outer_frames) depth -= outer_frames;
    unsigned long long h = 14695981039346656037ull;
    for (int i = 3; i < depth; i++) /* backtrace, site_hash, fail_now */
        h = (h ^ (unsigned long long)(uintptr_t)frames[i]) * 1099511628211ull;
    return h;
}

/* Counts one allocation; true for the one to fail. Atomic: the encoder's helper threads and
 * OpenBLAS may allocate too. */
__attribute__((noinline)) static int fail_now(void) {
    if (!atomic_load_explicit(&armed, memory_order_relaxed)) return 0;
    long n = atomic_fetch_add(&counted, 1) + 1;
    int record = sites && n <= sites_cap;
    if (!record && n != target) return 0;
    unsigned long long site = site_hash(); /* one call: its return address is part of the hash */
    if (record) sites[n - 1] = site;
    if (n != target) return 0;
    fired_site = site;
    atomic_store(&fired, 1);
    if (atomic_load(&tracing)) __sanitizer_print_stack_trace();
    return 1;
}

/* The real functions, reached through the linker's --wrap. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
XXH3_state_t *__real_XXH3_createState(void);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
int __wrap_posix_memalign(void **p, size_t a, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
XXH3_state_t *__wrap_XXH3_createState(void);

void *__wrap_malloc(size_t n) { return fail_now() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t k, size_t n) { return fail_now() ? NULL : __real_calloc(k, n); }
void *__wrap_realloc(void *p, size_t n) { return fail_now() ? NULL : __real_realloc(p, n); }
void *__wrap_aligned_alloc(size_t a, size_t n) { return fail_now() ? NULL : __real_aligned_alloc(a, n); }
char *__wrap_strdup(const char *s) { return fail_now() ? NULL : __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) { return fail_now() ? NULL : __real_strndup(s, n); }
/* libxxhash allocates the state inside itself, out of --wrap's reach: fail the call instead. */
XXH3_state_t *__wrap_XXH3_createState(void) { return fail_now() ? NULL : __real_XXH3_createState(); }

int __wrap_posix_memalign(void **p, size_t a, size_t n) {
    if (fail_now()) return ENOMEM;
    return __real_posix_memalign(p, a, n);
}

static void *json_malloc(size_t n) { return __wrap_malloc(n); }

/* SQLite's default methods, wrapped: only xMalloc and xRealloc can fail. */
static sqlite3_mem_methods base;

static void *sq_malloc(int n) { return fail_now() ? NULL : base.xMalloc(n); }
static void *sq_realloc(void *p, int n) { return fail_now() ? NULL : base.xRealloc(p, n); }

int faults_install(void) {
    int rc = sqlite3_config(SQLITE_CONFIG_GETMALLOC, &base);
    if (rc != SQLITE_OK) return rc;
    static sqlite3_mem_methods wrapped;
    wrapped = base;
    wrapped.xMalloc = sq_malloc;
    wrapped.xRealloc = sq_realloc;
    rc = sqlite3_config(SQLITE_CONFIG_MALLOC, &wrapped);
    if (rc != SQLITE_OK) return rc;
    /* cJSON's own allocations (parse, print) happen in libcjson.so, out of --wrap's reach */
    cJSON_InitHooks(&(cJSON_Hooks){.malloc_fn = json_malloc, .free_fn = free});
    return SQLITE_OK;
}
