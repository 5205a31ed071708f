#!/bin/bash
# Packs what bench/webgpu_h200.sh needs on the device machine, built here (no build there):
# BUILD/{bench_webgpu,test_ctorch} stripped and Dawn's libwebgpu_wrapper.so, in build/<name>-carry.tar.xz
# (one folder <name>-dev/). Usage: bench/webgpu_carry.sh BUILD NAME   (e.g. build/wgpu8 wgpu8)
# Then: run(carry=[".gl", "build/NAME-carry.tar.xz"],
#           command="WG_CARRY=build/NAME-carry.tar.xz WG_MODELS=1 bash bench/webgpu_h200.sh --no-mm --no-gpt")
set -eu
B=${1:?build dir}; N=${2:?name}
DAWN=build/webgpu-dawn/node_modules/bun-webgpu-linux-x64/libwebgpu_wrapper.so
make BUILD=$B -j2 $B/test_ctorch $B/libctorch.a >/dev/null
# the library may carry the CUDA backend (then cudart is linked statically)
extra=""; nm $B/libctorch.a 2>/dev/null | grep -q " U cudaMalloc" && extra="-L/usr/local/cuda/lib64 -lcudart_static -lrt -lstdc++"
cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -o $B/bench_webgpu bench/bench_webgpu.c $B/libctorch.a -lm -lpthread -ldl $extra
D=build/$N-dev
rm -rf $D && mkdir -p $D/webgpu-dawn
strip -o $D/bench_webgpu $B/bench_webgpu
strip -o $D/test_ctorch $B/test_ctorch
cp $DAWN $D/webgpu-dawn/
rm -f build/$N-carry.tar.xz
tar -C build -cJf build/$N-carry.tar.xz $N-dev
ls -la build/$N-carry.tar.xz
