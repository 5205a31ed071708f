"""torch.autograd.gradcheck: analytical gradients against central finite differences."""
from .. import _C


class GradcheckError(RuntimeError):
    pass


def _flat_inputs(inputs):
    return inputs if isinstance(inputs, tuple) else (inputs,)


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **kwargs):
    import ctorch
    inputs = _flat_inputs(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, _C._TensorBase) and x.requires_grad]

    def run(args):
        out = func(*args)
        return out if isinstance(out, tuple) else (out,)

    outs = run(inputs)
    for oi, out in enumerate(outs):
        if not isinstance(out, _C._TensorBase) or not out.requires_grad:
            continue
        n_out = out.numel()
        for ii in diff:
            x = inputs[ii]
            # analytical: one row of the Jacobian per output element
            ana = []
            for k in range(n_out):
                g = ctorch.zeros_like(out).reshape(-1)
                g[k] = 1.0
                gx = ctorch.autograd.grad(out, x, g.reshape(out.shape), retain_graph=True, allow_unused=True)[0]
                ana.append(ctorch.zeros_like(x).reshape(-1).tolist() if gx is None else gx.reshape(-1).tolist())
            # numerical
            flat = x.detach().reshape(-1)
            num = [[0.0] * n_out for _ in range(x.numel())]
            for j in range(x.numel()):
                orig = flat[j].item()
                with ctorch.no_grad():
                    flat_copy = x.detach().clone().reshape(-1)
                    flat_copy[j] = orig + eps
                    a = list(inputs)
                    a[ii] = flat_copy.reshape(x.shape)
                    plus = run(a)[oi].reshape(-1).tolist()
                    flat_copy[j] = orig - eps
                    a[ii] = flat_copy.reshape(x.shape)
                    minus = run(a)[oi].reshape(-1).tolist()
                for k in range(n_out):
                    num[j][k] = (plus[k] - minus[k]) / (2 * eps)
            for j in range(x.numel()):
                for k in range(n_out):
                    a_, n_ = ana[k][j], num[j][k]
                    if abs(a_ - n_) > atol + rtol * abs(n_):
                        if raise_exception:
                            raise GradcheckError(
                                "Jacobian mismatch for output %d with respect to input %d,\nnumerical:%s\n"
                                "analytical:%s\n" % (oi, ii, n_, a_))
                        return False
    return True
