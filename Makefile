# tend: build, test and run.  See README.md.

CC	?= cc
BUILD	?= build
OPT	?= -O2 -g
CFLAGS	+= -std=c11 -D_GNU_SOURCE $(OPT) -iquote lib -iquote agent \
	   -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	   -Wmissing-prototypes -Wpointer-arith \
	   -Wno-missing-field-initializers
# (Tables of structs, the route tables first, leave their optional last
# fields out: C makes them zero, which is what those fields mean.)
# libev, http-parser, nettle, libseccomp and libarchive (with zlib, for
# gzip) link statically (fewer pages mapped at start, smaller idle RSS; libarchive's
# shared library would map libxml2, ICU and libstdc++ into PID 1 and the
# image: only the tar objects lib/tar.c calls are linked, see there);
# libseccomp too (only `tend shim` calls it);
# Debian ships cJSON as a shared library only.
LDLIBS	+= -Wl,-Bstatic -lev -lhttp_parser -larchive -lz -lnettle -lseccomp -Wl,-Bdynamic -lcjson -lm
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck)

# lib/ has a folder per layer (ARCHITECTURE.md); agent/ the entry points
# and agent/cli/ the CLI.  Module names are unique across lib/'s folders.
LIB_SRC   := $(sort $(shell find lib -name '*.c'))
AGENT_SRC := $(sort $(shell find agent -name '*.c'))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
AGENT_OBJ := $(AGENT_SRC:%.c=$(BUILD)/%.o)

