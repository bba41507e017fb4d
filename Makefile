# pysight build.  `make demo` and `make test` are the README's two commands.
OUTPUT := .output
.DEFAULT_GOAL := all
ARCH := $(shell uname -m)
CLANG ?= clang
BPFTOOL ?= bpftool
CC ?= cc
PYTHON ?= python3
CACHE ?= /var/cache/pysight

BPF_ARCH := $(patsubst x86_64,x86,$(patsubst aarch64,arm64,$(ARCH)))
CFLAGS ?= -O2 -g
VERSION := 0.1.0
WARN := -Wall -Wextra -Werror
DEFS := -D_GNU_SOURCE -DPYSIGHT_VERSION=\"$(VERSION)\"
# user/ is the commands; the library is in folders by layer, each using
# only those after it here (docs/DESIGN.md, "Files")
LAYERS := collect format python native agent profile sys lib
INCLUDES := -I$(OUTPUT) -I$(OUTPUT)/pprof -I$(OUTPUT)/otlp -Ibpf -Iuser \
	    $(patsubst %,-Iuser/%,$(LAYERS))
LIBS := -lbpf -lelf -lz -lcap -ljson-c -lprotobuf-c -lm -lncursesw -lcurl \
	-lmicrohttpd -lpthread -liberty

# Debian packages the build and the tests need.
DEB_PKGS := clang llvm libbpf-dev libelf-dev zlib1g-dev bpftool pkg-config \
	    debootstrap uthash-dev binutils util-linux python3-venv libcap-dev \
	    libjson-c-dev libprotobuf-c-dev protobuf-c-compiler \
	    golang-github-google-pprof-dev libncurses-dev tmux \
	    libcurl4-openssl-dev libmicrohttpd-dev \
	    chromium podman runc libdw-dev libiberty-dev

# OTLP profiles (a "development" signal: pinned, see docs/DESIGN.md), from
# the descriptors the PyPI packages carry; a venv of their own builds them
OTLP_PIP := opentelemetry-proto==1.45.2 googleapis-common-protos==1.76.0 \
	    protobuf==6.33.6
OTLP_PROTOS := opentelemetry/proto/common/v1/common \
	       opentelemetry/proto/resource/v1/resource \
	       opentelemetry/proto/profiles/v1development/profiles \
	       opentelemetry/proto/collector/profiles/v1development/profiles_service \
	       google/protobuf/any google/rpc/status
