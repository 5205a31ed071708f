#!/bin/bash
# One device-machine call for the byte-level GPT step on WebGPU (issue 9, session 8): runs
# prebuilt, stripped binaries (built here with CT_CUDA=0, packed as build/wgpu8g-carry.tar.xz:
# test_ctorch, bench_webgpu) so the call spends no device time compiling. Carry .gl (the Vulkan
# loader debs), the tarball and Dawn's libwebgpu_wrapper.so (see bench/webgpu_h200.sh).
# Runs `test_ctorch webgpu`, the GPT step with the explicit masked softmax (the peer's; with the
# per-dispatch profile), again without split-K, and with the WGSL FlashAttention (--attn flash),
# then the PyTorch CUDA eager peer (explicit attention, then F.scaled_dot_product_attention).
# Output: stdout and $OUT/*.txt.
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
B=build/wgpu8g-dev
mkdir -p $B && tar -C $B -xJf build/wgpu8g-carry.tar.xz || exit 1
S=${WG8_STEPS:-30}
if [ "${WG_TESTS:-1}" = 1 ]; then
  timeout 150 $B/test_ctorch webgpu 2>&1 | grep -v "^Warning\|vkCreate\|CheckVk\|^$" | tail -25 | tee $O/tests.txt
fi
# the explicit attention (the PyTorch peer's), with the per-dispatch profile; then split-K off (A/B);
# then the WGSL FlashAttention
timeout 120 $B/bench_webgpu --no-mm --steps $S --profile 2>&1 | tee $O/gpt_composed.txt
echo "== A/B: CT_WEBGPU_SPLITK=0 =="
CT_WEBGPU_SPLITK=0 timeout 90 $B/bench_webgpu --no-mm --steps $S 2>&1 | grep "webgpu capt\|FAIL" | tee $O/gpt_nosplit.txt
echo "== --attn flash =="
timeout 90 $B/bench_webgpu --no-mm --steps $S --attn flash 2>&1 | grep "webgpu capt\|FAIL" | tee $O/gpt_flash.txt
[ "${WG_TORCH:-1}" = 1 ] && PYTHONUNBUFFERED=1 timeout 120 python3 bench/bench_webgpu_torch.py --no-mm --sdpa --steps $S 2>&1 | tee $O/torch.txt
