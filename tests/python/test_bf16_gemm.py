"""bfloat16 matmul / bmm / addmm vs PyTorch 1.13's bf16 CPU path (float32 accumulation, rounded once
to bf16). ctorch's kernels (AMX tdpbf16ps, AVX512_BF16 vdpbf16ps, widening; CT_GEMM_BF16 picks one, read
at each product; a kernel the CPU lacks falls back) and PyTorch (oneDNN) sum the float32 products in
orders that may differ, so each element may differ by one bf16 ulp plus the float32 summation bound
2 K 2^-24 sum_k |a_ik b_kj| (on session 8's Zen 5 no element differed, s8_bf16gemm.md; AMX on
session 9's Xeon: s9_amx.md)."""
import os

import numpy as np
import pytest
import torch

import ctorch


def _ct(t):
    return ctorch.tensor(t.float().numpy()).to(ctorch.bfloat16)


def _np(c):
    return np.array(c.float().tolist(), dtype=np.float64)


def _check(got, want, absprod, k):
    w = want.float().double().numpy()
    ulp = np.ldexp(1.0, np.frexp(np.maximum(np.abs(w), 1e-30))[1] - 8)
    tol = ulp + 2.0 * k * 2.0 ** -24 * absprod.double().numpy()
    g = _np(got)
    assert g.shape == w.shape
    assert np.all((np.abs(g - w) <= tol) | (np.isnan(g) & np.isnan(w)))


@pytest.fixture(params=["amx", "dp", "widen"])
def bf16_path(request):
    old = os.environ.get("CT_GEMM_BF16")
    os.environ["CT_GEMM_BF16"] = request.param
    yield request.param
    if old is None:
        del os.environ["CT_GEMM_BF16"]
    else:
        os.environ["CT_GEMM_BF16"] = old


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (7, 5, 3), (33, 129, 65), (250, 1100, 40), (17, 45, 530), (64, 768, 300)])
def test_bf16_mm_vs_torch(m, k, n, bf16_path):
    g = torch.Generator().manual_seed(m * 1000 + k)
    a = torch.randn(m, k, generator=g).bfloat16()
    b = torch.randn(n, k, generator=g).bfloat16().t()  # a transposed operand
    _check(_ct(a) @ _ct(b.contiguous()).t().t(), a @ b, a.float().abs() @ b.float().abs(), k)
    _check(ctorch.matmul(_ct(a), _ct(b.t().contiguous()).t()), a @ b, a.float().abs() @ b.float().abs(), k)


def test_bf16_bmm_addmm_vs_torch(bf16_path):
    g = torch.Generator().manual_seed(7)
    a = torch.randn(3, 19, 23, generator=g).bfloat16()
    b = torch.randn(3, 23, 27, generator=g).bfloat16()
    _check(ctorch.bmm(_ct(a), _ct(b)), torch.bmm(a, b), torch.bmm(a.float().abs(), b.float().abs()), 23)
    c = torch.randn(19, 27, generator=g).bfloat16()
    want = torch.addmm(c, a[0], b[0], beta=0.5, alpha=2.0)
    ap = 0.5 * c.float().abs() + 2.0 * (a[0].float().abs() @ b[0].float().abs())
    _check(ctorch.addmm(_ct(c), _ct(a[0]), _ct(b[0]), beta=0.5, alpha=2.0), want, ap, 23)