OTLP_GEN := $(patsubst %,$(OUTPUT)/otlp/%.pb-c.c,$(OTLP_PROTOS))
OTLP_OBJS := $(patsubst %,$(OUTPUT)/otlp/%.pb-c.o,$(OTLP_PROTOS))
USER_SRCS := $(wildcard user/*.c $(patsubst %,user/%/*.c,$(LAYERS)))
USER_HDRS := $(wildcard user/*.h $(patsubst %,user/%/*.h,$(LAYERS)))
USER_OBJS := $(patsubst user/%.c,$(OUTPUT)/%.o,$(USER_SRCS)) $(OUTPUT)/profile.pb-c.o \
	     $(OTLP_OBJS)
# pprof's message types, generated from the profile.proto Debian ships
PPROF_PROTO := /usr/share/gocode/src/github.com/google/pprof/proto/profile.proto
PPROF_GEN := $(OUTPUT)/pprof/profile.pb-c.c
# what runs without BPF or root: the unit tests link these.  The
# collector's sampler is linked too, for its skeleton's symbols; an
# offline collector never loads it.
LIB_SRCS := user/lib/arena.c user/sys/cgroup.c user/profile/collapse.c user/collect/collector.c \
	    user/sys/container.c user/sys/elffile.c \
	    user/python/filename.c user/format/flatten.c \
	    user/lib/htab.c user/lib/log.c user/sys/ksyms.c user/profile/labels.c \
	    user/python/asynctasks.c user/python/linetable.c user/python/offsets.c user/python/offsets_table.c \
	    user/sys/privs.c user/sys/procmaps.c user/sys/remote.c user/sys/schedstat.c user/python/process.c user/profile/profile.c user/python/pylocals.c user/python/pyobj.c \
	    user/python/threadnames.c user/native/ehframe.c user/native/native.c user/native/nsyms.c user/native/rowpool.c \
	    user/format/read_folded.c user/format/read_pprof.c user/format/read_speedscope.c user/format/read_kit.c user/format/reader.c \
	    user/collect/registry.c user/collect/sampler.c user/collect/sweep.c user/python/stackread.c user/python/symbols.c \
	    user/profile/tally.c user/topview.c \
	    user/format/writer.c user/format/write_folded.c user/format/write_pprof.c \
	    user/format/write_speedscope.c user/format/write_svg.c \
	    user/agent/control.c user/agent/export.c user/agent/exporter.c \
	    user/agent/history.c user/agent/metrics.c user/agent/otlp.c \
	    user/agent/retention.c user/agent/service.c user/agent/spool.c user/lib/fdio.c \
	    $(PPROF_GEN) $(OTLP_GEN)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(UNIT_SRCS))

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
$(OUTPUT)/otlp/.desc: tools/otlp-descriptors.py | $(OUTPUT)
	$(call msg,PIP,$(OTLP_PIP))
	$(Q)rm -rf $(OUTPUT)/otlp && mkdir -p $(OUTPUT)/otlp
	$(Q)$(PYTHON) -m venv $(OUTPUT)/otlp/venv
	$(Q)$(OUTPUT)/otlp/venv/bin/pip install -q --no-deps $(OTLP_PIP)
	$(Q)$(OUTPUT)/otlp/venv/bin/python tools/otlp-descriptors.py $@.tmp && mv $@.tmp $@

$(OUTPUT)/otlp/.gen: $(OUTPUT)/otlp/.desc
	$(call msg,PROTOC-C,otlp)
	$(Q)cd $(OUTPUT)/otlp && protoc-c --descriptor_set_in=.desc --c_out=. \
		$(patsubst %,%.proto,$(OTLP_PROTOS))
	$(Q)touch $@

$(OTLP_GEN): $(OUTPUT)/otlp/.gen

$(OUTPUT)/otlp/%.pb-c.o: $(OUTPUT)/otlp/%.pb-c.c
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I$(OUTPUT)/otlp -c $< -o $@

$(OUTPUT)/agent/otlp.o $(OUTPUT)/agent/exporter.o: $(OUTPUT)/otlp/.gen

otlp: $(OTLP_OBJS)
.PHONY: all deps demo test unit integration clean pythons fuzz asan test-asan integration-asan \
	otelcol otlp

all: $(OUTPUT)/pysight

deps:
	$(Q)missing=$$(for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		echo "  APT      $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

$(OUTPUT) $(OUTPUT)/tests:
	$(Q)mkdir -p $@

$(OUTPUT)/pysight.bpf.o: bpf/pysight.bpf.c bpf/pysight.h $(wildcard bpf/*.bpf.h) vmlinux/$(ARCH)/vmlinux.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) $(WARN) \
		-Wno-unused-parameter -Wno-unused-function -Ivmlinux/$(ARCH) -Ibpf -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp && rm -f $@.tmp

$(OUTPUT)/pysight.skel.h: $(OUTPUT)/pysight.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(OUTPUT)/collect/sampler.o: $(OUTPUT)/pysight.skel.h

$(PPROF_GEN): $(PPROF_PROTO) | $(OUTPUT)
	$(call msg,PROTOC,$@)
	$(Q)mkdir -p $(OUTPUT)/pprof
	$(Q)protoc-c --c_out=$(OUTPUT)/pprof -I$(dir $(PPROF_PROTO)) $(PPROF_PROTO)

$(OUTPUT)/pprof/profile.pb-c.h: $(PPROF_GEN)

$(OUTPUT)/profile.pb-c.o: $(PPROF_GEN)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -c $< -o $@

$(OUTPUT)/format/write_pprof.o $(OUTPUT)/format/read_pprof.o: $(PPROF_GEN)

# The flame graph's script, as a C string the SVG writer embeds.
$(OUTPUT)/write_svg.js.h: user/format/write_svg.js | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q)sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $< > $@

$(OUTPUT)/format/write_svg.o: $(OUTPUT)/write_svg.js.h

$(OUTPUT)/%.o: user/%.c $(USER_HDRS) bpf/pysight.h | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(WARN) $(DEFS) $(INCLUDES) -c $< -o $@

$(OUTPUT)/pysight: $(USER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LIBS) -o $@

# sanitizers on: these parse untrusted bytes.  -rdynamic: a test binary is
# its own ELF fixture, and exports its symbols as an interpreter does.
$(OUTPUT)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(LIB_SRCS) \
		$(USER_HDRS) bpf/pysight.h \
		$(OUTPUT)/pysight.skel.h $(OUTPUT)/write_svg.js.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(WARN) $(DEFS) -fsanitize=address,undefined \
		-fno-sanitize-recover=all -rdynamic $(INCLUDES) $< $(LIB_SRCS) $(LIBS) \
		$(TEST_LIBS) -o $@

# libdw: the oracle the .eh_frame reader is checked against
$(OUTPUT)/tests/test_ehframe: TEST_LIBS := -ldw

# what --native's tables cost for a host's binaries (tools/bench)
NATIVE_TABLES_OBJS := $(addprefix $(OUTPUT)/,native/ehframe.o native/nsyms.o \
			sys/elffile.o lib/arena.o lib/fdio.o lib/log.o)
$(OUTPUT)/native-tables: tools/native-tables.c $(NATIVE_TABLES_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(WARN) $(DEFS) $(INCLUDES) $^ $(LIBS) -o $@

unit: $(UNIT_BINS) $(USER_OBJS)
	$(Q)tools/check-layers $(OUTPUT)
	$(Q)for t in $(UNIT_BINS); do echo "  UNIT     $$t"; $$t tests/fixtures || exit 1; done

# A chroot that cannot be built (sid is unstable) costs its interpreters,
# not the run: the suite still needs four minors from what is there.
pythons:
	$(Q)tools/pythons $(CACHE)/chroots || \
		echo "  WARNING  some Debian chroots could not be built; testing without them"

$(OUTPUT)/venv/.done: tests/requirements.txt | $(OUTPUT)
	$(call msg,VENV,$@)
	$(Q)$(PYTHON) -m venv $(OUTPUT)/venv
	$(Q)$(OUTPUT)/venv/bin/pip install -q -r tests/requirements.txt
	$(Q)touch $@

# aiohttp for the asyncio service test, in a directory for each minor
# (PYTHONPATH): the interpreters under test have no pip, so the venv's pip
# fetches their wheels for them.  A minor PyPI has no wheels for is left
# out, and its tests skip.
AIOHTTP_MINORS := 3.11 3.12 3.13 3.14 3.15

$(OUTPUT)/aiohttp/.done: tests/requirements-aiohttp.txt | $(OUTPUT)/venv/.done
	$(call msg,PIP,aiohttp for $(AIOHTTP_MINORS))
	$(Q)rm -rf $(OUTPUT)/aiohttp && mkdir -p $(OUTPUT)/aiohttp
	$(Q)for m in $(AIOHTTP_MINORS); do \
		$(OUTPUT)/venv/bin/pip install -q --target $(OUTPUT)/aiohttp/$$m \
			--only-binary=:all: --implementation cp --python-version $$m \
			--platform manylinux2014_$(ARCH) -r tests/requirements-aiohttp.txt || \
		{ rm -rf $(OUTPUT)/aiohttp/$$m; \
		  echo "  WARNING  no aiohttp wheels for Python $$m: its tests skip"; }; \
	done
	$(Q)touch $@

# Test-only tools from the registries: speedscope's schema and
# playwright-core (npm; it drives Debian's Chromium, so `npx playwright
# install` is never needed), and inferno, the Rust FlameGraph, which must
# read our folded output.
NODE_PKGS := speedscope@1.25.0 playwright-core@1.65.1
INFERNO_VERSION := 0.12.8
CARGO ?= $(shell command -v cargo || echo $(HOME)/.cargo/bin/cargo)

$(OUTPUT)/node/.done: Makefile | $(OUTPUT)
	$(call msg,NPM,$(NODE_PKGS))
	$(Q)mkdir -p $(OUTPUT)/node
	$(Q)npm install --prefix $(OUTPUT)/node --no-audit --no-fund --silent $(NODE_PKGS)
	$(Q)touch $@

$(OUTPUT)/cargo/bin/inferno-flamegraph: | $(OUTPUT)
	$(call msg,CARGO,inferno $(INFERNO_VERSION))
	$(Q)$(CARGO) install --quiet --locked inferno@$(INFERNO_VERSION) --root $(OUTPUT)/cargo

# The OpenTelemetry Collector that the OTLP export tests send profiles to
# (tools/otelcol: the OTLP receiver and the file exporter), built once into
# the cache: a cold build takes minutes.  Its name carries a hash of its
# sources, so an edit builds a new one; tests/integration/otelcol.py finds
# it by the same name, or by PYSIGHT_OTELCOL.
GO ?= $(shell command -v go || echo /usr/local/go/bin/go)
OTELCOL_VERSION := v0.165.0
OTELCOL_SRCS := $(sort $(wildcard tools/otelcol/*.go)) tools/otelcol/go.mod tools/otelcol/go.sum
OTELCOL_HASH := $(shell cat $(OTELCOL_SRCS) | sha256sum | cut -c1-8)
OTELCOL := $(CACHE)/otelcol-pysight-$(OTELCOL_VERSION)-$(OTELCOL_HASH)

$(OTELCOL):
	$(call msg,GO,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)cd tools/otelcol && $(GO) build -mod=readonly -buildvcs=false -trimpath \
		-ldflags='-s -w' -o $(abspath $@).tmp . && mv $(abspath $@).tmp $(abspath $@)

otelcol: $(OTELCOL)

integration: $(OUTPUT)/pysight $(OUTPUT)/venv/.done $(OUTPUT)/aiohttp/.done \
		$(OUTPUT)/node/.done $(OUTPUT)/cargo/bin/inferno-flamegraph $(OTELCOL)
	$(Q)PYSIGHT_OTELCOL=$(OTELCOL) \
		$(OUTPUT)/venv/bin/python -m pytest -q -p no:cacheprovider tests/integration

# pysight itself built with ASan+UBSan, into its own directory so the
# normal build is untouched.  `make test-asan` runs the integration suite
# against it with LeakSanitizer on; any sanitizer report (each goes to a
# file in ASAN_LOGS) fails the run, see tests/integration/conftest.py.
ASAN_DIR := $(OUTPUT)/asan
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ASAN_OBJS := $(patsubst $(OUTPUT)/%,$(ASAN_DIR)/%,$(USER_OBJS))
ASAN_LOGS := $(ASAN_DIR)/logs
# genuine third-party leaks only; each entry says why
LSAN_SUPP := $(abspath tests/asan/lsan.supp)

$(ASAN_DIR):
	$(Q)mkdir -p $@

$(ASAN_DIR)/%.o: user/%.c $(USER_HDRS) bpf/pysight.h $(OUTPUT)/pysight.skel.h \
		$(OUTPUT)/write_svg.js.h $(PPROF_GEN) | $(ASAN_DIR)
	$(call msg,CC-ASAN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(ASAN_FLAGS) $(WARN) $(DEFS) $(INCLUDES) -c $< -o $@

$(ASAN_DIR)/profile.pb-c.o: $(PPROF_GEN) | $(ASAN_DIR)
	$(call msg,CC-ASAN,$@)
	$(Q)$(CC) $(CFLAGS) $(ASAN_FLAGS) $(INCLUDES) -c $< -o $@

$(ASAN_DIR)/otlp/%.pb-c.o: $(OUTPUT)/otlp/%.pb-c.c
	$(call msg,CC-ASAN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(ASAN_FLAGS) -I$(OUTPUT)/otlp -c $< -o $@

$(ASAN_DIR)/agent/otlp.o $(ASAN_DIR)/agent/exporter.o: $(OUTPUT)/otlp/.gen

$(ASAN_DIR)/pysight: $(ASAN_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(ASAN_FLAGS) $^ $(LIBS) -o $@

asan: $(ASAN_DIR)/pysight

integration-asan: $(ASAN_DIR)/pysight $(OUTPUT)/venv/.done $(OUTPUT)/aiohttp/.done \
		$(OUTPUT)/node/.done $(OUTPUT)/cargo/bin/inferno-flamegraph $(OTELCOL)
	$(Q)rm -rf $(ASAN_LOGS) && mkdir -p -m 1777 $(ASAN_LOGS)
	$(Q)PYSIGHT_BIN=$(abspath $(ASAN_DIR)/pysight) PYSIGHT_OTELCOL=$(OTELCOL) \
		PYSIGHT_SANITIZER_LOGS=$(abspath $(ASAN_LOGS)) \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:log_path=$(abspath $(ASAN_LOGS))/asan \
		LSAN_OPTIONS=suppressions=$(LSAN_SUPP):print_suppressions=0 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(abspath $(ASAN_LOGS))/ubsan \
		$(OUTPUT)/venv/bin/python -m pytest -q -p no:cacheprovider \
		$(or $(TESTS),tests/integration)

# `make test` with the sanitized binary.  The unit tests are sanitized
# already (`make unit`); this adds the binary.  TESTS=... runs a subset.
test-asan: deps
	$(Q)$(MAKE) --no-print-directory asan pythons
	$(Q)$(MAKE) --no-print-directory integration-asan

# The README's test command: install, build, and pass every test.
test: deps
	$(Q)$(MAKE) --no-print-directory all unit pythons
	$(Q)$(MAKE) --no-print-directory integration

# The README's first command: profile the bundled demo host-wide.
demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tools/demo

# Not part of the test run: coverage-guided fuzzing of the parsers of
# target memory, interpreter files, /proc, the control socket, OTLP
# answers and the profile files report and diff read, for FUZZ_SECONDS
# each.
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined $(DEFS) $(INCLUDES)
# the tests' _PyRuntime copies, for the layouts of 3.13 on (tests/fuzz/layout.h)
FUZZ_FIXTURES := -DFIXTURES=\"$(abspath tests/fixtures)\"
FUZZ_HDRS := tests/fuzz/layout.h tests/fuzz/le.h tests/fuzz/fakemem.h
PROFILE_SRCS := user/lib/arena.c user/lib/htab.c user/profile/labels.c user/profile/profile.c \
		user/format/read_folded.c user/format/read_pprof.c user/format/read_speedscope.c user/format/read_kit.c \
		user/format/reader.c user/profile/tally.c user/format/writer.c user/format/write_folded.c \
		user/format/write_pprof.c user/format/write_speedscope.c user/format/write_svg.c \
		user/format/flatten.c user/python/filename.c $(PPROF_GEN)
FUZZERS := $(OUTPUT)/fuzz_linetable $(OUTPUT)/fuzz_profiles \
	   $(OUTPUT)/fuzz_elf $(OUTPUT)/fuzz_debug_offsets $(OUTPUT)/fuzz_symbols \
	   $(OUTPUT)/fuzz_code_event $(OUTPUT)/fuzz_dump $(OUTPUT)/fuzz_inputs \
	   $(OUTPUT)/fuzz_asynctasks $(OUTPUT)/fuzz_ehframe
# what inspecting an interpreter file takes
ELF_SRCS := user/sys/elffile.c user/python/process.c user/sys/procmaps.c user/python/offsets.c user/python/offsets_table.c \
	    user/sys/remote.c

$(OUTPUT)/fuzz_linetable: tests/fuzz/fuzz_linetable.c user/python/linetable.c | $(OUTPUT)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $^ -o $@

$(OUTPUT)/fuzz_profiles: tests/fuzz/fuzz_profiles.c $(PROFILE_SRCS) $(USER_HDRS) | $(OUTPUT)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $< $(PROFILE_SRCS) -ljson-c -lprotobuf-c -lz -lm -o $@

$(OUTPUT)/fuzz_elf: tests/fuzz/fuzz_elf.c $(FUZZ_HDRS) $(ELF_SRCS) $(USER_HDRS) | $(OUTPUT)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $< $(ELF_SRCS) -lelf -lz -o $@

OFFSETS_SRCS := user/python/offsets.c user/python/offsets_table.c user/sys/remote.c
$(OUTPUT)/fuzz_debug_offsets: tests/fuzz/fuzz_debug_offsets.c $(OFFSETS_SRCS) \
		$(USER_HDRS) | $(OUTPUT)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $< $(OFFSETS_SRCS) -o $@

# code objects, str and bytes read from a fake address space
SYMBOLS_SRCS := user/python/symbols.c user/sys/remote.c user/python/linetable.c \
		user/python/offsets.c user/python/offsets_table.c
$(OUTPUT)/fuzz_symbols: tests/fuzz/fuzz_symbols.c $(SYMBOLS_SRCS) $(FUZZ_HDRS) $(USER_HDRS) | $(OUTPUT)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $(FUZZ_FIXTURES) $< $(SYMBOLS_SRCS) -o $@

# EV_CODE: a code object named from the bytes BPF copied at its dealloc
$(OUTPUT)/fuzz_code_event: tests/fuzz/fuzz_code_event.c $(SYMBOLS_SRCS) $(FUZZ_HDRS) $(USER_HDRS) | $(OUTPUT)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $(FUZZ_FIXTURES) $< $(SYMBOLS_SRCS) -o $@

# dump: a thread's frames, their names and locals, from a fake address
# space of segments copied out of a real interpreter
DUMP_SRCS := user/python/stackread.c user/python/pylocals.c user/python/pyobj.c \
	     user/python/symbols.c user/sys/remote.c user/python/linetable.c \
	     user/python/offsets.c user/python/offsets_table.c
$(OUTPUT)/fuzz_dump: tests/fuzz/fuzz_dump.c $(DUMP_SRCS) $(FUZZ_HDRS) \
		$(USER_HDRS) | $(OUTPUT)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $(FUZZ_FIXTURES) $< $(DUMP_SRCS) -o $@

# dump --tasks: the section, then the task lists and chains it directs
ASYNC_SRCS := user/python/asynctasks.c user/python/process.c user/sys/procmaps.c user/sys/elffile.c \
	      $(DUMP_SRCS)
$(OUTPUT)/fuzz_asynctasks: tests/fuzz/fuzz_asynctasks.c $(ASYNC_SRCS) $(FUZZ_HDRS) \
		$(USER_HDRS) | $(OUTPUT)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $(FUZZ_FIXTURES) $< $(ASYNC_SRCS) -lelf -lz -o $@

# --native: a binary's .eh_frame compiled into unwind rows
$(OUTPUT)/fuzz_ehframe: tests/fuzz/fuzz_ehframe.c user/native/ehframe.c $(FUZZ_HDRS) \
		$(USER_HDRS) | $(OUTPUT)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $< user/native/ehframe.c -o $@

# what processes, containers and the network write: /proc files, cgroup
# paths, control socket lines, OTLP servers' answers
INPUT_SRCS := $(ELF_SRCS) user/sys/cgroup.c user/sys/container.c user/agent/service.c \
	      user/lib/fdio.c user/agent/control.c user/agent/otlp.c user/profile/profile.c user/lib/arena.c \
	      user/lib/htab.c user/profile/labels.c $(OTLP_GEN)
$(OUTPUT)/fuzz_inputs: tests/fuzz/fuzz_inputs.c $(INPUT_SRCS) $(USER_HDRS) | $(OUTPUT)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $< $(INPUT_SRCS) -lelf -lz -lprotobuf-c -o $@

# Every harness starts from real inputs (tools/fuzz-seeds): interpreter
# binaries, their _PyRuntime sections, profiles of each format, memory
# copied out of each interpreter, a python's own /proc files.
fuzz: $(FUZZERS) $(OUTPUT)/pysight
	$(Q)tools/fuzz-seeds $(OUTPUT)/corpus
	$(Q)cd $(OUTPUT) && for h in linetable profiles elf debug_offsets symbols code_event dump \
			inputs asynctasks ehframe; do \
		echo "  FUZZ     $$h for $(FUZZ_SECONDS) s"; \
		./fuzz_$$h -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			corpus/$$h > fuzz_$$h.log 2>&1; \
		grep -E 'stat::number_of_executed_units|ERROR|SUMMARY' fuzz_$$h.log; \
		if grep -q -E 'ERROR|SUMMARY' fuzz_$$h.log || \
		   ! grep -q 'stat::number_of_executed_units' fuzz_$$h.log; then \
			echo "  FUZZ     $$h failed: $(OUTPUT)/fuzz_$$h.log"; exit 1; fi; \
	done

clean:
	$(call msg,CLEAN,)
	$(Q)rm -rf $(OUTPUT)
