"""torch.linalg (implemented in ctorch/_linalg.py)."""
from ._linalg import (  # noqa: F401
    inv, inv_ex, det, slogdet, solve, solve_triangular, cholesky, cholesky_ex, qr, eigh, eigvalsh, svd, svdvals,
    pinv, matrix_rank, lstsq, vector_norm, matrix_norm, norm, cond, cross, matrix_power, multi_dot, matrix_exp,
    diagonal, vecdot, lu_factor, lu_factor_ex, lu, lu_unpack, lu_solve, LinAlgError,
)


def _complex_only(name):
    def f(*args, **kwargs):
        raise NotImplementedError("torch.linalg.%s: the result is complex and ctorch has no complex dtypes; use "
                                  "linalg.eigh for symmetric matrices" % name)
    f.__name__ = name
    return f


eig = _complex_only("eig")
eigvals = _complex_only("eigvals")
