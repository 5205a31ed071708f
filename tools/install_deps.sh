#!/bin/sh
# Installs the Debian packages the test suites need, when missing (CI machines are fresh).
set -e
need=""
/usr/bin/python3 -c 'import torch' 2>/dev/null || need="$need python3-torch"
/usr/bin/python3 -c 'import numpy' 2>/dev/null || need="$need python3-numpy"
/usr/bin/python3 -c 'import pytest' 2>/dev/null || need="$need python3-pytest"
# make test-pip: `pip install .` with Debian's pip and setuptools
/usr/bin/python3 -m pip --version >/dev/null 2>&1 || need="$need python3-pip"
/usr/bin/python3 -c 'import setuptools' 2>/dev/null || need="$need python3-setuptools"
[ -e /usr/bin/python3-config ] && [ -n "$(/usr/bin/python3-config --includes 2>/dev/null)" ] || need="$need python3-dev"
command -v clang-14 >/dev/null 2>&1 || need="$need clang-14"
[ -e /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.asan-x86_64.a ] || need="$need libclang-rt-14-dev"
if [ -n "$need" ]; then
  echo "installing:$need"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need >/dev/null
fi
