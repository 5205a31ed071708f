# The browser build of the WebGPU backend (issue 9, part 3), included by web/wasm.mk.
#   make wasm-webgpu           the test module: ctorch (the CPU wasm build's objects) with the
#                              WebGPU backend compiled for the browser (-DCT_WEBGPU_BROWSER) on
#                              src/backend/webgpu/webgpu_shim.js (webgpu.h on navigator.gpu),
#                              ASYNCIFY so that read-backs wait for the GPU, plus the C tests of
#                              tests/c/test_webgpu.c and web/webgpu/wg_browser.c, and the MLP
#                              training demo of web/webgpu.html (web/webgpu/wg_demo.c) and the
#                              pages' WebGPU switch (web/webgpu/wg_pages.c, web/webgpu/switch.mjs);
#                              $(WGB_DIR)/pkg holds the CPU package (links into build/wasm/pkg)
#                              beside this module, so web/gpt.html can load both
#   make test-webgpu-browser   those tests in headless Chromium on its SwiftShader adapter (the
#                              same kernels compared with the CPU in the same wasm module, at the
#                              native suite's tolerances), then once more with WebGPU disabled
#                              (the fallback to WebAssembly); prints "N passed, M failed"
# The CPU-only wasm build (make wasm) is not changed by any of this.
WGB_DIR := $(WASM_DIR)-webgpu
WGB_BACKEND_SRC := src/backend/webgpu/webgpu_device.c src/backend/webgpu/webgpu_kernels.c
WGB_SHIM := src/backend/webgpu/webgpu_shim.js
WGB_TEST_SRC := tests/c/main.c tests/c/test_webgpu.c web/webgpu/wg_browser.c web/webgpu/wg_demo.c web/webgpu/wg_pages.c
WGB_OBJ := $(WGB_BACKEND_SRC:%.c=$(WGB_DIR)/%.o) $(WGB_TEST_SRC:%.c=$(WGB_DIR)/%.o)
# the library compiled here too (single-thread, without -mbulk-memory: emscripten 3.1.6's
# wasm-ld refuses thread-local storage with bulk memory unless the module uses atomics)
WGB_CFLAGS := $(filter-out -mbulk-memory,$(WASM_CFLAGS))
WGB_LIB_OBJ := $(filter-out $(WGB_BACKEND_SRC:%.c=$(WGB_DIR)/%.o),$(WASM_LIB_SRC:%.c=$(WGB_DIR)/%.o))
WGB_LINK_OPT ?= -O2
WGB_LDFLAGS := $(WGB_LINK_OPT) -msimd128 -sMODULARIZE=1 -sEXPORT_ES6=1 -sEXPORT_NAME=createCtorchWebGPUTest \
  -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB -sINITIAL_MEMORY=64MB -sABORTING_MALLOC=0 -sTOTAL_STACK=8MB \
  -sENVIRONMENT=web -sASYNCIFY=1 '-sASYNCIFY_IMPORTS=["wgpuInstanceProcessEvents"]' -sASYNCIFY_STACK_SIZE=1048576 \
  --js-library $(WGB_SHIM) -sEXPORTED_FUNCTIONS=_ctwg_run,_ctwg_available,_ctwg_reason,_ctwg_adapter,_ctwg_demo_begin,_ctwg_demo_step,_ctwg_demo_end,_ctwg_last_error,_ctwg_counter,_ctwg_gpt_begin,_ctwg_gpt_step,_ctwg_gpt_end,_ctwg_gpt_num_params,_ctwg_gpt_param_name,_ctwg_gpt_param_numel,_ctwg_gpt_param_copy,_ctwg_cnn_begin,_ctwg_cnn_end,_ctwg_cnn_num_params,_ctwg_cnn_param_numel,_ctwg_cnn_param_io,_ctwg_cnn_step,_malloc,_free \
  -sEXPORTED_RUNTIME_METHODS=ccall,UTF8ToString

$(WGB_DIR)/src/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(EMCC) $(WGB_CFLAGS) -DCT_WEBGPU_BROWSER -MMD -MP -c $< -o $@
$(WGB_DIR)/tests/c/main.o: tests/c/main.c
	@mkdir -p $(dir $@)
	$(EMCC) $(WGB_CFLAGS) -Dmain=ctwg_c_main -MMD -MP -c $< -o $@
$(WGB_DIR)/tests/c/%.o: tests/c/%.c
	@mkdir -p $(dir $@)
	$(EMCC) $(WGB_CFLAGS) -MMD -MP -c $< -o $@
$(WGB_DIR)/web/webgpu/%.o: web/webgpu/%.c
	@mkdir -p $(dir $@)
	$(EMCC) $(WGB_CFLAGS) -Itests/c -MMD -MP -c $< -o $@

$(WGB_DIR)/ctorch-webgpu-test.mjs: $(WGB_OBJ) $(WGB_LIB_OBJ) $(WGB_SHIM)
	$(EMCC) $(WGB_LDFLAGS) -o $@ $(WGB_OBJ) $(WGB_LIB_OBJ)

.PHONY: wasm-webgpu test-webgpu-browser
wasm-webgpu: $(WGB_DIR)/ctorch-webgpu-test.mjs
	@mkdir -p $(WGB_DIR)/pkg && for f in $(WASM_DIR)/pkg/* $(WGB_DIR)/ctorch-webgpu-test.*; do \
	  ln -sfn $(abspath $$f) $(WGB_DIR)/pkg/; done
test-webgpu-browser: wasm wasm-webgpu $(WASM_DIR)/tools/node_modules/playwright-core/package.json
	node web/test/run_webgpu_tests.mjs

-include $(WGB_OBJ:.o=.d) $(WGB_LIB_OBJ:.o=.d)
