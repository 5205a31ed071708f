"""torch.linalg and the older torch.* linear-algebra names.

The factorizations run in C (python/ctorch/_C/linalg.c, computed in double); each differentiable one is an
autograd.Function whose backward is the textbook formula written with ctorch ops (the same formulas PyTorch
documents: inverse, determinant, solve, Cholesky, QR, symmetric eigendecomposition, SVD). Everything else
(norms, pinv, lstsq, matrix_rank, cross, ...) is composed from those and differentiates through them.
Eigenvectors and singular vectors are unique only up to sign; ctorch makes the largest entry of each
positive, which LAPACK (PyTorch) does not promise, so compare them sign-invariantly.
"""
import builtins as _b
import collections as _collections
import math as _math

from . import _C
from .autograd.function import Function


class _LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError (a RuntimeError, as in PyTorch)."""


LinAlgError = _LinAlgError


def _torch():
    import ctorch
    return ctorch


def _t(x):
    return x.transpose(-2, -1)


def _check(A, fn, square=True, name="A"):
    T = _torch()
    if not isinstance(A, T.Tensor):
        raise TypeError("linalg_%s(): argument '%s' (position 1) must be Tensor, not %s" % (
            fn.split(".")[-1], name, type(A).__name__))
    if A.dim() < 2:
        raise RuntimeError("linalg.%s: The input tensor %s must have at least 2 dimensions." % (fn, name))
    if not A.is_floating_point() or A.dtype not in (T.float32, T.float64):
        if not A.is_floating_point():
            raise RuntimeError("linalg.%s: Expected a floating point or complex tensor as input. Got %s" % (
                fn, _dtype_word(A.dtype)))
        raise RuntimeError("linalg.%s: ctorch supports float32 and float64 here, got %s" % (fn, A.dtype))
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.%s: A must be batches of square matrices, but they are %d by %d matrices" % (
            fn, A.shape[-2], A.shape[-1]))


def _dtype_word(dt):
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
            "float16": "Half", "bfloat16": "BFloat16"}.get(str(dt).split(".")[-1], str(dt))


def _eye_like(A, n=None):
    T = _torch()
    n = A.shape[-1] if n is None else n
    return T.eye(n, dtype=A.dtype)


def _sum_to(g, shape):
    """g summed over broadcast dims down to shape (the gradient of an expand)."""
    shape = tuple(shape)
    lead = g.dim() - len(shape)
    if lead > 0:
        g = g.sum(tuple(range(lead)))
    dims = tuple(d for d, s in enumerate(shape) if s == 1 and g.shape[d] != 1)
    if dims:
        g = g.sum(dims, keepdim=True)
    return g


def _trsm(A, B, upper, trans=False, unit=False):
    """Solve A X = B (A^T X = B with trans) for triangular A, no autograd (used inside backward)."""
    return _C._linalg_trsm(A.contiguous(), B.contiguous(), upper, trans, unit)


def _solve_raw(A, B):
    X, info = _C._linalg_solve(A.contiguous(), B.contiguous())
    return X, info


def _raise_first_failure(info, msg):
    """LAPACK-style info: msg (with the first positive code) when any matrix of the batch failed."""
    bad = [i for i in info.reshape(-1).tolist() if i > 0]
    if bad:
        raise _LinAlgError(msg % bad[0])


def _raise_singular_solve(info):
    if info.numel() and _b.bool((info > 0).any()):
        raise _LinAlgError("torch.linalg.solve: The solver failed because the input matrix is singular.")


# ---- inverse -------------------------------------------------------------------------------------------
class _Inv(Function):
    @staticmethod
    def forward(ctx, A):
        I = _eye_like(A).expand(A.shape).contiguous()
        X, info = _solve_raw(A, I)
        _raise_first_failure(info, "linalg.inv: The diagonal element %d is zero, the inversion could not be "
                                   "completed because the input matrix is singular.")
        ctx.save_for_backward(X)
        return X

    @staticmethod
    def backward(ctx, g):
        X, = ctx.saved_tensors
        return -(_t(X) @ g @ _t(X))


def inv(A, *, out=None):
    _check(A, "inv")
    return _out(_Inv.apply(A), out)


def inv_ex(A, *, check_errors=False, out=None):
    _check(A, "inv_ex")
    I = _eye_like(A).expand(A.shape).contiguous()
    X, info = _solve_raw(A.detach(), I)
    if check_errors:
        inv(A)
    return _InvEx(_Inv.apply(A) if not _b.bool((info > 0).any()) else X, info)


_InvEx = _collections.namedtuple("inv_ex", ["inverse", "info"])


# ---- determinants ----------------------------------------------------------------------------------------
def _lu_det(A):
    """(sign, logabsdet, det) of each matrix from its LU factors, no autograd."""
    T = _torch()
    LU, piv, info = _C._linalg_lu(A.contiguous())
    n = A.shape[-1]
    d = LU.diagonal(0, -2, -1)
    swaps = (piv != T.arange(1, n + 1, dtype=T.int32)).sum(-1)
    perm_sign = 1.0 - 2.0 * (swaps % 2).to(A.dtype)
    sign = perm_sign * d.sign().prod(-1)
    logabs = d.abs().log().sum(-1)
    det = perm_sign * d.prod(-1)
    return sign, logabs, det


class _Det(Function):
    @staticmethod
    def forward(ctx, A):
        _, _, det = _lu_det(A)
        ctx.save_for_backward(A, det)
        return det

    @staticmethod
    def backward(ctx, g):
        A, det = ctx.saved_tensors
        # d det / dA = det * A^{-T}; through the solver so that a singular A gives inf/nan like a division
        X, info = _solve_raw(A, _eye_like(A).expand(A.shape).contiguous())
        return (g * det).unsqueeze(-1).unsqueeze(-1) * _t(X)


def det(A, *, out=None):
    _check(A, "det")
    return _out(_Det.apply(A), out)


class _Slogdet(Function):
    @staticmethod
    def forward(ctx, A):
        sign, logabs, _ = _lu_det(A)
        ctx.save_for_backward(A)
        ctx.mark_non_differentiable(sign)
        return sign, logabs

    @staticmethod
    def backward(ctx, gsign, glog):
        A, = ctx.saved_tensors
        X, info = _solve_raw(A, _eye_like(A).expand(A.shape).contiguous())
        return glog.unsqueeze(-1).unsqueeze(-1) * _t(X)


_SlogdetResult = _collections.namedtuple("slogdet", ["sign", "logabsdet"])


def slogdet(A, *, out=None):
    _check(A, "slogdet")
    s, l = _Slogdet.apply(A)
    return _SlogdetResult(s, l)


def logdet(A):
    _check(A, "logdet")
    s, l = _Slogdet.apply(A)
    T = _torch()
    return T.where(s < 0, T.full_like(l, _math.nan), T.where(s == 0, T.full_like(l, -_math.inf), l))


# ---- solve -----------------------------------------------------------------------------------------------
class _Solve(Function):
    @staticmethod
    def forward(ctx, A, B):
        X, info = _solve_raw(A, B)
        _raise_singular_solve(info)
        ctx.save_for_backward(A, X)
        return X

    @staticmethod
    def backward(ctx, g):
        A, X = ctx.saved_tensors
        gB, _ = _solve_raw(_t(A), g)
        gA = -(gB @ _t(X))
        return gA, gB


def solve(A, B, *, left=True, out=None):
    T = _torch()
    _check(A, "solve")
    if not isinstance(B, T.Tensor):
        raise TypeError("linalg_solve(): argument 'B' (position 2) must be Tensor, not %s" % type(B).__name__)
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return _t(solve(_t(A), _t(B)))
    if B.dtype != A.dtype:
        raise RuntimeError("linalg.solve: Expected A and B to have the same dtype, but found A of type %s and B of "
                           "type %s instead" % (_dtype_word(A.dtype) if not A.is_floating_point() else
                                                str(A.dtype).split(".")[-1].capitalize().replace("Float32", "Float")
                                                .replace("Float64", "Double"),
                                                str(B.dtype).split(".")[-1].capitalize().replace("Float32", "Float")
                                                .replace("Float64", "Double")))
    n = A.shape[-1]
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.shape[-2] != n:
        raise RuntimeError("linalg.solve: Incompatible shapes of A and B for the equation AX = B (%dx%d and %dx%d)" % (
            A.shape[-2], n, Bm.shape[-2], Bm.shape[-1]))
    batch = _broadcast_shapes(tuple(A.shape[:-2]), tuple(Bm.shape[:-2]))
    Ae = A.expand(batch + (n, n))
    Be = Bm.expand(batch + tuple(Bm.shape[-2:]))
    X = _Solve.apply(Ae, Be)
    if vector:
        X = X.squeeze(-1)
    return _out(X, out)


def _broadcast_shapes(a, b):
    n = _b.max(len(a), len(b))
    a = (1,) * (n - len(a)) + a
    b = (1,) * (n - len(b)) + b
    r = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise RuntimeError("The size of tensor a (%d) must match the size of tensor b (%d) at non-singleton "
                               "dimension %d" % (x, y, len(r)))
        r.append(y if x == 1 else x)
    return tuple(r)


class _TriSolve(Function):
    @staticmethod
    def forward(ctx, A, B, upper, unit):
        X = _trsm(A, B, upper, False, unit)
        ctx.save_for_backward(A, X)
        ctx.upper, ctx.unit = upper, unit
        return X

    @staticmethod
    def backward(ctx, g):
        A, X = ctx.saved_tensors
        gB = _trsm(A, g, ctx.upper, True, ctx.unit)
        gA = -(gB @ _t(X))
        gA = gA.triu(1 if ctx.unit else 0) if ctx.upper else gA.tril(-1 if ctx.unit else 0)
        return gA, gB, None, None


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    _check(A, "solve_triangular")
    if B.dim() < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    if not left:
        return _t(solve_triangular(_t(A), _t(B), upper=not upper, unitriangular=unitriangular))
    batch = _broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2]))
    n = A.shape[-1]
    X = _TriSolve.apply(A.expand(batch + (n, n)), B.expand(batch + tuple(B.shape[-2:])), upper, unitriangular)
    return _out(X, out)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    Am = _t(A) if transpose else A
    X = solve_triangular(Am, b, upper=(not upper) if transpose else upper, unitriangular=unitriangular)
    return _TriangularSolveResult(X, A.clone())


_TriangularSolveResult = _collections.namedtuple("triangular_solve", ["solution", "cloned_coefficient"])


# ---- Cholesky ---------------------------------------------------------------------------------------------
class _Cholesky(Function):
    @staticmethod
    def forward(ctx, A):
        L, info = _C._linalg_cholesky(A.contiguous())
        _raise_first_failure(info, "linalg.cholesky: The factorization could not be completed because the input is "
                                   "not positive-definite (the leading minor of order %d is not positive-definite).")
        ctx.save_for_backward(L)
        return L

    @staticmethod
    def backward(ctx, gL):
        L, = ctx.saved_tensors
        # Phi(L^T gL): lower triangle with the diagonal halved; gA = L^{-T} Phi L^{-1}, symmetrized
        P = (_t(L) @ gL).tril()
        P = P - 0.5 * P.diagonal(0, -2, -1).diag_embed()
        S = _trsm(L, P, False, True)            # L^{-T} P
        S = _t(_trsm(L, _t(S), False, True))    # (L^{-T} S^T)^T = S L^{-1}
        return 0.5 * (S + _t(S))


def cholesky(A, *, upper=False, out=None):
    _check(A, "cholesky")
    L = _Cholesky.apply(A)
    return _out(_t(L) if upper else L, out)


_CholeskyEx = _collections.namedtuple("cholesky_ex", ["L", "info"])


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    _check(A, "cholesky_ex")
    L0, info = _C._linalg_cholesky(A.detach().contiguous())
    if check_errors or not _b.bool((info > 0).any()):
        return _CholeskyEx(cholesky(A, upper=upper), info)
    return _CholeskyEx(_t(L0) if upper else L0, info)


# ---- QR ---------------------------------------------------------------------------------------------------
class _QR(Function):
    @staticmethod
    def forward(ctx, A, complete):
        ctx.set_materialize_grads(False)
        Q, R = _C._linalg_qr(A.contiguous(), complete)
        ctx.save_for_backward(Q, R)
        ctx.complete = complete
        ctx.shape = tuple(A.shape)
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        T = _torch()
        Q, R = ctx.saved_tensors
        m, n = ctx.shape[-2], ctx.shape[-1]
        if gQ is None:
            gQ = T.zeros_like(Q)
        if gR is None:
            gR = T.zeros_like(R)
        if m >= n:
            return _qr_back_tall(Q, R, gQ, gR), None
        # wide: A = [X | Y] with X = Q U square; R = [U | V], V = Q^T Y
        U, V = R[..., :, :m], R[..., :, m:]
        gU, gV = gR[..., :, :m], gR[..., :, m:]
        Y = Q @ V
        gX = _qr_back_tall(Q, U, gQ + Y @ _t(gV), gU)
        return T.cat([gX, Q @ gV], -1), None


def _qr_back_tall(Q, R, gQ, gR):
    # M = R gR^T - gQ^T Q; gA = (gQ + Q copyltu(M)) R^{-T}, copyltu(M) = tril(M) + tril(M, -1)^T
    M = R @ _t(gR) - _t(gQ) @ Q
    C = M.tril() + _t(M.tril(-1))
    G = gQ + Q @ C
    return _t(_trsm(R, _t(G), True))  # G R^{-T} = (R^{-1} G^T)^T


_QRResult = _collections.namedtuple("qr", ["Q", "R"])


def qr(A, mode="reduced", *, out=None):
    T = _torch()
    _check(A, "qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError("qr received unrecognized mode '%s' but expected one of 'reduced' (default), 'r', or "
                           "'complete'" % mode)
    m, n = A.shape[-2], A.shape[-1]
    complete = mode == "complete" and m > n
    if (complete or mode == "r") and A.requires_grad and T.is_grad_enabled():
        # PyTorch refuses these derivatives when backward reaches them; so does ctorch
        Q, R = _QR.apply(A.detach(), complete)
        msg = ("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
               "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr." if mode == "r" else
               "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        if mode == "r":
            return _QRResult(T.empty(0, dtype=A.dtype), _Refuse.apply(A, R, msg))
        return _QRResult(_Refuse.apply(A, Q, msg), _Refuse.apply(A, R, msg))
    Q, R = _QR.apply(A, complete)
    if mode == "r":
        return _QRResult(T.empty(0, dtype=A.dtype), R)
    return _QRResult(Q, R)


class _Refuse(Function):
    """Carries a value computed from A whose derivative PyTorch refuses, with PyTorch's message."""
    @staticmethod
    def forward(ctx, A, value, msg):
        ctx.msg = msg
        return value.clone()

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError(ctx.msg)


