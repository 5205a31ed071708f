"""torch.linalg and the older linear-algebra names, values and gradients against PyTorch 1.13.

Tolerances: float64 rel 1e-8 / abs 1e-10 (ctorch factors in double with Jacobi / Householder / partial
pivoting, LAPACK with blocked algorithms: the same math in another order); float32 rel 1e-4 / abs 1e-5, because
ctorch computes float32 inputs in double and rounds once while LAPACK's float32 routines round at every step,
so PyTorch's own float32 results are off by ~1e-6 relative times the condition number. Inputs are made well
conditioned. Eigenvectors and singular vectors are compared sign-invariantly (their sign is not unique; the
losses use V*V or V diag V^T), everything else directly.
"""
import math

import numpy as np
import pytest
import torch
import ctorch

from conftest import both

RNG = np.random.RandomState(7)
TOL = {"float64": (1e-8, 1e-10), "float32": (1e-4, 1e-5)}


def arr(*shape):
    return RNG.standard_normal(shape)


def run_case(fn, arrays, dtype, grad=True):
    rtol, atol = TOL[dtype]

    def f(L):
        xs = [L.tensor(a.tolist(), dtype=getattr(L, dtype), requires_grad=grad) for a in arrays]
        out = fn(L, *xs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        vals = tuple(o.detach() for o in outs)
        if not grad:
            return vals
        loss = 0
        for o in outs:
            if o.is_floating_point() and o.requires_grad:
                w = L.tensor(np.cos(np.arange(o.numel()) * 0.7 + 0.3).reshape(tuple(o.shape)).tolist(),
                             dtype=o.dtype)
                loss = loss + (o * w).sum()
        loss.backward()
        return vals + tuple(x.grad for x in xs)
    both(f, rtol=rtol, atol=atol)


def spd(L, X):
    """a well-conditioned symmetric positive definite matrix from X (differentiable in X)"""
    n = X.shape[-1]
    return X @ X.transpose(-2, -1) / n + L.eye(n, dtype=X.dtype)


def sq(*batch, n=4):
    """a well-conditioned square matrix"""
    return arr(*batch, n, n) * 0.3 + np.eye(n) * 2


CASES = {
    "inv": (lambda L, A: L.linalg.inv(A), [sq(2)]),
    "inv_method": (lambda L, A: A.inverse(), [sq()]),
    "det": (lambda L, A: L.linalg.det(A), [sq(3)]),
    "det_neg": (lambda L, A: L.det(A), [arr(5, 3, 3)]),
    "slogdet": (lambda L, A: L.linalg.slogdet(A), [arr(4, 3, 3)]),
    "logdet_spd": (lambda L, X: L.logdet(spd(L, X)), [arr(2, 3, 3)]),
    "solve_matrix": (lambda L, A, B: L.linalg.solve(A, B), [sq(2), arr(2, 4, 3)]),
    "solve_vector": (lambda L, A, b: L.linalg.solve(A, b), [sq(), arr(4)]),
    "solve_broadcast": (lambda L, A, B: L.linalg.solve(A, B), [sq(2, 1), arr(3, 4, 2)]),
    "solve_batched_vector": (lambda L, A, b: L.linalg.solve(A, b), [sq(3), arr(3, 4)]),
    "solve_right": (lambda L, A, B: L.linalg.solve(A, B, left=False), [sq(), arr(2, 4)]),
    "cholesky_of_x": (lambda L, X: L.linalg.cholesky(spd(L, X)), [arr(2, 4, 4)]),
    "cholesky_upper": (lambda L, X: L.linalg.cholesky(spd(L, X), upper=True), [arr(3, 3)]),
    "cholesky_direct": (lambda L, A: L.linalg.cholesky(A @ A.mT + 2 * L.eye(3, dtype=A.dtype)), [arr(3, 3)]),
    "cholesky_old": (lambda L, X: L.cholesky(spd(L, X)), [arr(3, 3)]),
    "qr_tall": (lambda L, A: L.linalg.qr(A), [arr(2, 5, 3)]),
    "qr_square": (lambda L, A: L.linalg.qr(A), [arr(4, 4)]),
    "qr_wide": (lambda L, A: L.linalg.qr(A), [arr(3, 5)]),
    "qr_old": (lambda L, A: L.qr(A), [arr(4, 3)]),
    "eigh_values": (lambda L, X: L.linalg.eigvalsh(spd(L, X)), [arr(2, 4, 4)]),
    "eigh_vectors": (lambda L, X: (lambda w, V: (w, V * V, V @ L.diag_embed(w.sqrt()) @ V.mT))(
        *L.linalg.eigh(spd(L, X))), [arr(4, 4)]),
    "eigh_upper": (lambda L, X: (lambda w, V: (w, V * V))(*L.linalg.eigh(spd(L, X).triu(), UPLO="U")), [arr(3, 3)]),
    "svd_values": (lambda L, A: L.linalg.svdvals(A), [arr(2, 5, 3)]),
    "svd_reduced_tall": (lambda L, A: (lambda U, S, Vh: (U * U, S, Vh * Vh, U @ L.diag_embed(S) @ Vh))(
        *L.linalg.svd(A, full_matrices=False)), [arr(5, 3)]),
    "svd_reduced_wide": (lambda L, A: (lambda U, S, Vh: (U * U, S, Vh * Vh))(
        *L.linalg.svd(A, full_matrices=False)), [arr(2, 3, 5)]),
    "svd_full": (lambda L, A: (lambda U, S, Vh: (U[..., :, :3] * U[..., :, :3], S, Vh * Vh))(
        *L.linalg.svd(A)), [arr(5, 3)]),
    "svd_old": (lambda L, A: (lambda U, S, V: (U * U, S, V * V))(*L.svd(A)), [arr(4, 3)]),
    "pinv_tall": (lambda L, A: L.linalg.pinv(A), [arr(5, 3)]),
    "pinv_wide": (lambda L, A: L.linalg.pinv(A), [arr(2, 3, 4)]),
    "pinverse": (lambda L, A: L.pinverse(A), [arr(4, 3)]),
    "lstsq": (lambda L, A, B: L.linalg.lstsq(A, B).solution, [arr(6, 3), arr(6, 2)]),
    "norm_default": (lambda L, A: L.linalg.norm(A), [arr(3, 4)]),
    "norm_dim": (lambda L, A: L.linalg.norm(A, dim=1), [arr(3, 4)]),
    "norm_ord1_vec": (lambda L, A: L.linalg.norm(A, 1), [arr(5)]),
    "norm_fro": (lambda L, A: L.linalg.norm(A, "fro"), [arr(3, 4)]),
    "norm_nuc": (lambda L, A: L.linalg.norm(A, "nuc"), [arr(3, 4)]),
    "norm_2": (lambda L, A: L.linalg.norm(A, 2), [arr(4, 3)]),
    "norm_inf_mat": (lambda L, A: L.linalg.norm(A, math.inf), [arr(3, 4)]),
    "norm_dims_keep": (lambda L, A: L.linalg.norm(A, dim=(0, 2), keepdim=True), [arr(3, 2, 4)]),
    "vector_norm_3": (lambda L, A: L.linalg.vector_norm(A, 3, dim=-1), [arr(2, 5)]),
    "vector_norm_inf": (lambda L, A: L.linalg.vector_norm(A, -math.inf), [arr(2, 5)]),
    "matrix_norm_fro": (lambda L, A: L.linalg.matrix_norm(A), [arr(2, 3, 4)]),
    "matrix_norm_1": (lambda L, A: L.linalg.matrix_norm(A, 1), [arr(2, 3, 4)]),
    "matrix_norm_m1": (lambda L, A: L.linalg.matrix_norm(A, -1), [arr(2, 3, 4)]),
    "matrix_norm_minf": (lambda L, A: L.linalg.matrix_norm(A, -math.inf), [arr(2, 3, 4)]),
    "matrix_norm_m2": (lambda L, A: L.linalg.matrix_norm(A, -2), [arr(2, 3, 4)]),
    "matrix_norm_nuc_dims": (lambda L, A: L.linalg.matrix_norm(A, "nuc", dim=(0, 2)), [arr(3, 2, 4)]),
    "cond": (lambda L, A: L.linalg.cond(A), [sq(2)]),
    "cross": (lambda L, a, b: L.linalg.cross(a, b), [arr(4, 3), arr(4, 3)]),
    "cross_dim0": (lambda L, a, b: L.linalg.cross(a, b, dim=0), [arr(3, 2), arr(3, 2)]),
    "matrix_power_3": (lambda L, A: L.linalg.matrix_power(A, 3), [sq(2)]),
    "matrix_power_neg": (lambda L, A: L.matrix_power(A, -2), [sq()]),
    "matrix_power_0": (lambda L, A: L.linalg.matrix_power(A, 0) + A, [sq()]),
    "multi_dot": (lambda L, a, b, c: L.linalg.multi_dot([a, b, c]), [arr(2, 3), arr(3, 4), arr(4, 2)]),
    "matrix_exp": (lambda L, A: L.linalg.matrix_exp(A), [arr(2, 3, 3)]),
    "matrix_exp_big": (lambda L, A: L.matrix_exp(A * 3), [arr(3, 3)]),
    "solve_triangular_upper": (lambda L, A, B: L.linalg.solve_triangular(A.triu() + 3 * L.eye(3, dtype=A.dtype), B,
                                                                         upper=True), [arr(2, 3, 3), arr(2, 3, 2)]),
    "solve_triangular_lower_unit": (lambda L, A, B: L.linalg.solve_triangular(A.tril(), B, upper=False,
                                                                              unitriangular=True),
                                    [arr(3, 3), arr(3, 4)]),
    "solve_triangular_right": (lambda L, A, B: L.linalg.solve_triangular(A.triu() + 3 * L.eye(3, dtype=A.dtype), B,
                                                                         upper=True, left=False),
                               [arr(3, 3), arr(2, 3)]),
    "triangular_solve": (lambda L, b, A: L.triangular_solve(b, A.triu() + 3 * L.eye(3, dtype=A.dtype)).solution,
                         [arr(3, 2), arr(3, 3)]),
    "triangular_solve_t": (lambda L, b, A: L.triangular_solve(b, A.tril() + 3 * L.eye(3, dtype=A.dtype),
                                                              upper=False, transpose=True).solution,
                           [arr(3, 2), arr(3, 3)]),
    "cholesky_solve": (lambda L, B, X: L.cholesky_solve(B, L.linalg.cholesky(spd(L, X))), [arr(3, 2), arr(3, 3)]),
    "cholesky_inverse": (lambda L, X: L.cholesky_inverse(L.linalg.cholesky(spd(L, X))), [arr(3, 3)]),
}

NOGRAD = {
    "lu_factor": (lambda L, A: L.linalg.lu_factor(A), [arr(2, 4, 4)]),
    "lu_factor_wide": (lambda L, A: L.linalg.lu_factor(A), [arr(3, 5)]),
    "lu_factor_tall": (lambda L, A: L.linalg.lu_factor(A), [arr(5, 3)]),
    "lu_unpack": (lambda L, A: L.lu_unpack(*L.linalg.lu_factor(A)), [arr(2, 4, 4)]),
    "linalg_lu": (lambda L, A: L.linalg.lu(A), [arr(4, 4)]),
    "lu_old": (lambda L, A: L.lu(A), [arr(3, 3)]),
    "lu_solve": (lambda L, A, B: L.linalg.lu_solve(*L.linalg.lu_factor(A), B), [sq(), arr(4, 2)]),
    "lu_solve_old": (lambda L, A, B: L.lu_solve(B, *L.lu(A)), [sq(), arr(4, 2)]),
    "qr_r": (lambda L, A: L.linalg.qr(A, mode="r")[1], [arr(5, 3)]),
    "qr_complete_tall": (lambda L, A: L.linalg.qr(A, mode="complete"), [arr(5, 3)]),
    "matrix_rank": (lambda L, A: L.linalg.matrix_rank(A), [arr(2, 4, 3)]),
    "matrix_rank_deficient": (lambda L, A: L.linalg.matrix_rank(A @ A.mT), [arr(5, 2)]),
    "matrix_rank_tol": (lambda L, A: L.linalg.matrix_rank(A, tol=0.5), [arr(4, 4)]),
    "det_singular": (lambda L, A: L.linalg.det(A[..., [0, 0, 1], :]), [arr(3, 3)]),
    "inv_ex": (lambda L, A: L.linalg.inv_ex(A), [sq()]),
    "cholesky_ex_fail": (lambda L, A: L.linalg.cholesky_ex(-A @ A.mT).info, [arr(3, 3)]),
    "lstsq_gelsd": (lambda L, A, B: L.linalg.lstsq(A, B, driver="gelsd"), [arr(6, 3), arr(6, 2)]),
    "empty_det": (lambda L, A: L.linalg.det(A), [arr(2, 0, 0)]),
    "empty_inv": (lambda L, A: L.linalg.inv(A), [arr(0, 3, 3)]),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients(name, dtype):
    fn, arrays = CASES[name]
    run_case(fn, arrays, dtype)


@pytest.mark.parametrize("name", sorted(NOGRAD))
def test_values(name):
    fn, arrays = NOGRAD[name]
    run_case(fn, arrays, "float64", grad=False)


def _qr_r_grad(L):
    A = L.tensor(arr(4, 3).tolist(), requires_grad=True)
    L.linalg.qr(A, mode="r")[1].sum().backward()


def _complete_qr_grad(L):
    A = L.tensor(arr(4, 3).tolist(), requires_grad=True)
    Q, R = L.linalg.qr(A, mode="complete")
    (Q.sum() + R.sum()).backward()


ERRORS = {
    "inv_singular": lambda L: L.linalg.inv(L.zeros(2, 2)),
    "inv_rect": lambda L: L.linalg.inv(L.ones(2, 3)),
    "inv_1d": lambda L: L.linalg.inv(L.ones(3)),
    "inv_int": lambda L: L.linalg.inv(L.ones(2, 2, dtype=L.int64)),
    "solve_singular": lambda L: L.linalg.solve(L.zeros(2, 2), L.ones(2)),
    "solve_shapes": lambda L: L.linalg.solve(L.eye(2), L.ones(3)),
    "cholesky_not_pd": lambda L: L.linalg.cholesky(-L.eye(2)),
    "cholesky_minor2": lambda L: L.linalg.cholesky(L.tensor([[1.0, 2.0], [2.0, 1.0]])),
    "det_rect": lambda L: L.linalg.det(L.ones(2, 3)),
    "eigh_rect": lambda L: L.linalg.eigh(L.ones(2, 3)),
    "qr_mode": lambda L: L.linalg.qr(L.ones(2, 3), mode="x"),
    "qr_complete_grad": _complete_qr_grad,
    "qr_r_grad": _qr_r_grad,
    "cross_len": lambda L: L.linalg.cross(L.ones(2), L.ones(2)),
    "cross_ndim": lambda L: L.linalg.cross(L.ones(3), L.ones(2, 3, 1)),
    "vector_norm_int": lambda L: L.linalg.vector_norm(L.ones(2, dtype=L.int64)),
    "matrix_norm_1d": lambda L: L.linalg.matrix_norm(L.ones(2)),
    "matrix_norm_ord": lambda L: L.linalg.matrix_norm(L.ones(2, 2), ord=3),
    "norm_3d_ord": lambda L: L.linalg.norm(L.ones(2, 2, 2), ord=2),
    "svd_1d": lambda L: L.linalg.svd(L.ones(2)),
    "solve_triangular_1d": lambda L: L.linalg.solve_triangular(L.ones(2, 2), L.ones(2), upper=True),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    ec, et = both(ERRORS[name])
    assert str(ec).split("\n")[0] == str(et).split("\n")[0], "ctorch: %s\ntorch:  %s" % (ec, et)


def test_linalg_error_is_runtime_error():
    with pytest.raises(RuntimeError):
        ctorch.linalg.inv(ctorch.zeros(3, 3))
    assert issubclass(ctorch.linalg.LinAlgError, RuntimeError)


def test_lu_factor_refuses_gradient():
    # the derivative of an LU factorization is not implemented: a clear error, not a silent zero
    A = ctorch.randn(3, 3, requires_grad=True)
    with pytest.raises(NotImplementedError, match="derivative of linalg.lu_factor"):
        ctorch.linalg.lu_factor(A)


def test_eig_is_refused():
    with pytest.raises(NotImplementedError, match="complex"):
        ctorch.linalg.eig(ctorch.eye(2))
