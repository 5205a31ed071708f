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

.PHONY: all lib test test-c test-parity sanitize run bench clean deps coverage-table
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
	tools/readme_ops.sh $(BUILD) --check
	$(MAKE) --no-print-directory test-parity

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

run: all
	$(BUILD)/ctorch demo

$(BUILD)/bench_ctorch: bench/bench_main.c $(BUILD)/libctorch.a
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(BUILD)/libctorch.a $(LDLIBS)

bench: all $(BUILD)/bench_ctorch
	$(BUILD)/bench_ctorch --json $(BUILD)/bench.json

coverage-table: all
	$(BUILD)/ctorch ops --markdown

clean:
	rm -rf $(BUILD)

-include $(DEPS)