# ---- symmetric eigendecomposition ---------------------------------------------------------------------
class _Eigh(Function):
    @staticmethod
    def forward(ctx, A, upper):
        ctx.set_materialize_grads(False)
        w, V = _C._linalg_eigh(A.contiguous(), upper)
        ctx.save_for_backward(w, V)
        return w, V

    @staticmethod
    def backward(ctx, gw, gV):
        T = _torch()
        w, V = ctx.saved_tensors
        inner = T.zeros(V.shape, dtype=V.dtype)
        if gV is not None:
            E = w.unsqueeze(-2) - w.unsqueeze(-1)  # E_ij = w_j - w_i
            E = E + T.eye(w.shape[-1], dtype=w.dtype)  # the diagonal is not used
            F = (_t(V) @ gV) / E
            F = F - F.diagonal(0, -2, -1).diag_embed()
            inner = 0.5 * (F + _t(F))  # PyTorch returns the symmetric gradient
        if gw is not None:
            inner = inner + gw.diag_embed()
        return V @ inner @ _t(V), None


_EighResult = _collections.namedtuple("eigh", ["eigenvalues", "eigenvectors"])


def eigh(A, UPLO="L", *, out=None):
    _check(A, "eigh")
    if UPLO not in ("L", "U"):
        raise RuntimeError("Expected UPLO argument to be 'L' or 'U', but got %s" % UPLO)
    w, V = _Eigh.apply(A, UPLO == "U")
    return _EighResult(w, V)


