# sqlite-embed build. `make` builds embed.so and build/libembedcore.a;
# `make demo` and `make test` first install any missing Debian package.
CC      ?= cc
BUILD   ?= build
OPT     ?= -O2
SAN     ?=
# OpenBLAS's own header and library, from its pkg-config file: a cblas.h of another BLAS
# (the reference BLAS of libblas-dev) must never stand in for it.
OPENBLAS_CFLAGS := $(shell pkg-config --cflags openblas 2>/dev/null)
OPENBLAS_LIBS   := $(shell pkg-config --libs openblas 2>/dev/null)
NO_BUILD_GOALS = deps clean check-fresh check-arm64 uninstall format format-check wheel
ifeq ($(OPENBLAS_LIBS),)
ifneq ($(filter-out $(NO_BUILD_GOALS),$(or $(MAKECMDGOALS),all)),)
ifeq ($(filter demo test asan fuzz bench,$(MAKECMDGOALS)),)
$(error OpenBLAS not found by pkg-config (openblas.pc): run 'make deps' or 'apt-get install libopenblas-dev')
endif
endif
endif
CFLAGS_COMMON = -std=c11 $(OPT) -g -fPIC -Wall -Wextra -Werror -D_GNU_SOURCE \
                -fopenmp-simd -fvisibility=hidden -Iinclude -Icore -Iext $(OPENBLAS_CFLAGS) $(SAN)
CFLAGS  ?=
ALL_CFLAGS = $(CFLAGS_COMMON) $(CFLAGS)
LIBS    = $(OPENBLAS_LIBS) -lutf8proc -lcjson -lxxhash -lpthread -lm

