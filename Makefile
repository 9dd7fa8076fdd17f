# tend: build, test and run.  See README.md.

CC	?= cc
BUILD	?= build
OPT	?= -O2 -g
CFLAGS	+= -std=c11 -D_GNU_SOURCE $(OPT) -iquote lib \
	   -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	   -Wmissing-prototypes -Wpointer-arith
# libev, http-parser, nettle and libarchive (with zlib, for gzip) link
# statically (fewer pages mapped at start, smaller idle RSS; libarchive's
# shared library would map libxml2, ICU and libstdc++ into PID 1 and the
# image: only the tar objects lib/tar.c calls are linked, see there);
# libseccomp too (only `tend shim` calls it);
# Debian ships cJSON as a shared library only.
LDLIBS	+= -Wl,-Bstatic -lev -lhttp_parser -larchive -lz -lnettle -lseccomp -Wl,-Bdynamic -lcjson -lm
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck)

LIB_SRC   := $(wildcard lib/*.c)
AGENT_SRC := $(wildcard agent/*.c)
UNIT_SRC  := $(wildcard tests/unit/*.c)
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
AGENT_OBJ := $(AGENT_SRC:%.c=$(BUILD)/%.o)
UNIT_OBJ  := $(UNIT_SRC:%.c=$(BUILD)/%.o)

.PHONY: all setup test unit blackbox asan valgrind run bench clean conformance

all: $(BUILD)/tend

setup:
	@scripts/setup

$(BUILD)/%.o: %.c $(wildcard lib/*.h agent/*.h tests/unit/*.h)
	@mkdir -p $(dir $@)
	@echo "CC $<"
	@$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/tend: $(AGENT_OBJ) $(LIB_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/unit: $(UNIT_OBJ) $(LIB_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(CHECK_LIBS)

unit: $(BUILD)/unit
	$(BUILD)/unit

blackbox: $(BUILD)/tend
	TEND_BIN=$(abspath $(BUILD)/tend) scripts/test

# Everything, from a fresh Debian 12 machine as root.
test: setup
	$(MAKE) all $(BUILD)/unit
	$(BUILD)/unit
	TEND_BIN=$(abspath $(BUILD)/tend) scripts/test

# The same tests under AddressSanitizer and UBSan.
asan: setup
	$(MAKE) BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	    LDFLAGS="-fsanitize=address,undefined" build-asan/tend build-asan/unit
	ASAN_OPTIONS=detect_leaks=1 build-asan/unit
	ASAN_OPTIONS=detect_leaks=0 TEND_BIN=$(abspath build-asan/tend) TEND_SLOW=1 scripts/test

valgrind: setup all $(BUILD)/unit
	CK_FORK=no valgrind -q --error-exitcode=1 --leak-check=full $(BUILD)/unit

run: setup all
	scripts/run

bench: setup all $(BUILD)/spawnbench
	SPAWNBENCH=$(abspath $(BUILD)/spawnbench) TEND_BIN=$(abspath $(BUILD)/tend) scripts/bench

$(BUILD)/spawnbench: tests/bench/spawn.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $<

conformance: all
	python3 ../shared/conformance/conformance.py

# Coverage-guided fuzzing with libFuzzer: each target in tests/fuzz runs
# for FUZZ_SECONDS, its corpus kept in build-fuzz/corpus/<name> and seeded
# from tests/fuzz/seeds/<name>; inputs that once crashed a target, in
# tests/fuzz/crashers/<name>, are run first.  New crashes are saved as
# build-fuzz/crash-<name>-*.
# Needs clang and its fuzzer runtime: `scripts/setup fuzz`.
FUZZ_CC		?= clang
FUZZ_SECONDS	?= 30
FUZZ_TARGETS	:= codec http json
FUZZ_SAN	:= address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS	:= -g -O1 -std=c11 -D_GNU_SOURCE -iquote lib
FUZZ_LIBS	:= -lev -lhttp_parser -lnettle -lcjson -larchive -lm
FUZZ_LIB_OBJ	:= $(LIB_SRC:%.c=build-fuzz/%.o)

.PHONY: fuzz
.SECONDARY: $(FUZZ_LIB_OBJ)

build-fuzz/lib/%.o: lib/%.c $(wildcard lib/*.h)
	@mkdir -p $(dir $@)
	@echo "CC (fuzz) $<"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,$(FUZZ_SAN) -c -o $@ $<

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzzsrv.c tests/fuzz/fuzzsrv.h $(FUZZ_LIB_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Wall -Wextra -Werror -Wshadow \
	    -Wstrict-prototypes -Wmissing-prototypes -Wpointer-arith \
	    -fsanitize=fuzzer,$(FUZZ_SAN) -o $@ $< tests/fuzz/fuzzsrv.c \
	    $(FUZZ_LIB_OBJ) $(FUZZ_LIBS)

fuzz: setup
	@scripts/setup fuzz
	$(MAKE) $(FUZZ_TARGETS:%=build-fuzz/fuzz_%)
	@rc=0; for t in $(FUZZ_TARGETS); do \
	    mkdir -p build-fuzz/corpus/$$t && \
	    echo "fuzz: $$t for $(FUZZ_SECONDS)s" && \
	    UBSAN_OPTIONS=print_stacktrace=1 build-fuzz/fuzz_$$t \
		-max_total_time=$(FUZZ_SECONDS) -timeout=20 -print_final_stats=1 \
		-artifact_prefix=build-fuzz/crash-$$t- \
		$$(cat tests/fuzz/$$t.options 2>/dev/null) \
		build-fuzz/corpus/$$t tests/fuzz/seeds/$$t \
		$$(ls -d tests/fuzz/crashers/$$t 2>/dev/null) || rc=1; \
	done; exit $$rc

clean:
	rm -rf build build-asan build-fuzz run