def eigvalsh(A, UPLO="L", *, out=None):
    _check(A, "eigvalsh")
    return _out(eigh(A, UPLO).eigenvalues, out)


# ---- SVD --------------------------------------------------------------------------------------------------
class _SVD(Function):
    @staticmethod
    def forward(ctx, A):
        ctx.set_materialize_grads(False)
        U, S, Vh = _C._linalg_svd(A.contiguous(), False)
        ctx.save_for_backward(U, S, Vh)
        return U, S, Vh

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        T = _torch()
        U, S, Vh = ctx.saved_tensors
        if gU is None and gVh is None:
            return (U * gS.unsqueeze(-2)) @ Vh
        k = S.shape[-1]
        V = _t(Vh)
        S2 = S * S
        E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + T.eye(k, dtype=S.dtype)  # E_ij = s_j^2 - s_i^2
        inner = T.zeros(U.shape[:-2] + (k, k), dtype=U.dtype)
        if gS is not None:
            inner = inner + gS.diag_embed()
        res = 0
        if gU is not None:
            X = _t(U) @ gU
            inner = inner + ((X - _t(X)) / E) * S.unsqueeze(-2)
            proj = gU - U @ X  # (I - U U^T) gU
            res = res + (proj / S.unsqueeze(-2)) @ Vh
        if gVh is not None:
            gV = _t(gVh)
            Y = _t(V) @ gV
            inner = inner + S.unsqueeze(-1) * ((Y - _t(Y)) / E)
            projv = gV - V @ Y  # (I - V V^T) gV
            res = res + U @ (_t(projv) / S.unsqueeze(-1))
        return U @ inner @ Vh + res