# Unit tests: one binary per suite, build/unit-<m> for tests/unit/test_<m>.c,
# linking that file, tests/unit/testutil.o, a runner (tests/unit/main.c
# built with -DSUITE=<m>) and only lib/<layer>/<m>.o with what it depends
# on: the closure of the DEPS_ lines below.  A suite that does not link
# names a dependency its module's line lacks, which is a layering question
# first: should <m> need that module at all?
#
# Each DEPS_<m> lists module <m>'s direct dependencies only, the lib/
# modules whose symbols `nm -u` of its object names (make adds theirs;
# `make deps` prints what nm finds).  Dependencies run one way, down the
# layers (ARCHITECTURE.md; `make deps` checks these edges with
# scripts/layers); a new module or suite is one line here (an empty one
# for a module that needs none): a test_<m>.c without a DEPS_<m> line
# stops the build.  A TEST_DEPS_<m> line names
# what the test file itself uses that its module does not (rarely: such
# a test usually belongs in another suite).  build/unit runs every suite,
# each under the command given to it if any (`build/unit valgrind -q`);
# run build/unit-<m> alone for one.
DEPS_buf	:=
DEPS_log	:=
DEPS_fsutil	:=
DEPS_user	:=
DEPS_pty	:= user
DEPS_codec	:= buf
DEPS_jsonstr	:= buf codec
DEPS_opt	:= buf codec
DEPS_connect	:= buf jsonstr
DEPS_cursor	:= codec
DEPS_hclient	:= buf
DEPS_ws		:= buf codec
DEPS_logstore	:= codec
DEPS_files	:= codec fsutil
DEPS_upload	:= child files fsutil spawn
DEPS_fileops	:= files fsutil spawn
DEPS_spawn	:= fsutil user
DEPS_tar	:= fsutil spawn
DEPS_http	:= buf chunked codec log
DEPS_chunked	:= codec
DEPS_record	:= codec fsutil log logstore spawn
DEPS_boot	:= codec fsutil log record
DEPS_proctab	:= boot events job log record spawn
DEPS_proc	:= cgroup codec events exitstatus job log proctab ready record spawn
DEPS_wlist	:=
DEPS_exitstatus	:=
DEPS_job	:= boot buf cgroup codec events exitstatus jsonstr log logstore record spawn wlist
DEPS_api_bridge	:=
DEPS_follow	:= codec cursor job log logstore proc term
DEPS_api	:= boot cgroup codec http proc proctab ready spawn user
DEPS_api_input	:= api http job
DEPS_api_proc	:= api api_input api_ports http job log proc proctab record
DEPS_api_output	:= api buf codec follow http job logstore proc proctab record
DEPS_api_exec	:= api api_output buf codec http job logstore proc
DEPS_api_health	:= api buf cgroup codec handover http log proctab shimctl term
DEPS_api_upgrade	:= api buf child events handover http log spawn
DEPS_api_freeze	:= api cgroup child http job log proc proctab record
DEPS_shim	:= buf codec log shimhead
DEPS_shimhead	:= buf chunked codec
DEPS_shimctl	:= events log spawn
DEPS_handover	:= boot cgroup codec events job log proc proctab shimctl term
DEPS_term	:= boot codec exitstatus job log logstore pty record spawn
DEPS_api_term	:= api api_input boot http job record term
DEPS_wsconn	:= buf http log ws
DEPS_api_term_src	:= api api_term codec exitstatus follow job logstore record term
DEPS_api_term_ws	:= api api_term_src buf follow http job term ws wsconn
DEPS_api_term_sse	:= api api_output api_term_src buf codec follow http job term
DEPS_api_pty	:= api api_sandbox api_session api_term_src api_term_ws http record term
DEPS_api_errno	:=
DEPS_api_files	:= api api_errno buf child codec fileops files fsutil http jsonstr log upload
DEPS_api_tar	:= api api_errno api_files buf child codec fileops files http log tar
DEPS_child	:=
DEPS_cgroup	:= log
DEPS_api_session	:= api api_bridge api_files boot http
DEPS_api_sandbox	:= api api_bridge api_files api_output api_proc api_session api_term fsutil http proc proctab term
DEPS_watch	:= codec files wlist
DEPS_api_watch	:= api api_errno codec files fsutil http jsonstr watch
DEPS_multipart	:= codec
DEPS_envd	:= api buf codec connect http user
DEPS_api_envd	:= api buf codec connect envd http job proc proctab term
DEPS_api_envd_stream	:= api api_envd buf codec connect envd follow http job proc proctab term
DEPS_api_envd_req	:= api api_errno connect envd fileops files fsutil
DEPS_api_envd_entry	:= api api_envd_req codec envd files jsonstr user
DEPS_api_envd_watch	:= api api_envd_entry api_envd_req connect envd files http jsonstr log watch
DEPS_api_envd_files	:= api api_envd_req api_errno api_files buf connect envd files http jsonstr multipart upload
DEPS_events	:= codec cursor logstore wlist
DEPS_events_jobs	:= events job proc term
DEPS_api_events	:= api buf codec events http proctab
DEPS_api_envd_fs	:= api api_envd_entry api_envd_files api_envd_req api_envd_watch api_files connect envd fileops files http
DEPS_ports	:=
DEPS_portwatch	:= events job log ports
DEPS_ready	:= codec events job logstore portwatch
DEPS_api_ports	:= api http job portwatch proc proctab ready
# A module written in several files, one noun each, that call one another
# (they share a private header): its other files, which link and are
# counted with it.
PARTS_http	:= http_conn http_parse http_reply
PARTS_record	:= record_lost record_pool
PARTS_tar	:= tar_in
PARTS_job	:= job_cg job_handover job_input
PARTS_cgroup	:= cgroup_rec
PARTS_logstore	:= logstore_json
PARTS_spawn	:= spawn_clone
PARTS_proc	:= proc_restart proc_handover
PARTS_shim	:= shim_accept shim_proxy
# What a suite's own test code uses beyond its module: test helpers, or
# the modules a contract is checked through (files' confinement, through
# every operation on its paths; watch's view of tend's own uploads).
TEST_DEPS_pty	:= buf
TEST_DEPS_cgroup	:= spawn
TEST_DEPS_files	:= fileops upload
TEST_DEPS_watch	:= upload
TEST_DEPS_api	:= api_proc api_output api_exec
TEST_DEPS_ready	:= proc proctab
TEST_DEPS_portwatch	:= proc proctab

