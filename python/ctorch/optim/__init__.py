"""torch.optim: the single-tensor update rules of PyTorch 1.13, in its arithmetic order."""
import math

from .. import _C
from ..autograd.grad_mode import no_grad, enable_grad
from .optimizer import Optimizer, required  # noqa: F401
from . import lr_scheduler  # noqa: F401


def _closure(closure):
    if closure is None:
        return None
    with enable_grad():
        return closure()


def _check_nonneg(*named):
    """PyTorch's hyper-parameter checks, in its order and wording."""
    for what, v in named:
        if not 0.0 <= v:
            if what == "learning rate":
                raise ValueError("Invalid learning rate: {}".format(v))
            raise ValueError("Invalid {} value: {}".format(what, v))


class SGD(Optimizer):
    def __init__(self, params, lr=required, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False):
        if lr is not required and lr < 0.0:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if momentum < 0.0:
            raise ValueError("Invalid momentum value: {}".format(momentum))
        if weight_decay < 0.0:
            raise ValueError("Invalid weight_decay value: {}".format(weight_decay))
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize, foreach=foreach,
                                      differentiable=differentiable))

    @no_grad()
    def step(self, closure=None):
        loss = _closure(closure)
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                d_p = p.grad if not g["maximize"] else -p.grad
                if g["weight_decay"] != 0:
                    d_p = d_p.add(p, alpha=g["weight_decay"])
                if g["momentum"] != 0:
                    st = self.state[p]
                    buf = st.get("momentum_buffer")
                    if buf is None:
                        buf = _C.clone(d_p).detach()
                        st["momentum_buffer"] = buf
                    else:
                        buf.mul_(g["momentum"]).add_(d_p, alpha=1 - g["dampening"])
                    d_p = d_p.add(buf, alpha=g["momentum"]) if g["nesterov"] else buf
                p.add_(d_p, alpha=-g["lr"])
        return loss


class Adam(Optimizer):
    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=False):
        if not 0.0 <= lr:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if not 0.0 <= eps:
            raise ValueError("Invalid epsilon value: {}".format(eps))
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError("Invalid beta parameter at index 0: {}".format(betas[0]))
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError("Invalid beta parameter at index 1: {}".format(betas[1]))
        if not 0.0 <= weight_decay:
            raise ValueError("Invalid weight_decay value: {}".format(weight_decay))
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable, fused=fused))

    @no_grad()
    def step(self, closure=None):
        self._cuda_graph_capture_health_check()
        loss = _closure(closure)
        for g in self.param_groups:
            beta1, beta2 = g["betas"]
            lr, eps, wd = g["lr"], g["eps"], g["weight_decay"]
            capturable = g["capturable"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                grad = p.grad if not g["maximize"] else -p.grad
                st = self.state[p]
                if len(st) == 0:
                    # capturable: the step count lives on the parameter's device, so that a CUDA graph's replays
                    # advance it and the bias corrections are computed there (PyTorch 1.13's shape (1,) tensor)
                    st["step"] = _C.zeros((1,), device=p.device) if capturable else _C.tensor(0.0)
                    st["exp_avg"] = _C.zeros_like(p)
                    st["exp_avg_sq"] = _C.zeros_like(p)
                    if g["amsgrad"]:
                        st["max_exp_avg_sq"] = _C.zeros_like(p)
                if capturable and not (p.is_cuda and st["step"].is_cuda):
                    raise AssertionError("If capturable=True, params and state_steps must be CUDA tensors.")
                st["step"] += 1
                if self._decoupled:
                    p.mul_(1 - lr * wd)
                elif wd != 0:
                    grad = grad.add(p, alpha=wd)
                exp_avg, exp_avg_sq = st["exp_avg"], st["exp_avg_sq"]
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                if g["amsgrad"]:
                    st["max_exp_avg_sq"].copy_(_C.maximum(st["max_exp_avg_sq"], exp_avg_sq))
                    v = st["max_exp_avg_sq"]
                else:
                    v = exp_avg_sq
                if capturable:  # PyTorch 1.13's capturable order: everything on the device, no host read
                    step_t = st["step"]
                    step_size_neg = (lr / (1 - _C.pow(beta1, step_t))).neg()
                    bc2_sqrt = (1 - _C.pow(beta2, step_t)).sqrt()
                    p.addcdiv_(exp_avg, (v.sqrt() / (bc2_sqrt * step_size_neg)).add_(eps / step_size_neg))
                else:
                    step = st["step"].item()
                    step_size = lr / (1 - beta1 ** step)
                    bc2_sqrt = math.sqrt(1 - beta2 ** step)
                    p.addcdiv_(exp_avg, (v.sqrt() / bc2_sqrt).add_(eps), value=-step_size)
        return loss


class AdamW(Adam):
    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused)


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 foreach=None, maximize=False, differentiable=False):
        _check_nonneg(("learning rate", lr), ("epsilon", eps), ("momentum", momentum), ("weight_decay", weight_decay),
                      ("alpha", alpha))
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable))

    @no_grad()
    def step(self, closure=None):
        loss = _closure(closure)
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                grad = p.grad if not g["maximize"] else -p.grad
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = _C.tensor(0.0)
                    st["square_avg"] = _C.zeros_like(p)
                    if g["momentum"] > 0:
                        st["momentum_buffer"] = _C.zeros_like(p)
                    if g["centered"]:
                        st["grad_avg"] = _C.zeros_like(p)
                st["step"] += 1
                if g["weight_decay"] != 0:
                    grad = grad.add(p, alpha=g["weight_decay"])
                sq = st["square_avg"]
                sq.mul_(g["alpha"]).addcmul_(grad, grad, value=1 - g["alpha"])
                if g["centered"]:
                    ga = st["grad_avg"]
                    ga.mul_(g["alpha"]).add_(grad, alpha=1 - g["alpha"])
                    avg = sq.addcmul(ga, ga, value=-1).sqrt_().add_(g["eps"])
                else:
                    avg = sq.sqrt().add_(g["eps"])
                if g["momentum"] > 0:
                    buf = st["momentum_buffer"]
                    buf.mul_(g["momentum"]).addcdiv_(grad, avg)
                    p.add_(buf, alpha=-g["lr"])
                else:
                    p.addcdiv_(grad, avg, value=-g["lr"])
        return loss


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False):
        _check_nonneg(("learning rate", lr), ("lr_decay", lr_decay), ("weight_decay", weight_decay),
                      ("initial_accumulator_value", initial_accumulator_value), ("epsilon", eps))
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable))
        for g in self.param_groups:
            for p in g["params"]:
                st = self.state[p]
                st["step"] = _C.tensor(0.0)
                st["sum"] = _C.full_like(p, initial_accumulator_value)

    @no_grad()
    def step(self, closure=None):
        loss = _closure(closure)
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                grad = p.grad if not g["maximize"] else -p.grad
                st = self.state[p]
                st["step"] += 1
                step = st["step"].item()
                if g["weight_decay"] != 0:
                    grad = grad.add(p, alpha=g["weight_decay"])
                clr = g["lr"] / (1 + (step - 1) * g["lr_decay"])
                st["sum"].addcmul_(grad, grad, value=1)
                std = st["sum"].sqrt().add_(g["eps"])
                p.addcdiv_(grad, std, value=-clr)
        return loss
