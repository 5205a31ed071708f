# The WebGPU backend (src/backend/webgpu, included by the Makefile). Its C files are
# compiled into every native build; Dawn is loaded with dlopen at run time, so nothing
# links against it. `make webgpu-deps` (run by `make test`) installs Dawn from npm
# (bun-webgpu-linux-x64 0.1.7: libwebgpu_wrapper.so, a mid-2025 Dawn with no SONAME)
# into $(WEBGPU_DAWN_DIR), plus the Vulkan loader; the library's absolute path is
# compiled in as the default (CT_WEBGPU_LIB overrides it at run time). Without a GPU,
# Chromium's SwiftShader ICD runs the tests (apt-get install chromium).
WEBGPU_DAWN_DIR ?= build/webgpu-dawn
WEBGPU_DAWN_PKG := bun-webgpu-linux-x64@0.1.7
WEBGPU_LIB := $(WEBGPU_DAWN_DIR)/node_modules/bun-webgpu-linux-x64/libwebgpu_wrapper.so

ct_webgpu_goal := $(.DEFAULT_GOAL)
$(BUILD)/obj/src/backend/webgpu/%.o: CFLAGS_BASE += -DCT_WEBGPU_DEFAULT_LIB='"$(abspath $(WEBGPU_LIB))"'
LDLIBS += -ldl

.PHONY: webgpu-deps
webgpu-deps:
	@if [ ! -f $(WEBGPU_LIB) ]; then \
	  mkdir -p $(WEBGPU_DAWN_DIR) && \
	  { npm install --prefix $(WEBGPU_DAWN_DIR) --no-audit --no-fund --no-save $(WEBGPU_DAWN_PKG) || \
	    echo "webgpu-deps: npm install of $(WEBGPU_DAWN_PKG) failed: the WebGPU tests will skip"; }; fi
	@ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1' || apt-get install -y --no-install-recommends libvulkan1 || \
	  echo "webgpu-deps: no Vulkan loader (libvulkan1): the WebGPU tests will skip"
	@[ -f /usr/lib/chromium/vk_swiftshader_icd.json ] || \
	  echo "webgpu-deps: no SwiftShader (/usr/lib/chromium/vk_swiftshader_icd.json; apt-get install chromium): without a GPU the WebGPU tests will skip"
test: webgpu-deps
.DEFAULT_GOAL := $(ct_webgpu_goal)
