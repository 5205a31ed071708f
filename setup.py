"""Offline `pip install .` of ctorch: the C library and the extension compiled together by setuptools.

No downloads: it uses the setuptools that Debian ships (python3-setuptools); keep this project
without a pyproject.toml so pip does not create an isolated build environment.
"""
import glob
import os

from setuptools import Extension, setup

ROOT = os.path.dirname(os.path.abspath(__file__))


def rel(paths):
    return sorted(os.path.relpath(p, ROOT) for p in paths)


sources = rel(glob.glob(os.path.join(ROOT, "python", "ctorch", "_C", "*.c")) +
              glob.glob(os.path.join(ROOT, "src", "**", "*.c"), recursive=True))

ext = Extension(
    "ctorch._C",
    sources=sources,
    include_dirs=["include", "src"],
    define_macros=[("_GNU_SOURCE", None)],
    extra_compile_args=["-std=c11", "-O2", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
    libraries=["m", "pthread"],
)

setup(
    name="ctorch",
    version="0.1.0",
    description="PyTorch's semantics in C11, with PyTorch's Python API",
    package_dir={"": "python"},
    packages=["ctorch", "ctorch.autograd", "ctorch.nn", "ctorch.nn.utils", "ctorch.optim", "ctorch.utils",
              "ctorch.utils.data"],
    ext_modules=[ext],
    python_requires=">=3.8",
)
