# The optional CUDA backend (included by the Makefile). Where nvcc exists (PATH,
# $CUDA_HOME/bin or /usr/local/cuda/bin) `make` compiles src/backend/cuda/*.cu into
# the library for Hopper (sm_90 machine code plus compute_90 PTX for newer GPUs) and
# registers the backend (CT_HAVE_CUDA); elsewhere nothing changes. CT_CUDA=0 turns it off.
# The CUDA runtime is linked statically (it loads the driver at run time, so binaries
# start where no driver is installed and report "no CUDA device"); cuBLAS is loaded
# with dlopen on the first matrix product.
CT_CUDA ?= 1
CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(shell command -v nvcc 2>/dev/null || { [ -x $(CUDA_HOME)/bin/nvcc ] && echo $(CUDA_HOME)/bin/nvcc; })
ifeq ($(CT_CUDA),0)
NVCC :=
endif

# The runtime library decides, not nvcc alone: nvcc may be a wrapper script
# (/usr/local/bin/nvcc -> /usr/local/cuda-13.0/bin/nvcc), so look for libcudart_static.a
# under $(CUDA_HOME) first, then beside the nvcc found; without it, build for CPU only.
ifneq ($(strip $(NVCC)),)
CUDA_DIR := $(firstword $(foreach d,$(CUDA_HOME) $(patsubst %/bin/nvcc,%,$(NVCC)),\
  $(if $(wildcard $(d)/lib64/libcudart_static.a $(d)/lib/libcudart_static.a),$(d))))
ifeq ($(strip $(CUDA_DIR)),)
$(info cuda.mk: nvcc found ($(NVCC)) but no libcudart_static.a under $(CUDA_HOME) or beside nvcc; building without CUDA)
NVCC :=
endif
endif

ct_cuda_goal := $(.DEFAULT_GOAL)
ifneq ($(strip $(NVCC)),)
CUDA_SRC := $(sort $(wildcard src/backend/cuda/*.cu))
CUDA_OBJ := $(CUDA_SRC:%.cu=$(BUILD)/obj/%.o)
NVCC_FLAGS ?= -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
  -Xcompiler -fPIC -Xcompiler -Wall -Xcompiler -Wno-unused-parameter -Xcompiler -Wno-missing-field-initializers \
  -Xcompiler -Wno-unused-function -diag-suppress 177,550
CFLAGS_BASE += -DCT_HAVE_CUDA
LDLIBS += -L$(CUDA_DIR)/lib64 -L$(CUDA_DIR)/lib -lcudart_static -ldl -lrt -lstdc++
DEPS += $(CUDA_OBJ:.o=.d)

$(BUILD)/obj/src/backend/cuda/%.o: src/backend/cuda/%.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -Iinclude -Isrc -DCT_HAVE_CUDA -MD -MF $(@:.o=.d) -c $< -o $@

$(BUILD)/libctorch.a $(BUILD)/libctorch.so: $(CUDA_OBJ)
endif
# the rules above must not become the default goal: give it back
.DEFAULT_GOAL := $(ct_cuda_goal)
