# ctorch build. `make` builds the library (static + shared) and build/ctorch;
# `make test` installs what the tests need and runs every suite; `make sanitize`
# runs the C suite under ASan+UBSan+LSan; `make run` is the quick-start demo.
CC ?= gcc
BUILD ?= build
OPT ?= -O2
CFLAGS_BASE = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -fPIC -Iinclude -Isrc
CFLAGS ?= $(OPT) -g
LDLIBS = -lm -lpthread

LIB_SRC := $(shell find src -name '*.c' | sort)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC := $(sort $(wildcard tests/c/*.c))
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/obj/%.o)
TOOL_SRC := $(sort $(wildcard tools/*.c))
TOOL_OBJ := $(TOOL_SRC:%.c=$(BUILD)/obj/%.o)
PARITY_SRC := $(sort $(wildcard tests/parity/*.c))
PARITY_OBJ := $(PARITY_SRC:%.c=$(BUILD)/obj/%.o)
DEPS := $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(TOOL_OBJ:.o=.d) $(PARITY_OBJ:.o=.d)
-include src/backend/cuda/cuda.mk
include src/backend/webgpu/webgpu.mk

.PHONY: all lib test test-c test-parity sanitize run bench deps-bench clean deps coverage-table
all: lib $(BUILD)/ctorch $(BUILD)/test_ctorch

lib: $(BUILD)/libctorch.a $(BUILD)/libctorch.so

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libctorch.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libctorch.so: $(LIB_OBJ)
	$(CC) -shared -o $@ $^ $(LDLIBS)

$(BUILD)/ctorch: $(TOOL_OBJ) $(BUILD)/libctorch.a
	$(CC) $(CFLAGS) -o $@ $(TOOL_OBJ) $(BUILD)/libctorch.a $(LDLIBS)

$(BUILD)/test_ctorch: $(TEST_OBJ) $(BUILD)/libctorch.a
	$(CC) $(CFLAGS) -o $@ $(TEST_OBJ) $(BUILD)/libctorch.a $(LDLIBS)

# The parity harness (tests/parity/harness.c) and every family's runners (run_<family>.c).
$(BUILD)/test_parity: $(PARITY_OBJ) $(BUILD)/libctorch.a
	$(CC) $(CFLAGS) -o $@ $(PARITY_OBJ) $(BUILD)/libctorch.a $(LDLIBS)

# Debian packages the tests need (PyTorch 1.13 is the reference for parity).
deps:
	@tools/install_deps.sh

test: deps all
	$(BUILD)/test_ctorch
	tests/test_io.sh $(BUILD)
	tests/test_train_cnn.sh $(BUILD)
	tests/test_train_gpt.sh $(BUILD)
	tools/readme_ops.sh $(BUILD) --check
	$(MAKE) --no-print-directory test-parity
	$(MAKE) --no-print-directory test-python

test-c: all
	$(BUILD)/test_ctorch

# Values and gradients of every op against PyTorch: fixtures from tests/parity/gen_fixtures.py.
test-parity: all $(BUILD)/test_parity
	@CT_PARITY_NO_MAKE=1 tests/parity/run.sh $(BUILD)

sanitize:
	$(MAKE) --no-print-directory BUILD=build/sanitize CC=clang-14 OPT=-O1 \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
	  build/sanitize/test_ctorch build/sanitize/ctorch build/sanitize/test_parity
	CT_NO_CACHE=1 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 build/sanitize/test_ctorch
	CT_NO_CACHE=1 CT_PARITY_NO_MAKE=1 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 tests/parity/run.sh build/sanitize

# trains a small GPT on the built-in text (ctorch train-gpt --help) and prints a sample
run: all
	$(BUILD)/ctorch train-gpt

# OpenBLAS is a peer in the benchmark only (never linked into the library).
$(BUILD)/bench_ctorch: bench/bench_main.c $(wildcard bench/*.inc.c) $(BUILD)/libctorch.a
	@if { [ -f /usr/include/x86_64-linux-gnu/cblas.h ] || [ -f /usr/include/cblas.h ]; } && \
	    echo 'int main(void){return 0;}' | $(CC) -x c - -o /dev/null -lopenblas 2>/dev/null; then \
	  blas="-DCT_BENCH_OPENBLAS"; blaslib="-lopenblas"; fi; \
	echo $(CC) $(CFLAGS_BASE) $(CFLAGS) $$blas -o $@ $< $(BUILD)/libctorch.a $$blaslib $(LDLIBS); \
	$(CC) $(CFLAGS_BASE) $(CFLAGS) $$blas -o $@ $< $(BUILD)/libctorch.a $$blaslib $(LDLIBS)

# What the benchmark's peers need: OpenBLAS (the PyTorch peer comes with `make deps`).
deps-bench:
	@dpkg -s libopenblas-dev >/dev/null 2>&1 || apt-get install -y --no-install-recommends libopenblas-dev

bench: deps-bench all $(BUILD)/bench_ctorch
	$(BUILD)/bench_ctorch --json $(BUILD)/bench.json

coverage-table: all
	$(BUILD)/ctorch ops --markdown

clean:
	rm -rf $(BUILD)

# libFuzzer targets for the safetensors and IDX/gzip readers (tests/fuzz/fuzz_*.c), FUZZ_TIME seconds each;
# not part of `make test` (the damaged-file corpus is replayed there by the C tests).
# New inputs go to build/fuzz/corpus_*; crashes to build/fuzz/crash-* (add them to the corpus).
FUZZ_TIME ?= 60
.PHONY: fuzz
fuzz:
	$(MAKE) --no-print-directory BUILD=build/fuzz CC=clang-14 OPT=-O1 \
	  CFLAGS="-O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
	  build/fuzz/libctorch.a
	@set -e; for t in safetensors header idx; do \
	  clang-14 $(CFLAGS_BASE) -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	    -o build/fuzz/fuzz_$$t tests/fuzz/fuzz_$$t.c build/fuzz/libctorch.a $(LDLIBS); \
	  mkdir -p build/fuzz/corpus_$$t; \
	  seeds=tests/fuzz/seeds/$$t; [ $$t = safetensors ] && seeds="$$seeds tests/fuzz/damaged"; \
	  [ $$t = idx ] && seeds="$$seeds tests/fuzz/damaged_idx"; \
	  echo "== fuzz_$$t for $(FUZZ_TIME) s"; \
	  build/fuzz/fuzz_$$t -max_total_time=$(FUZZ_TIME) -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
	    -dict=tests/fuzz/safetensors.dict -artifact_prefix=build/fuzz/ -print_final_stats=1 \
	    build/fuzz/corpus_$$t $$seeds; \
	done

# ---- Python extension: `import ctorch` (PYTHONPATH=$(BUILD)/python-ext) ----
# The C extension links libctorch.a statically; the package's .py files are copied beside it.
PY_CONFIG ?= /usr/bin/python3-config
PY_INCLUDES := $(shell $(PY_CONFIG) --includes 2>/dev/null)
PY_EXT_SUFFIX := $(shell $(PY_CONFIG) --extension-suffix 2>/dev/null)
PYEXT_DIR := $(BUILD)/python-ext
PYEXT_SRC := $(sort $(wildcard python/ctorch/_C/*.c))
PYEXT_OBJ := $(PYEXT_SRC:%.c=$(BUILD)/obj/%.o)
PY_FILES := $(shell find python/ctorch -name '*.py' 2>/dev/null | sort)
PY_FILES_OUT := $(PY_FILES:python/%=$(PYEXT_DIR)/%)
DEPS += $(PYEXT_OBJ:.o=.d)
.PHONY: python test-python
$(PYEXT_OBJ): CFLAGS_BASE += $(PY_INCLUDES)
python: $(PYEXT_DIR)/ctorch/_C$(PY_EXT_SUFFIX) $(PY_FILES_OUT)
$(PYEXT_DIR)/ctorch/_C$(PY_EXT_SUFFIX): $(PYEXT_OBJ) $(BUILD)/libctorch.a
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(PYEXT_OBJ) $(BUILD)/libctorch.a $(LDLIBS)
$(PYEXT_DIR)/ctorch/%.py: python/ctorch/%.py
	@mkdir -p $(dir $@)
	cp $< $@
ifneq ($(PY_INCLUDES),)
all: python
endif
# ctorch against PyTorch in one pytest process (values, dtypes, reprs, errors, whole programs).
# Each suite's passed/total goes to $(BUILD)/conformance.json; README's conformance table must list
# the same suites (tools/readme_conformance.py $(BUILD) regenerates it).
test-python: python
	CTORCH_CONFORMANCE=$(BUILD)/conformance.json PYTHONPATH=$(PYEXT_DIR) /usr/bin/python3 -m pytest -q tests/python
	/usr/bin/python3 tools/readme_conformance.py $(BUILD) --check

# `pip install .` offline into a temporary target with Debian's python3, then a small training program run
# with the installed copy must print what PyTorch prints (issue 4; a few minutes: the whole library compiles)
.PHONY: test-pip
test-pip: deps
	tests/pip/pip_install_check.sh

-include $(DEPS)

# WebAssembly build, JS API and pages: make wasm / make test-wasm (web/wasm.mk)
include web/wasm.mk
