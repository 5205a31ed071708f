# The WebAssembly build (issue 8), included by the Makefile.
#   make wasm       the library compiled by emscripten twice: single-thread (ctorch-st) and
#                   pthreads (ctorch-mt), both with wasm SIMD128, as ES modules, plus the JS API
#                   (web/js) assembled into an npm package under build/wasm/pkg
#   make test-wasm  the JS API tests in Node, then the core parity fixtures against the wasm
#                   build (tests/parity/harness.c + run_*.c compiled by emcc, run by Node)
#   make test-wasm-pages   the pages end to end in headless Chromium (playwright-core)
#   make wasm-pack  npm pack of build/wasm/pkg
# Needs Debian's emscripten 3.1.6 (apt-get install emscripten); it needs NODE_PATH with Node 20.
WASM_DIR ?= build/wasm
# emscripten 3.1.6 runs its JS compiler with Node 20 only with Debian's node modules on NODE_PATH
# (set for emcc/emar only, not exported to the rest of the build)
WASM_NODE_PATH ?= /usr/share/nodejs
EMCC ?= NODE_PATH=$(WASM_NODE_PATH) emcc
EMAR ?= NODE_PATH=$(WASM_NODE_PATH) emar
WASM_OPT ?= -O3
WASM_CFLAGS := -std=c11 -D_GNU_SOURCE -Iinclude -Isrc $(WASM_OPT) -msimd128 -Wall -Wextra \
  -Wno-unused-parameter -Wno-missing-field-initializers -Wno-unused-command-line-argument