_SVDResult = _collections.namedtuple("svd", ["U", "S", "Vh"])


def svd(A, full_matrices=True, *, driver=None, out=None):
    T = _torch()
    _check(A, "svd", square=False)
    m, n = A.shape[-2], A.shape[-1]
    if full_matrices and m != n:
        # PyTorch differentiates only through the first min(m, n) singular vectors
        Uf, S0, Vhf = _C._linalg_svd(A.detach().contiguous(), True)
        U, S, Vh = _SVD.apply(A)
        k = S.shape[-1]
        U = T.cat([U, Uf[..., :, k:]], -1) if m > k else U
        Vh = T.cat([Vh, Vhf[..., k:, :]], -2) if n > k else Vh
        return _SVDResult(U, S, Vh)
    U, S, Vh = _SVD.apply(A)
    return _SVDResult(U, S, Vh)


def svdvals(A, *, driver=None, out=None):
    _check(A, "svdvals", square=False)
    return _out(svd(A, full_matrices=False).S, out)


def _svd_old(input, some=True, compute_uv=True, *, out=None):
    """torch.svd: (U, S, V) with V not transposed; some=True gives the reduced factors."""
    U, S, Vh = svd(input, full_matrices=not some)
    if not compute_uv:
        T = _torch()
        return _OldSVD(T.zeros_like(U), S, T.zeros_like(_t(Vh)))
    return _OldSVD(U, S, _t(Vh))


