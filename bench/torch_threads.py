"""Thread count of the PyTorch peer, OpenBLAS included.

torch.set_num_threads does not reach Debian's OpenBLAS, whose own pthreads then run (and spin) beside a
"1-thread" PyTorch: its wall time gains from the second core and its process CPU time is inflated. Every
benchmark that compares against PyTorch at N threads calls set_threads(N) so both libraries use N.
"""
import ctypes

import torch


def _openblas():
    for name in ("libopenblas.so.0", "libopenblasp.so.0", "libblas.so.3"):
        try:
            lib = ctypes.CDLL(name)  # the copy torch already loaded, when it did
            lib.openblas_set_num_threads  # absent: not OpenBLAS
            return lib
        except (OSError, AttributeError):
            continue
    return None


_LIB = _openblas()


def set_threads(n):
    """torch.set_num_threads(n) and the same for OpenBLAS where torch uses it."""
    torch.set_num_threads(n)
    if _LIB is not None:
        _LIB.openblas_set_num_threads(ctypes.c_int(n))