# The same sources as the native library (the CUDA backend's C part compiles to stubs there).
WASM_LIB_SRC := $(LIB_SRC)
WASM_GLUE_SRC := $(sort $(wildcard web/src/*.c))
WASM_ST_OBJ := $(WASM_LIB_SRC:%.c=$(WASM_DIR)/st/%.o)
WASM_MT_OBJ := $(WASM_LIB_SRC:%.c=$(WASM_DIR)/mt/%.o)
WASM_GLUE_ST := $(WASM_GLUE_SRC:%.c=$(WASM_DIR)/st/%.o)
WASM_GLUE_MT := $(WASM_GLUE_SRC:%.c=$(WASM_DIR)/mt/%.o)
WASM_PARITY_OBJ := $(PARITY_SRC:%.c=$(WASM_DIR)/st/%.o)
WASM_PKG := $(WASM_DIR)/pkg

# Linking: ES module factories (createCtorch), growable memory up to wasm32's 4 GiB with malloc
# returning NULL (ctorch then reports "out of memory") instead of aborting.
WASM_LDFLAGS := $(WASM_OPT) -msimd128 -sMODULARIZE=1 -sEXPORT_ES6=1 -sEXPORT_NAME=createCtorch \
  -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB -sINITIAL_MEMORY=64MB -sABORTING_MALLOC=0 \
  -sTOTAL_STACK=8MB -sENVIRONMENT=web,worker,node \
  -sEXPORTED_FUNCTIONS=_malloc,_free \
  -sEXPORTED_RUNTIME_METHODS=stringToUTF8,UTF8ToString,lengthBytesUTF8 \
  --extern-pre-js web/src/extern-pre.js
# The pool of workers is created at load time (a worker started later could not start while the
# main thread waits for it); its size comes from the loader (web/js/index.mjs).
WASM_MT_LDFLAGS := -pthread -sPTHREAD_POOL_SIZE=Module.ctorchPoolSize -Wno-pthreads-mem-growth

WASM_JS := $(sort $(wildcard web/js/*.mjs web/js/*.d.ts))
WASM_PKG_FILES := $(WASM_JS:web/js/%=$(WASM_PKG)/%) $(WASM_PKG)/package.json $(WASM_PKG)/README.md
# The declarations also as index.d.mts, which package.json "exports" names: TypeScript's node16/
# nodenext resolution reads a .d.ts of a package without "type": "module" as CommonJS, so
# `import load from 'ctorch'` would not type-check against index.mjs (an ES module).
WASM_PKG_FILES += $(WASM_PKG)/index.d.mts

.PHONY: wasm test-wasm test-wasm-api test-wasm-parity test-wasm-pages wasm-pack wasm-clean wasm-serve
wasm: $(WASM_PKG)/ctorch-st.mjs $(WASM_PKG)/ctorch-mt.mjs $(WASM_PKG_FILES)

$(WASM_DIR)/st/%.o: %.c
	@mkdir -p $(dir $@)
	$(EMCC) $(WASM_CFLAGS) -MMD -MP -c $< -o $@
$(WASM_DIR)/mt/%.o: %.c
	@mkdir -p $(dir $@)
	$(EMCC) $(WASM_CFLAGS) -pthread -MMD -MP -c $< -o $@

$(WASM_DIR)/libctorch-st.a: $(WASM_ST_OBJ)
	@rm -f $@
	$(EMAR) rcs $@ $^
$(WASM_DIR)/libctorch-mt.a: $(WASM_MT_OBJ)
	@rm -f $@
	$(EMAR) rcs $@ $^

$(WASM_PKG)/ctorch-st.mjs: $(WASM_GLUE_ST) $(WASM_DIR)/libctorch-st.a web/src/extern-pre.js
	@mkdir -p $(dir $@)
	$(EMCC) $(WASM_LDFLAGS) -o $@ $(WASM_GLUE_ST) $(WASM_DIR)/libctorch-st.a
$(WASM_PKG)/ctorch-mt.mjs: $(WASM_GLUE_MT) $(WASM_DIR)/libctorch-mt.a web/src/extern-pre.js
	@mkdir -p $(dir $@)
	$(EMCC) $(WASM_LDFLAGS) $(WASM_MT_LDFLAGS) -o $@ $(WASM_GLUE_MT) $(WASM_DIR)/libctorch-mt.a

$(WASM_PKG)/%: web/js/%
	@mkdir -p $(dir $@)
	cp $< $@
$(WASM_PKG)/index.d.mts: web/js/index.d.ts
	@mkdir -p $(dir $@)
	cp $< $@
$(WASM_PKG)/package.json: web/package.json
	@mkdir -p $(dir $@)
	cp $< $@
$(WASM_PKG)/README.md: web/README.md
	@mkdir -p $(dir $@)
	cp $< $@

# The parity harness as a Node program reading the fixture file through the host file system.
$(WASM_DIR)/test_parity.js: $(WASM_PARITY_OBJ) $(WASM_DIR)/libctorch-st.a web/src/node-pre.js
	$(EMCC) $(WASM_OPT) -msimd128 -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB -sABORTING_MALLOC=0 \
	  -sTOTAL_STACK=8MB -sNODERAWFS=1 -sENVIRONMENT=node -sEXIT_RUNTIME=1 --pre-js web/src/node-pre.js \
	  -o $@ $(WASM_PARITY_OBJ) $(WASM_DIR)/libctorch-st.a

# TypeScript (npm) so the npm package's declarations are type-checked in CI too
test-wasm: wasm $(WASM_DIR)/test_parity.js $(WASM_DIR)/parity/fixtures.bin $(WASM_DIR)/tools/node_modules/typescript/package.json
	node web/test/run_tests.mjs

test-wasm-api: wasm
	node web/test/run_api_tests.mjs

# The same fixtures as `make test-parity` (PyTorch 1.13 via /usr/bin/python3), run by the wasm
# build in Node. A case the generator could not build is written as a failing record, so the
# generator's own exit status is not needed here.
PARITY_CASES := $(wildcard tests/parity/*.py)
$(WASM_DIR)/parity/fixtures.bin: $(PARITY_CASES)
	@mkdir -p $(WASM_DIR)/parity
	/usr/bin/python3 tests/parity/gen_fixtures.py $(WASM_DIR)/parity > $(WASM_DIR)/parity/gen.log 2>&1 || true
	@test -f $@ || { echo "parity fixtures were not written (see $(WASM_DIR)/parity/gen.log)"; exit 1; }
test-wasm-parity: $(WASM_DIR)/test_parity.js $(WASM_DIR)/parity/fixtures.bin
	node $(WASM_DIR)/test_parity.js -f $(WASM_DIR)/parity/fixtures.bin

# playwright-core (npm) drives Debian's chromium; installed once under build/wasm/tools
$(WASM_DIR)/tools/node_modules/playwright-core/package.json:
	@mkdir -p $(WASM_DIR)/tools
	@[ -f $(WASM_DIR)/tools/package.json ] || echo '{"private": true}' > $(WASM_DIR)/tools/package.json
	cd $(WASM_DIR)/tools && npm install --no-audit --no-fund playwright-core

test-wasm-pages: wasm $(WASM_DIR)/tools/node_modules/playwright-core/package.json
	node web/test/run_page_tests.mjs

wasm-pack: wasm
	cd $(WASM_PKG) && npm pack --pack-destination ..

# The package as a user gets it: npm pack, installed from the tarball into a fresh project, run by
# its name in Node, and its declarations type-checked by TypeScript (npm, under build/wasm/tools).
.PHONY: test-wasm-pkg
$(WASM_DIR)/tools/node_modules/typescript/package.json:
	@mkdir -p $(WASM_DIR)/tools
	@[ -f $(WASM_DIR)/tools/package.json ] || echo '{"private": true}' > $(WASM_DIR)/tools/package.json
	cd $(WASM_DIR)/tools && npm install --no-audit --no-fund typescript@5
test-wasm-pkg: wasm $(WASM_DIR)/tools/node_modules/typescript/package.json
	node web/test/pkg_test.mjs

wasm-serve: wasm
	node web/server.mjs

wasm-clean:
	rm -rf $(WASM_DIR)

-include $(WASM_ST_OBJ:.o=.d) $(WASM_MT_OBJ:.o=.d) $(WASM_GLUE_ST:.o=.d) $(WASM_GLUE_MT:.o=.d) $(WASM_PARITY_OBJ:.o=.d)

# Native ctorch on the benchmark page's training workloads, for wasm/native ratios.
.PHONY: wasm-native-bench
wasm-native-bench:
	$(MAKE) --no-print-directory BUILD=$(WASM_DIR)-native $(WASM_DIR)-native/libctorch.a
	$(CC) $(CFLAGS_BASE) -O2 -o $(WASM_DIR)-native/bench_native web/native/bench_native.c $(WASM_DIR)-native/libctorch.a $(LDLIBS)
	$(WASM_DIR)-native/bench_native

# Debian packages of the wasm build and the page tests (emscripten 3.1.6, chromium).
.PHONY: wasm-deps
wasm-deps:
	@command -v emcc >/dev/null 2>&1 || apt-get install -y emscripten
	@command -v chromium >/dev/null 2>&1 || apt-get install -y chromium

# What `make test-wasm` needs on a fresh Debian machine (CI): emscripten only (chromium is for the
# page tests). Proposed CI step: make wasm-deps-test test-wasm
.PHONY: wasm-deps-test
wasm-deps-test:
	@command -v emcc >/dev/null 2>&1 || { SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq emscripten >/dev/null; }

# The benchmark of issue 8 against the peers, in one headless Chromium page (web/bench_peers.html):
# ONNX Runtime Web on ResNet-18 / ViT-Tiny/16 exported from PyTorch 1.13, TF.js's wasm backend on
# the same two models (built from TF.js ops, web/pages/bench_tfjs_models.mjs) and the MNIST CNN step. The npm packages and the .onnx files go under build/wasm-bench (not committed).
WASM_BENCH_DIR := build/wasm-bench
.PHONY: wasm-bench-deps wasm-bench-peers test-wasm-peers-shim
$(WASM_BENCH_DIR)/node_modules/onnxruntime-web/package.json:
	@mkdir -p $(WASM_BENCH_DIR)
	@[ -f $(WASM_BENCH_DIR)/package.json ] || echo '{"private": true}' > $(WASM_BENCH_DIR)/package.json
	cd $(WASM_BENCH_DIR) && npm install --no-audit --no-fund onnxruntime-web@1.30.0 @tensorflow/tfjs@4.22.0 @tensorflow/tfjs-backend-wasm@4.22.0
$(WASM_BENCH_DIR)/models/resnet18.onnx: bench/wasm_export_onnx.py tests/models_ref.py
	/usr/bin/python3 bench/wasm_export_onnx.py $(WASM_BENCH_DIR)/models
wasm-bench-deps: $(WASM_BENCH_DIR)/node_modules/onnxruntime-web/package.json $(WASM_BENCH_DIR)/models/resnet18.onnx
wasm-bench-peers: wasm wasm-bench-deps $(WASM_DIR)/tools/node_modules/playwright-core/package.json
	node web/bench_peers_run.mjs --threads $(or $(THREADS),2) --iters $(or $(ITERS),5)
# The TF.js Conv2DBackpropFilter shim against TF.js's own CPU kernel (Node).
test-wasm-peers-shim: $(WASM_BENCH_DIR)/node_modules/onnxruntime-web/package.json
	node web/test/peers_shim_test.mjs
# The page's TF.js ResNet-18 / ViT-Tiny (built from TF.js ops) against ctorch's models with the same
# weights (Node, TF.js's wasm backend): the same architecture as the one timed.
.PHONY: test-wasm-peers-tfjs
test-wasm-peers-tfjs: wasm $(WASM_BENCH_DIR)/node_modules/onnxruntime-web/package.json
	node web/test/peers_tfjs_models_test.mjs

# Where the wasm build spends its time: the single-thread build linked with function names, run by
# node --cpu-prof on one benchmark (WHAT=resnet18 by default), summarised by self time.
.PHONY: wasm-profile
wasm-profile: $(WASM_GLUE_ST) $(WASM_DIR)/libctorch-st.a $(WASM_PKG_FILES)
	@mkdir -p $(WASM_DIR)-prof
	cp $(WASM_PKG)/*.mjs $(WASM_PKG)/package.json $(WASM_DIR)-prof/
	$(EMCC) $(WASM_LDFLAGS) --profiling-funcs -o $(WASM_DIR)-prof/ctorch-st.mjs $(WASM_GLUE_ST) $(WASM_DIR)/libctorch-st.a
	rm -f $(WASM_DIR)-prof/*.cpuprofile
	cd $(WASM_DIR)-prof && CTORCH_PKG=$(CURDIR)/$(WASM_DIR)-prof node --cpu-prof --cpu-prof-dir=. $(CURDIR)/web/bench_node.mjs --threads 1 --iters 2 $(or $(WHAT),resnet18)
	node bench/wasm_profile_top.mjs $$(ls $(WASM_DIR)-prof/*.cpuprofile | head -1) 30

# The browser build of the WebGPU backend and its tests (issue 9): make wasm-webgpu, make test-webgpu-browser
include web/wasm-webgpu.mk