UNIT_SUITES := $(patsubst tests/unit/test_%.c,%,$(wildcard tests/unit/test_*.c))
# $(call deps_closure,todo,seen): every module reachable from todo.
deps_closure = $(if $(1),$(call deps_closure,$(filter-out $(2) \
    $(firstword $(1)),$(wordlist 2,$(words $(1)),$(1)) \
    $(DEPS_$(firstword $(1)))),$(2) $(firstword $(1))),$(sort $(2)))
# lib/<layer>/<m>.c of module <m>, and its parts' files.
mod_src = $(foreach f,$(1) $(PARTS_$(1)),$(filter %/$(f).c,$(LIB_SRC)))
# Every module's name, a part's file not counted as one.
ALL_PARTS := $(foreach v,$(filter PARTS_%,$(.VARIABLES)),$($(v)))
LIB_MODS  := $(filter-out $(ALL_PARTS),$(foreach s,$(LIB_SRC),\
    $(basename $(notdir $(s)))))
unit_objs = $(foreach m,$(call deps_closure,$(1)),\
    $(patsubst %.c,$(BUILD)/%.o,$(call mod_src,$(m))))
# Stops make if suite $(1) cannot be built: no line, or a cycle.
unit_check = $(if $(filter undefined,$(origin DEPS_$(1))),\
    $(error tests/unit/test_$(1).c: no DEPS_$(1) line in the Makefile))\
    $(if $(filter $(1),$(call deps_closure,$(DEPS_$(1)))),\
    $(error DEPS_$(1): $(1) depends on itself, a layering bug))
UNIT_BIN := $(UNIT_SUITES:%=$(BUILD)/unit-%)
.SECONDARY: $(UNIT_SUITES:%=$(BUILD)/tests/unit/main-%.o) \
    $(UNIT_SUITES:%=$(BUILD)/tests/unit/test_%.o) $(BUILD)/tests/unit/testutil.o

.PHONY: all setup test unit deps layers blackbox asan valgrind run bench clean conformance

all: $(BUILD)/tend

setup:
	@scripts/setup

# Each object's headers, as the compiler found them (-MMD -MP).
DEPFLAGS = -MMD -MP
-include $(shell find $(BUILD) build-fuzz -name '*.d' 2>/dev/null)
# They are made by the compile, never by a rule of their own.
%.d: ;

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "CC $<"
	@$(CC) $(CFLAGS) $(DEPFLAGS) -c -o $@ $<

# The OpenAPI document and its page, made from proto/openapi.yaml and
# embedded in the binary (lib/api_sandbox.c serves them).
$(BUILD)/openapi.json $(BUILD)/openapi.html $(BUILD)/gen/openapi.c: \
    proto/openapi.yaml scripts/openapi
	@mkdir -p $(BUILD)/gen
	@echo "GEN $(BUILD)/openapi.json $(BUILD)/openapi.html"
	@scripts/openapi proto/openapi.yaml $(BUILD)

$(BUILD)/gen/openapi.o: $(BUILD)/gen/openapi.c
	@$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/tend: $(AGENT_OBJ) $(LIB_OBJ) $(BUILD)/gen/openapi.o
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/unit/main-%.o: tests/unit/main.c
	@mkdir -p $(dir $@)
	@echo "CC $< (SUITE=$*)"
	@$(CC) $(CFLAGS) $(DEPFLAGS) -DSUITE=$* -c -o $@ $<

.SECONDEXPANSION:
$(BUILD)/unit-%: $(BUILD)/tests/unit/test_%.o $(BUILD)/tests/unit/main-%.o \
    $(BUILD)/tests/unit/testutil.o $$(call unit_check,$$*) \
    $$(call unit_objs,$$* $$(TEST_DEPS_$$*))
	@echo "LD $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(CHECK_LIBS)

# The runner of every suite, scripts/unit, beside them; a suite no longer
# in tests/unit is removed so that it does not run.
$(BUILD)/unit: scripts/unit $(UNIT_BIN)
	@rm -f $(filter-out $(UNIT_BIN),$(wildcard $(BUILD)/unit-*))
	@cp scripts/unit $@