_OldSVD = _collections.namedtuple("svd", ["U", "S", "V"])


# ---- composed ------------------------------------------------------------------------------------------
def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None, rcond=None):
    T = _torch()
    _check(A, "pinv", square=False)
    U, S, Vh = svd(A, full_matrices=False)
    if rcond is not None:
        rtol = rcond
    smax = S.amax(-1, keepdim=True) if S.shape[-1] else S
    if rtol is None:
        rtol = (0.0 if atol is not None and atol > 0 else
                _b.max(A.shape[-2], A.shape[-1]) * _eps(A.dtype))
    tol = smax * rtol
    if atol is not None:
        tol = T.clamp(tol, min=atol)
    keep = S > tol
    Sinv = T.where(keep, 1.0 / T.where(keep, S, T.ones_like(S)), T.zeros_like(S))
    return _out((_t(Vh) * Sinv.unsqueeze(-2)) @ _t(U), out)


def _eps(dt):
    T = _torch()
    return 1.1920928955078125e-07 if dt == T.float32 else 2.220446049250313e-16


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    T = _torch()
    _check(A, "matrix_rank", square=False)
    S = svdvals(A.detach())
    if tol is not None:
        atol, rtol = tol, 0.0
    smax = S.amax(-1, keepdim=True) if S.shape[-1] else S
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else _b.max(A.shape[-2], A.shape[-1]) * _eps(A.dtype)
    thr = smax * rtol
    if atol is not None:
        thr = T.clamp(thr, min=atol)
    return _out((S > thr).sum(-1), out)


