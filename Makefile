# tend: build, test and run.  See README.md.

CC	?= cc
BUILD	?= build
OPT	?= -O2 -g
CFLAGS	+= -std=c11 -D_GNU_SOURCE $(OPT) -Ilib \
	   -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	   -Wmissing-prototypes -Wpointer-arith
# libev, http-parser and nettle link statically (fewer pages mapped at
# start, smaller idle RSS); Debian ships cJSON as a shared library only.
LDLIBS	+= -Wl,-Bstatic -lev -lhttp_parser -lnettle -Wl,-Bdynamic -lcjson -lm
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

$(BUILD)/%.o: %.c $(wildcard lib/*.h)
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

clean:
	rm -rf build build-asan run