unit: $(BUILD)/unit
	$(BUILD)/unit

# Each module's direct dependencies as nm finds them, in DEPS_ form;
# "# here:" marks a line that the Makefile has otherwise (or not at all).
# Then scripts/layers: no include, and no nm edge, runs up the layers.
# A module's parts count as the module.
mod_objs = $(patsubst %.c,$(BUILD)/%.o,$(call mod_src,$(1)))
deps: $(LIB_OBJ)
	@{ $(foreach m,$(LIB_MODS),for o in $(call mod_objs,$(m)); do \
	    nm -g --defined-only $$o | awk -v m=$(m) \
		'NF == 3 { print $$3, m }'; \
	done;) } | LC_ALL=C sort >$(BUILD)/lib/defs
	@{ $(foreach m,$(LIB_MODS),\
	    d=$$(nm -u $(call mod_objs,$(m)) | awk 'NF == 2 { print $$2 }' | \
		LC_ALL=C sort -u | LC_ALL=C join - $(BUILD)/lib/defs | \
		awk '$$2 != "$(m)" { print $$2 }' | sort -u | \
		xargs); \
	    h="$(strip $(if $(filter undefined,$(origin \
		DEPS_$(m))),none,$(sort $(DEPS_$(m)))))"; \
	    printf 'DEPS_%s\t:=%s%s\n' $(m) "$${d:+ $$d}" \
		"$$([ "$$d" = "$$h" ] || echo "	# here: $$h")";) } \
	    | tee $(BUILD)/lib/deps
	@scripts/layers $(BUILD)/lib/deps

# The include lines alone (make test): no folder includes a higher one.
layers:
	@scripts/layers

blackbox: $(BUILD)/tend
	TEND_BIN=$(abspath $(BUILD)/tend) scripts/test

# Everything, from a fresh Debian 12 machine as root.  The static
# binary runs the black-box files of STATIC_TESTS too (see there).
test: setup layers
	$(MAKE) all static $(BUILD)/unit
	$(BUILD)/unit
	TEND_BIN=$(abspath $(BUILD)/tend) scripts/test
	$(MAKE) blackbox-static
	$(MAKE) vm
	$(MAKE) e2b
	$(MAKE) fuzz-replay

# tend as the init of a virtual machine on a cgroup v2 kernel with every
# controller (tests/vm, scripts/vm): Debian's kernel under qemu by
# software emulation, about a minute at most; one line and a skip where
# qemu or the kernel cannot be had.  `scripts/vm build/tend-static CASE...`
# runs some cases; VM_VERBOSE=1 shows the console.
.PHONY: vm
vm: static
	@scripts/setup vm || true
	scripts/vm $(BUILD)/tend-static

# The unmodified E2B JS SDK against the agent through the shim
# (tests/e2b/run.py): npm ci into $(BUILD)/e2b, then one line per check;
# without node and npm it says so and skips.
.PHONY: e2b
e2b: all
	TEND_BIN=$(abspath $(BUILD)/tend) E2B_BUILD=$(abspath $(BUILD))/e2b \
	    tests/e2b/run.py

# The same tests under AddressSanitizer and UBSan.
asan: setup
	$(MAKE) BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	    LDFLAGS="-fsanitize=address,undefined" build-asan/tend build-asan/unit
	ASAN_OPTIONS=detect_leaks=1 build-asan/unit
	ASAN_OPTIONS=detect_leaks=0 TEND_BIN=$(abspath build-asan/tend) TEND_SLOW=1 scripts/test

valgrind: setup all $(BUILD)/unit
	CK_FORK=no $(BUILD)/unit valgrind -q --error-exitcode=1 --leak-check=full

run: setup all
	scripts/run

# One table of DESIGN §8's figures, each against its limit measured in
# the same run, also in build/bench.json (BENCH="--quick --only exec,idle").
# The static binary too: idle RSS and its size are its figures.
bench: all static $(BUILD)/spawnbench
	@scripts/setup bench
	SPAWNBENCH=$(abspath $(BUILD)/spawnbench) TEND_BIN=$(abspath $(BUILD)/tend) scripts/bench $(BENCH)

$(BUILD)/spawnbench: tests/bench/spawn.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -pthread -o $@ $<

# ------------------------------------------------------------------
# The static binary and the images (README, "A container image").
#
# build/tend-static is the same objects linked -static against musl
# and the libraries compiled for it from Debian's source packages
# (scripts/setup static fetches them into build/src, scripts/static-libs
# builds them into build/musl; nothing of them is in the repository):
# Debian's own static libraries are built for glibc, whose static libc
# alone (920 KB of the old glibc binary's 1.63 MB) was most of the
# agent's idle RSS, every page of the binary being mapped once it runs.
# static/musl.h (forced in with -include) and static/musl.c supply the
# few glibc extensions tend calls.  Linked as $@.full (symbols, for nm
# and gdb), then stripped, at most STATIC_MAX bytes (DESIGN §8).
MUSL		:= $(BUILD)/musl
MUSL_CC		:= musl-gcc -isystem $(MUSL)/include
MUSL_CFLAGS	 = $(CFLAGS) -iquote static -include static/musl.h
STATIC_LIBS	:= -lev -lhttp_parser -larchive -lz -lnettle -lseccomp -lcjson
STATIC_MAX	:= 2097152
DOCKER		?= docker
IMAGE		?= tend

# What `make test` runs against build/tend-static as well, so that it
# cannot rot: each part of the agent and the CLI once (60-90 s here,
# against the whole suite's 2-4 minutes; the slow follow and stuck-reader
# classes of test_logs stay out).  The image tests use the static binary
# whichever TEND_BIN runs the suite.
STATIC_TESTS	:= test_agent test_procs test_logs.TestReplay \
		   test_logs.TestCursors test_logs.TestExec test_terms \
		   test_files test_shim test_cli test_confine test_proxy \
		   test_restart

.PHONY: static image blackbox-static

blackbox-static: static
	TEND_BIN=$(abspath $(BUILD)/tend-static) scripts/test $(STATIC_TESTS)

static:
	@scripts/setup static
	@scripts/static-libs $(MUSL)
	@$(MAKE) --no-print-directory $(BUILD)/tend-static

# The static binary's own objects are built for size: every page of it
# is mapped once it runs (fault-around), so its size is most of the
# agent's idle RSS.  -Os, no unwind tables (C without exceptions or
# cancellation never unwinds; -g keeps .debug_frame for gdb) and unused
# sections dropped.
STATIC_OPT	:= -Os -g -fno-asynchronous-unwind-tables -ffunction-sections \
		   -fdata-sections
STATIC_OBJ	:= $(patsubst $(BUILD)/%,$(BUILD)/static/%,$(AGENT_OBJ) $(LIB_OBJ) \
		   $(BUILD)/gen/openapi.o) $(BUILD)/static/musl.o

$(BUILD)/static/%.o: OPT := $(STATIC_OPT)
# The libraries' headers too: all.done is touched when one was rebuilt.
$(BUILD)/static/%.o: %.c static/musl.h $(MUSL)/all.done
	@mkdir -p $(dir $@)
	@echo "CC $< (static)"
	@$(MUSL_CC) $(MUSL_CFLAGS) $(DEPFLAGS) -c -o $@ $<

$(MUSL)/all.done: scripts/static-libs
	@scripts/static-libs $(MUSL)

$(BUILD)/static/musl.o: static/musl.c static/musl.h $(MUSL)/all.done
	@mkdir -p $(dir $@)
	@echo "CC $< (static)"
	@$(MUSL_CC) $(MUSL_CFLAGS) -c -o $@ $<

$(BUILD)/static/gen/openapi.o: $(BUILD)/gen/openapi.c
	@mkdir -p $(dir $@)
	@$(MUSL_CC) $(MUSL_CFLAGS) -c -o $@ $<

$(BUILD)/tend-static: $(STATIC_OBJ)
	$(MUSL_CC) $(CFLAGS) $(LDFLAGS) -static -Wl,--gc-sections \
	    -Wl,--fatal-warnings -o $@.full $^ -L$(MUSL)/lib $(STATIC_LIBS)
	strip -o $@ $@.full
	@n=$$(stat -c %s $@); echo "static: $@ $$n bytes stripped"; \
	    [ $$n -le $(STATIC_MAX) ] || \
	    { echo "static: over $(STATIC_MAX) bytes" >&2; exit 1; }

# $(IMAGE):latest, FROM scratch with the static binary only, and
# $(IMAGE):demo, with busybox-static as /bin/sh and its applets
# (image/mkrootfs, image/Dockerfile).  Needs a running docker daemon.
image: static
	TEND_BIN=$(BUILD)/tend-static image/mkrootfs $(BUILD)/image
	$(DOCKER) build -q -f image/Dockerfile --target tend \
	    -t $(IMAGE):latest $(BUILD)/image
	$(DOCKER) build -q -f image/Dockerfile --target demo \
	    -t $(IMAGE):demo $(BUILD)/image
	@for t in latest demo; do printf 'image: %s:%s %s bytes\n' $(IMAGE) \
	    $$t "$$($(DOCKER) image inspect -f '{{.Size}}' $(IMAGE):$$t)"; done

conformance: all
	python3 ../shared/conformance/conformance.py

# Coverage-guided fuzzing with libFuzzer, a target per tests/fuzz/fuzz_<name>.c
# (scripts/fuzz says how each mode runs them): `make fuzz` fuzzes each
# for FUZZ_SECONDS, `make fuzz-replay` runs each once over its seeds and
# saved crashers (make test), `make fuzz-ci` fuzzes each FUZZ_CI_SECONDS
# from a fixed start (.ci/run).  New crashes are saved as
# build-fuzz/crash-<name>-*.
# Needs clang and its fuzzer runtime: `scripts/setup fuzz`.
FUZZ_CC		?= clang
FUZZ_SECONDS	?= 30
FUZZ_CI_SECONDS	?= 30
FUZZ_TARGETS	:= codec http json shim bridge multipart events
FUZZ_SAN	:= address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS	:= -g -O1 -std=c11 -D_GNU_SOURCE -iquote lib
FUZZ_LIBS	:= -lev -lhttp_parser -lnettle -lseccomp -lcjson -larchive -lz -lm
FUZZ_LIB_OBJ	:= $(LIB_SRC:%.c=build-fuzz/%.o) build-fuzz/gen/openapi.o

.PHONY: fuzz fuzz-replay fuzz-ci
.SECONDARY: $(FUZZ_LIB_OBJ)

build-fuzz/lib/%.o: lib/%.c
	@mkdir -p $(dir $@)
	@echo "CC (fuzz) $<"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) $(DEPFLAGS) -fsanitize=fuzzer-no-link,$(FUZZ_SAN) -c -o $@ $<

build-fuzz/gen/openapi.o: $(BUILD)/gen/openapi.c
	@mkdir -p $(dir $@)
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzzsrv.c tests/fuzz/fuzzsrv.h $(FUZZ_LIB_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Wall -Wextra -Werror -Wshadow \
	    -Wstrict-prototypes -Wmissing-prototypes -Wpointer-arith \
	    -Wno-missing-field-initializers \
	    -fsanitize=fuzzer,$(FUZZ_SAN) -o $@ $< tests/fuzz/fuzzsrv.c \
	    $(FUZZ_LIB_OBJ) $(FUZZ_LIBS)

fuzz fuzz-replay fuzz-ci: setup
	@scripts/setup fuzz
	$(MAKE) $(FUZZ_TARGETS:%=build-fuzz/fuzz_%)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_CI_SECONDS=$(FUZZ_CI_SECONDS) \
	    FUZZ_CI_DIR=$(BUILD)/fuzz-ci scripts/fuzz $@ $(FUZZ_TARGETS)

clean:
	rm -rf build build-asan build-fuzz run