_LstsqResult = _collections.namedtuple("lstsq", ["solution", "residuals", "rank", "singular_values"])


def lstsq(A, B, rcond=None, *, driver=None):
    T = _torch()
    _check(A, "lstsq", square=False)
    if driver not in (None, "gelsy", "gelsd", "gelss", "gels"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    vector = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    X = pinv(A, rtol=rcond) @ Bm if rcond is not None else pinv(A) @ Bm
    if vector:
        X = X.squeeze(-1)
    rank = matrix_rank(A) if driver != "gels" else T.empty(0, dtype=T.int64)
    sv = svdvals(A.detach()) if driver in ("gelsd", "gelss") else T.empty(0, dtype=A.dtype)
    res = T.empty(0, dtype=A.dtype)
    m, n = A.shape[-2], A.shape[-1]
    if driver in ("gelsd", "gelss", "gels") and m > n and _b.bool((rank == n).all()):
        res = ((A @ X.unsqueeze(-1) if vector else A @ X) - Bm).pow(2).sum(-2)
    return _LstsqResult(X, res, rank, sv)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    T = _torch()
    if not isinstance(x, T.Tensor):
        raise TypeError("linalg_vector_norm(): argument 'input' (position 1) must be Tensor, not %s" %
                        type(x).__name__)
    if not x.is_floating_point():
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. Got %s" %
                           _dtype_word(x.dtype))
    if dtype is not None:
        x = x.to(dtype)
    return _out(T.vector_norm(x, ord, dim, keepdim), out)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    T = _torch()
    if not isinstance(A, T.Tensor):
        raise TypeError("linalg_matrix_norm(): argument 'input' (position 1) must be Tensor, not %s" %
                        type(A).__name__)
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if not A.is_floating_point():
        raise RuntimeError("linalg.matrix_norm: Expected a floating point or complex tensor as input. Got %s" %
                           _dtype_word(A.dtype))
    if dtype is not None:
        A = A.to(dtype)
    d0, d1 = (d % A.dim() for d in dim)
    if d0 == d1:
        raise RuntimeError("linalg.matrix_norm: dims must be different. Got (%d, %d)" % tuple(dim))
    if ord == "fro":
        r = T.vector_norm(A, 2, (d0, d1), keepdim)
    elif ord in ("nuc", 2, -2):
        M = A.movedim((d0, d1), (-2, -1))
        S = svdvals(M)
        r = S.sum(-1) if ord == "nuc" else (S.amax(-1) if ord == 2 else S.amin(-1))
        if keepdim:
            r = r.unsqueeze(-1).unsqueeze(-1).movedim((-2, -1), (d0, d1)) if True else r
    elif ord in (1, -1, _math.inf, -_math.inf):
        red, other = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = A.abs().sum(red, keepdim=True)
        r = s.amax(other, keepdim=True) if ord > 0 else s.amin(other, keepdim=True)
        if not keepdim:
            r = r.squeeze(_b.max(d0, d1)).squeeze(_b.min(d0, d1))
    else:
        raise RuntimeError("linalg.matrix_norm: Order %s not supported." % (ord,))
    return _out(r, out)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    T = _torch()
    if not isinstance(A, T.Tensor):
        raise TypeError("linalg_norm(): argument 'input' (position 1) must be Tensor, not %s" % type(A).__name__)
    if dim is not None and not isinstance(dim, (tuple, list)):
        dim = (dim,)
    if ord is not None:
        if dim is None:
            if A.dim() not in (1, 2):
                raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                                   "%dD." % A.dim())
            dim = tuple(range(A.dim()))
        if len(dim) == 2:
            return matrix_norm(A, ord, dim, keepdim, dtype=dtype, out=out)
        return vector_norm(A, ord, dim, keepdim, dtype=dtype, out=out)
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro", dim, keepdim, dtype=dtype, out=out)
    return vector_norm(A, 2, dim, keepdim, dtype=dtype, out=out)


