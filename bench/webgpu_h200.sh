#!/bin/bash
# One device-machine call for the WebGPU backend on an NVIDIA GPU (issue 9): builds the library
# without CUDA (-j16), runs the WebGPU C tests on the GPU's Vulkan driver, then
# bench/bench_webgpu.c and its PyTorch CUDA peer bench/bench_webgpu_torch.py. Expects the
# Vulkan loader debs (WG_TESTS=0 / WG_TORCH=0 skip the tests / the peer; WG_MODELS=1 adds the ResNet
# step and the ResNet/ViT inference (WG_MODEL_ARGS adds arguments, e.g. --profile; WG_TORCH_ARGS=--models for
# their peers; WG_AB=1 also runs
# them with session 6's kernels for an A/B);
# WG_BENCH_S limits the bench, default 240 s) in .gl/ and Dawn in build/webgpu-dawn (both carried; see
# /work/.library/device/README.md). Output: stdout, and $OUT/*.txt when $OUT is set.
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
if ! ls /usr/share/vulkan/icd.d/*nvidia* /etc/vulkan/icd.d/*nvidia* >/dev/null 2>&1; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
export CT_WEBGPU_LIB=$PWD/build/webgpu-dawn/node_modules/bun-webgpu-linux-x64/libwebgpu_wrapper.so
export CT_WEBGPU_NO_SWIFTSHADER=1
O=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
B=build/h200
# WG_CARRY=file.tar.xz: binaries built elsewhere (bench_webgpu, test_ctorch and, under
# webgpu-dawn/, Dawn's libwebgpu_wrapper.so, in one folder <dir>/), unpacked into build/: no build here
if [ -n "${WG_CARRY:-}" ]; then
  d=$(tar -tJf "$WG_CARRY" | head -1 | cut -d/ -f1)
  tar -C build -xJf "$WG_CARRY" || exit 1
  B=build/$d
  [ -f $B/webgpu-dawn/libwebgpu_wrapper.so ] && export CT_WEBGPU_LIB=$PWD/$B/webgpu-dawn/libwebgpu_wrapper.so
  # the SM clock every 200 ms while the benchmarks run (does it ramp up for short dispatches?)
  [ "${WG_CLOCKS:-0}" = 1 ] && { nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,utilization.gpu --format=csv,noheader -lms 200 >$O/clocks.txt 2>&1 & }
elif ! make BUILD=$B CT_CUDA=0 -j16 lib >$O/build.txt 2>&1; then tail -30 $O/build.txt; exit 1
else
  cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -o $B/bench_webgpu bench/bench_webgpu.c $B/libctorch.a -lm -lpthread -ldl || exit 1
fi
if [ "${WG_TESTS:-1}" != 1 ]; then echo "WebGPU tests skipped (WG_TESTS=0)"
elif [ -n "${WG_CARRY:-}" ]; then # WG_TEST_FILTER: a subset (e.g. webgpu9)
  timeout ${WG_TEST_S:-150} $B/test_ctorch ${WG_TEST_FILTER:-webgpu} 2>&1 | grep -v "^Warning\|vkCreate\|CheckVk\|^$" | tail -25 | tee $O/tests.txt
elif make BUILD=$B CT_CUDA=0 -j16 $B/test_ctorch >>$O/build.txt 2>&1; then
  timeout 150 $B/test_ctorch webgpu 2>&1 | grep -v "^Warning\|vkCreate\|CheckVk\|^$" | tail -25 | tee $O/tests.txt
else echo "test_ctorch did not build (see build.txt)"; fi
timeout ${WG_BENCH_S:-240} $B/bench_webgpu "$@" 2>&1 | tee $O/bench_webgpu.txt
# WG_MODELS=1: the model targets too, each in its own process (a failure in one keeps the others)
if [ "${WG_MODELS:-0}" = 1 ]; then
  for m in --resnet-step --infer; do
    timeout 150 $B/bench_webgpu --no-mm --no-gpt $m ${WG_MODEL_ARGS:-} 2>&1 | tee -a $O/bench_webgpu.txt
  done
  # WG_AB=1: the same with session 6's kernels (Dawn's bounds clamps and workgroup zeroing,
  # 16x16 conv tiles, SGD as separate ops), in the same call
  if [ "${WG_AB:-0}" = 1 ]; then
    echo "== A/B: CT_WEBGPU_ROBUST=1 CT_WEBGPU_CONV_T=1 CT_WEBGPU_SGD_REF=1 =="
    CT_WEBGPU_ROBUST=1 CT_WEBGPU_CONV_T=1 CT_WEBGPU_SGD_REF=1 timeout 150 $B/bench_webgpu --no-mm --no-gpt --models 2>&1 |
      grep "webgpu \|FAIL" | tee -a $O/bench_webgpu.txt
  fi
fi
[ "${WG_TORCH:-1}" = 1 ] && PYTHONUNBUFFERED=1 timeout 150 python3 bench/bench_webgpu_torch.py ${WG_TORCH_ARGS:-} 2>&1 | tee $O/bench_torch.txt
[ -n "$(jobs -p)" ] && kill $(jobs -p) 2>/dev/null # the clock sampler
true