CORE_SRC = $(wildcard core/*/*.c core/*/*/*.c)
CORE_OBJ = $(CORE_SRC:%.c=$(BUILD)/%.o)
EXT_SRC  = $(wildcard ext/*.c ext/index/*.c)
EXT_OBJ  = $(EXT_SRC:%.c=$(BUILD)/%.o)
CTEST_SRC = $(wildcard tests/c/test_*.c)
CTEST_BIN = $(CTEST_SRC:tests/c/%.c=$(BUILD)/tests/%)
BENCH_SRC = $(wildcard bench/bench_*.c)
BENCH_BIN = $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
EXT_SO   = $(if $(filter build,$(BUILD)),embed.so,$(BUILD)/embed.so)
# LD_PRELOAD helper for hosts that cannot call load_extension (dqlite nodes): beside embed.so,
# where it looks for it by default.
PRELOAD_SO = $(dir $(EXT_SO))embed_preload.so

.PHONY: model dist wheel format format-check all deps demo test check-haswell check-arm64 check-gguf asan tsan faults faults-build valgrind fuzz stress bench clean install uninstall check-fresh cluster-test cluster-demo
all: $(EXT_SO) $(PRELOAD_SO) $(BUILD)/libembedcore.a $(CTEST_BIN)

deps:
	@bash scripts/deps.sh

$(BUILD)/%.o: %.c $(wildcard include/sqlite-embed/*.h core/*/*.h core/*/*/*.h ext/*.h ext/index/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# The release number has one source, VERSION: embed_version(), sqlite-embed.pc, make dist and the
# Python and npm packages read it.
VERSION := $(shell cat VERSION)
$(BUILD)/ext/ext_info.o: ALL_CFLAGS += -DEMBED_VERSION='"$(VERSION)"'
$(BUILD)/ext/ext_info.o: VERSION

$(BUILD)/libembedcore.a: $(CORE_OBJ)
	rm -f $@ && ar rcs $@ $^

# SONAME embed.so: with the libembed.so link that `make install` adds, ldconfig lists
# embed.so in the loader's cache, so `.load embed` finds an installed copy from any folder.
# -z nodelete: a connection that closes unloads the extension (sqlite3_close dlcloses it), but the
# models it loaded, their helper threads and OpenBLAS's stay in the process for other connections.
$(EXT_SO): $(EXT_OBJ) $(BUILD)/libembedcore.a ext/embed.map
	$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,embed.so -Wl,-z,nodelete -Wl,--version-script=ext/embed.map -o $@ $(EXT_OBJ) \
	  $(BUILD)/libembedcore.a $(LIBS)

$(PRELOAD_SO): ext/preload/embed_preload.c
	$(CC) $(ALL_CFLAGS) -shared -o $@ $< -lsqlite3 -lcjson -ldl -lpthread

$(BUILD)/tests/%: tests/c/%.c tests/c/check.h $(BUILD)/libembedcore.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/c $< -o $@ $(BUILD)/libembedcore.a $(LIBS)

$(BUILD)/bench/%: bench/%.c bench/random_model.c bench/random_model.h bench/workloads.c bench/workloads.h $(BUILD)/libembedcore.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< bench/random_model.c bench/workloads.c -o $@ $(BUILD)/libembedcore.a $(LIBS) -lsqlite3

# tests/faults/: programs linked statically with the glue's objects and the core, and Debian's
# libsqlite3; the fault injector takes over the malloc family the objects call (nm -u lists them).
FAULTS_WRAP = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc,--wrap=posix_memalign \
              -Wl,--wrap=strdup,--wrap=strndup,--wrap=XXH3_createState
$(BUILD)/faults/faults: tests/faults/faults.c tests/faults/fault_alloc.c tests/faults/fault_alloc.h $(EXT_OBJ) $(BUILD)/libembedcore.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(filter %.c,$^) -o $@ $(EXT_OBJ) $(BUILD)/libembedcore.a $(FAULTS_WRAP) -lsqlite3 $(LIBS)

$(BUILD)/faults/tsan_index: tests/faults/tsan_index.c $(EXT_OBJ) $(BUILD)/libembedcore.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(EXT_OBJ) $(BUILD)/libembedcore.a -lsqlite3 $(LIBS)

demo:
	@EMBED_DEPS=build bash scripts/deps.sh
	@$(MAKE) --no-print-directory all
	sqlite3 -box :memory: '.load ./embed' '.read sql/demo.sql' '.read sql/demo_search.sql'

test: deps
	@echo "test: building (make all)"
	@$(MAKE) --no-print-directory all
	@echo "test: running every suite (tests/run.sh: 5 minutes on 2 Zen 4 cores, longer on older CPUs; each name shows as its suite starts)"
	@bash tests/run.sh $(BUILD) $(EXT_SO)

# The C suites under qemu-x86_64 -cpu Haswell: AVX2 and FMA, no AVX-512 (AMD Zen 1); minutes.
check-haswell: all
	@bash scripts/check_haswell.sh $(BUILD)

# libembedcore and the C suites cross-compiled for arm64 into build-arm64/ (aarch64-linux-gnu-gcc,
# the arm64 -dev libraries), run under qemu-aarch64. Not part of make test.
check-arm64:
	@bash scripts/check_arm64.sh

# AddressSanitizer + UndefinedBehaviorSanitizer build of everything, then the suite.
asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan OPT=-O1 \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" all
	@SANITIZE=1 bash tests/run.sh build-asan build-asan/embed.so

# Fault injection on an ASan + UBSan build (tests/faults/faults.c): the first and the last
# allocation of each call stack of a representative script fail in turn, each in a child that
# must end clean (FAULTS_ARGS=--every fails every allocation: hours). make test runs a short form.
FAULTS_SAN = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
faults-build:
	@$(MAKE) --no-print-directory BUILD=build-faults OPT=-O1 SAN="$(FAULTS_SAN)" build-faults/faults/faults
faults: deps
	@$(MAKE) --no-print-directory faults-build
	build-faults/faults/faults --jobs 2 $(FAULTS_ARGS)

# ThreadSanitizer on the C suites whose work is split over threads (the encoder's helper threads,
# the products' splits), with two OpenBLAS threads. The SQL suites are left out: an instrumented
# embed.so cannot be loaded into Debian's uninstrumented python3.
# tsan_index (tests/faults/): connections on threads sharing embed_index's process-wide copies.
TSAN_TESTS = test_sgemm_bcast test_nn_gemm test_int8_gemm test_bf16_gemm test_encoder test_encoder_weights
TSAN_BINS = $(TSAN_TESTS:%=build-tsan/tests/%) build-tsan/faults/tsan_index
tsan: deps
	@$(MAKE) --no-print-directory BUILD=build-tsan OPT=-O1 SAN="-fsanitize=thread" $(TSAN_BINS)
	@fail=0; for b in $(TSAN_BINS); do t=$$(basename $$b); \
	  OPENBLAS_NUM_THREADS=2 TSAN_OPTIONS="halt_on_error=1 exitcode=66" $$b >build-tsan/$$t.log 2>&1 \
	    || { fail=1; grep -A30 -m1 ThreadSanitizer build-tsan/$$t.log; }; \
	  printf '%-24s %s\n' $$t "$$(tail -1 build-tsan/$$t.log)"; done; exit $$fail

# The SQL surface (tests/sql/leak_check*.sql) under valgrind: memory errors and definite leaks.
valgrind: all
	@EMBED_DEPS=build bash scripts/deps.sh valgrind
	valgrind --quiet --error-exitcode=9 --leak-check=full --show-possibly-lost=no --errors-for-leak-kinds=definite \
	  sqlite3 :memory: '.load ./embed' '.read tests/sql/leak_check.sql' \
	  '.read tests/sql/leak_check_index.sql' '.read tests/sql/leak_check_hybrid.sql' '.read tests/sql/leak_check_quant.sql' >/dev/null 2>build/valgrind.log; \
	  rc=$$?; cat build/valgrind.log; [ $$rc -ne 9 ] && echo "valgrind: clean"

# Three dqlite nodes on 127.0.0.1 running sqlite-embed, a failover, then everything stopped.
cluster-demo: all
	@EMBED_DEPS=build bash scripts/deps.sh go-dqlite
	bash examples/cluster/demo.sh $(EXT_SO)

# Long form of the cluster test: bulk inserts while the leader is killed (CLUSTER_ROUNDS times).
cluster-test: all
	/usr/bin/python3 tests/cluster/test_cluster.py $(BUILD) $(EXT_SO) --long $${CLUSTER_ROUNDS:-20}

# Long forms of the crash-kill and concurrency tests (make test runs short ones).
stress: all
	EMBED_EXT=./embed.so /usr/bin/python3 tests/stress/crash_kill.py $${STRESS_TRIALS:-20}
	EMBED_EXT=./embed.so /usr/bin/python3 tests/stress/writers.py $${STRESS_TRANSACTIONS:-200}
	EMBED_EXT=./embed.so /usr/bin/python3 tests/stress/differential.py $${DIFF_OPERATIONS:-2000} $${DIFF_ROUNDS:-4}

fuzz: deps
	@bash tests/fuzz/run.sh $${FUZZ_SECONDS:-60}

# The golden BERT folders as GGUF files read by llama.cpp itself (npm's node-llama-cpp; not in
# make test): tests/references/check_gguf.sh.
check-gguf:
	@bash tests/references/check_gguf.sh

bench: deps
	@$(MAKE) --no-print-directory all $(BENCH_BIN)
	@bash bench/run.sh $(BUILD)

# The C style (.clang-format): format-check reports files it would change (make test runs it),
# format rewrites them.
format-check:
	@bash tools/check_format.sh

format:
	clang-format -i --style=file $$(git ls-files 'core/*.[ch]' 'ext/*.[ch]' 'tests/*.[ch]' 'bench/*.[ch]' 'include/*.h')

# README's set-up on a fresh Debian chroot (root; minutes): scripts/check_fresh.sh.
check-fresh:
	@bash scripts/check_fresh.sh

# make install [PREFIX=/usr/local] [DESTDIR=]: embed.so (`.load embed` from any folder once
# ldconfig has run), and for C programs libembedcore.a, the public headers and sqlite-embed.pc.
PREFIX  ?= /usr/local
DESTDIR ?=
LIBDIR   = $(DESTDIR)$(PREFIX)/lib
INCDIR   = $(DESTDIR)$(PREFIX)/include/sqlite-embed
PCDIR    = $(LIBDIR)/pkgconfig
# What a C program may use: include/sqlite-embed/ (core/*/*.h are internal; ext/ uses some).
PUBLIC_HEADERS = $(wildcard include/sqlite-embed/*.h)
# After a real install into a folder the loader searches (Debian lists /usr/local/lib), ldconfig
# puts embed.so in its cache; elsewhere, `.load embed` needs LD_LIBRARY_PATH or the full path.
LDCONFIG = if [ -n "$(DESTDIR)" ]; then :; \
  elif ! grep -qsx '$(PREFIX)/lib' /etc/ld.so.conf /etc/ld.so.conf.d/*.conf; then \
    echo "note: $(PREFIX)/lib is not in the loader's path: '.load $(PREFIX)/lib/embed' or LD_LIBRARY_PATH=$(PREFIX)/lib"; \
  elif [ "$$(id -u)" = 0 ]; then ldconfig; \
  else echo "run 'sudo ldconfig' so that '.load embed' finds $(PREFIX)/lib/embed.so"; fi

install: $(EXT_SO) $(PRELOAD_SO) $(BUILD)/libembedcore.a
	install -d $(LIBDIR) $(INCDIR) $(PCDIR)
	install -m 755 $(EXT_SO) $(LIBDIR)/embed.so
	install -m 755 $(PRELOAD_SO) $(LIBDIR)/embed_preload.so
	ln -sf embed.so $(LIBDIR)/libembed.so
	install -m 644 $(BUILD)/libembedcore.a $(LIBDIR)/libembedcore.a
	install -m 644 $(PUBLIC_HEADERS) $(INCDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' sqlite-embed.pc.in >$(PCDIR)/sqlite-embed.pc
	@$(LDCONFIG)

uninstall:
	rm -f $(LIBDIR)/embed.so $(LIBDIR)/embed_preload.so $(LIBDIR)/libembed.so $(LIBDIR)/libembedcore.a $(PCDIR)/sqlite-embed.pc \
	  $(addprefix $(INCDIR)/,$(notdir $(PUBLIC_HEADERS)))
	@for d in $(INCDIR) $(PCDIR); do if [ -d $$d ]; then rmdir --ignore-fail-on-non-empty $$d; fi; done
	@$(LDCONFIG)

# make dist: dist/sqlite-embed-VERSION.tar.gz (the committed source, git archive), the binary
# dist/sqlite-embed-VERSION-linux-ARCH.tar.gz (libraries, headers, .pc, licences) and SHA256SUMS.
dist: $(EXT_SO) $(PRELOAD_SO) $(BUILD)/libembedcore.a
	@bash scripts/dist.sh $(BUILD) $(EXT_SO) $(PRELOAD_SO)

# make model: trains the next shipped model into build/model/ in two resumable stages
# (scripts/make_model.sh; hours on two cores, MODEL_MINUTES bounds a run; the first stage goes on
# from its committed weights in models/train/carry/), then measures it.
# The tests never train.
model: all
	@bash scripts/make_model.sh $(EXT_SO)

# make wheel: a wheel of bindings/python for this platform (embed.so built inside it), in dist/.
wheel:
	@bash scripts/wheel.sh

clean:
	rm -rf build build-asan build-fuzz build-faults build-arm64 embed.so embed_preload.so