def cond(A, p=None, *, out=None):
    _check(A, "cond", square=False)
    if p is None or p in (2, -2):
        S = svdvals(A)
        r = S.amax(-1) / S.amin(-1) if p in (None, 2) else S.amin(-1) / S.amax(-1)
        return _out(r, out)
    return _out(matrix_norm(A, p) * matrix_norm(inv(A), p), out)


def cross(input, other, *, dim=-1, out=None):
    T = _torch()
    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise RuntimeError("linalg.cross: inputs dimension %d must have length 3. Got %d and %d" % (
            dim, input.shape[dim], other.shape[dim]))
    a1, a2 = input.roll(-1, dim), input.roll(-2, dim)
    b1, b2 = other.roll(-1, dim), other.roll(-2, dim)
    return _out(a1 * b2 - a2 * b1, out)


def matrix_power(A, n, *, out=None):
    T = _torch()
    _check(A, "matrix_power")
    if n < 0:
        A, n = inv(A), -n
    r = _eye_like(A).expand(A.shape).clone() if n == 0 else None
    base = A
    while n > 0:
        if n & 1:
            r = base if r is None else r @ base
        n >>= 1
        if n:
            base = base @ base
    return _out(r, out)


def multi_dot(tensors, *, out=None):
    if len(tensors) < 2:
        raise RuntimeError("multi_dot(): expected at least 2 tensors but got %d" % len(tensors))
    r = tensors[0]
    for t in tensors[1:]:
        r = r @ t
    return _out(r, out)


def matrix_exp(A):
    """exp(A) by scaling and squaring with a degree-12 Taylor series (differentiable through matmuls)."""
    T = _torch()
    _check(A, "matrix_exp")
    nrm = float(A.detach().abs().sum(-1).amax()) if A.numel() else 0.0
    s = _b.max(0, int(_math.ceil(_math.log2(nrm))) + 1) if nrm > 0.5 else 0
    X = A / (2 ** s)
    term = _eye_like(A).expand(A.shape)
    r = term
    for k in range(1, 13):
        term = term @ X / k
        r = r + term
    for _ in range(s):
        r = r @ r
    return r


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return A.diagonal(offset, dim1, dim2)


def vecdot(x, y, *, dim=-1, out=None):
    return _out((x * y).sum(dim), out)


# ---- LU family (values only: the derivative of an LU factorization is not implemented here) ------------
def _no_grad_input(A, fn):
    T = _torch()
    if A.requires_grad and T.is_grad_enabled():
        raise NotImplementedError("ctorch: the derivative of %s is not implemented; use linalg.solve, linalg.inv "
                                  "or linalg.det, which are differentiable" % fn)


_LUFactor = _collections.namedtuple("lu_factor", ["LU", "pivots"])
_LUFactorEx = _collections.namedtuple("lu_factor_ex", ["LU", "pivots", "info"])
_LU = _collections.namedtuple("lu", ["P", "L", "U"])


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    _check(A, "lu_factor_ex", square=False)
    _no_grad_input(A, "linalg.lu_factor")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    LU, piv, info = _C._linalg_lu(A.contiguous())
    if check_errors and _b.bool((info > 0).any()):
        raise _LinAlgError("torch.linalg.lu_factor_ex: U[%d,%d] is zero and using it on lu_solve would result in a "
                           "division by zero." % (int(info.reshape(-1)[0]), int(info.reshape(-1)[0])))
    return _LUFactorEx(LU, piv, info)


