"""Offline `pip install .` of ctorch: the C library and the extension compiled together by setuptools.

No downloads: it uses the setuptools that Debian ships (python3-setuptools); keep this project
without a pyproject.toml so pip does not create an isolated build environment.
"""
import glob
import os

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

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
    # CTORCH_OPT: the optimisation flag (tests/pip_install_check.sh builds with -O0 to check the install quickly)
    extra_compile_args=["-std=c11", os.environ.get("CTORCH_OPT", "-O2"), "-Wno-unused-parameter",
                        "-Wno-missing-field-initializers"],
    libraries=["m", "pthread"],
)


class ParallelBuildExt(build_ext):
    """Compiles the ~90 C files on every core (setuptools compiles one at a time by default)."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1


setup(
    name="ctorch",
    cmdclass={"build_ext": ParallelBuildExt},
    version="0.1.0",
    description="PyTorch's semantics in C11, with PyTorch's Python API",
    package_dir={"": "python"},
    packages=find_packages("python"),
    ext_modules=[ext],
    python_requires=">=3.8",
)