def lu_factor(A, *, pivot=True, out=None):
    LU, piv, info = lu_factor_ex(A, pivot=pivot)
    return _LUFactor(LU, piv)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    T = _torch()
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = _b.min(m, n)
    L = LU_data[..., :, :k].tril(-1) + T.eye(m, k, dtype=LU_data.dtype)
    U = LU_data[..., :k, :].triu()
    batch = tuple(LU_data.shape[:-2])
    piv = LU_pivots.reshape(-1, k).tolist()
    perms = []
    for row in piv:
        p = list(range(m))
        for i, j in enumerate(row):
            p[i], p[j - 1] = p[j - 1], p[i]
        perms.append(p)
    # P such that A = P L U: column j of P is e_{p[j]}
    P = T.zeros(len(perms), m, m, dtype=LU_data.dtype)
    for bi, p in enumerate(perms):
        for j, pj in enumerate(p):
            P[bi, pj, j] = 1.0
    P = P.reshape(batch + (m, m))
    return _LU(P, L, U)


def lu(A, *, pivot=True, out=None):
    LU, piv = lu_factor(A, pivot=pivot)
    return lu_unpack(LU, piv)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    P, L, U = lu_unpack(LU, pivots)
    A = P @ L @ U
    if adjoint:
        A = _t(A)
    return solve(A, B, left=left, out=out)


def _old_lu(A, pivot=True, get_infos=False, out=None):
    LU, piv, info = lu_factor_ex(A, pivot=pivot)
    return (LU, piv, info) if get_infos else (LU, piv)


def _old_lu_solve(b, LU_data, LU_pivots, *, out=None):
    return lu_solve(LU_data, LU_pivots, b, out=out)


def cholesky_solve(B, L, upper=False, *, out=None):
    Lm = _t(L) if upper else L
    Y = solve_triangular(Lm, B, upper=False)
    return _out(solve_triangular(_t(Lm), Y, upper=True), out)


def cholesky_inverse(L, upper=False, *, out=None):
    T = _torch()
    I = _eye_like(L).expand(L.shape)
    return _out(cholesky_solve(I, L, upper), out)


def _old_cholesky(A, upper=False, *, out=None):
    return cholesky(A, upper=upper, out=out)


def _old_qr(A, some=True, *, out=None):
    return qr(A, "reduced" if some else "complete")


_Geqrf = _collections.namedtuple("geqrf", ["a", "tau"])


def geqrf(input, *, out=None):
    """LAPACK's packed QR (values only: PyTorch has no derivative for geqrf either)"""
    _check(input, "geqrf", square=False)
    a, tau = _C._linalg_geqrf(input.detach().contiguous())
    return _Geqrf(a, tau)


def _old_symeig(A, eigenvectors=False, upper=True, *, out=None):
    T = _torch()
    w, V = eigh(A, "U" if upper else "L")
    _SymEig = _collections.namedtuple("symeig", ["eigenvalues", "eigenvectors"])
    return _SymEig(w, V if eigenvectors else T.empty(0, dtype=A.dtype))


def _out(r, out):
    if out is None:
        return r
    out.resize_(r.shape).copy_(r)
    return out


__all__ = ["inv", "inv_ex", "det", "slogdet", "solve", "solve_triangular", "cholesky", "cholesky_ex", "qr", "eigh",
           "eigvalsh", "svd", "svdvals", "pinv", "matrix_rank", "lstsq", "vector_norm", "matrix_norm", "norm",
           "cond", "cross", "matrix_power", "multi_dot", "matrix_exp", "diagonal", "vecdot", "lu_factor",
           "lu_factor_ex", "lu", "lu_unpack", "lu_solve", "LinAlgError"]
