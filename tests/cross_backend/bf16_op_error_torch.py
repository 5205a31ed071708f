"""PyTorch's side of test_ctorch's cuda_autocast_bf16_op_error_census (issue 7): the GPT-2 124M ops
under torch.autocast("cuda", bfloat16) at the same shapes, each against float64 on the same
bfloat16-valued inputs: relative L2 error of the result and of every input gradient, beside
"ideal" (the float64 answer rounded once to the result's dtype). Prints lines of the same form as
the C test so the two can be read side by side:  python3 tests/cross_backend/bf16_op_error_torch.py"""
import torch
import torch.nn.functional as F

dev = "cuda"
g = torch.Generator(device="cpu").manual_seed(77)


def inp(shape, sd):
    return (torch.randn(*shape, generator=g) * sd).bfloat16().float().to(dev)


def rel(got, ref):
    d = got.double() - ref.double()
    return (d.norm() / ref.double().norm()).item()


def report(op, what, got, ref):
    e, ideal = rel(got, ref), rel(ref.to(torch.bfloat16), ref)  # one bfloat16 rounding, as the C test
    print(f"bf16 census {op:<10} {what:<6} {str(got.dtype).replace('torch.', ''):<8} err {e:.3e} ideal {ideal:.3e} "
          f"ratio {e / ideal if ideal > 0 else 0:.2f}  (torch {torch.__version__})")


def leaves(*ts, dtype=None):
    out = []
    for t in ts:
        t = t.detach().to(dtype) if dtype else t.detach().clone()
        out.append(t.requires_grad_(True))
    return out


M, C, C3, C4, V, H, T, D = 1024, 768, 2304, 3072, 50257, 12, 1024, 64


def addmm(op, M, K, N):
    """addmm with the bias (nn.Linear's form): bf16 result; its gradient arrives rounded to bf16"""
    x, w, b, gy = inp((M, K), 1), inp((K, N), 0.02), inp((N,), 0.02), inp((M, N), 1)
    xr, wr, br = leaves(x, w, b, dtype=torch.float64)
    yr = torch.addmm(br, xr, wr)
    (yr * gy.double()).sum().backward()
    xd, wd, bd = leaves(x, w, b)
    with torch.autocast(dev, dtype=torch.bfloat16):
        yd = torch.addmm(bd, xd, wd)
    (yd.float() * gy).sum().backward()
    report(op, "out", yd, yr)
    report(op, "dx", xd.grad, xr.grad)
    report(op, "dW", wd.grad, wr.grad)
    report(op, "dbias", bd.grad, br.grad)


addmm("addmm", M, C, C3)
addmm("addmm4", M, C4, C)
# 2. GELU (tanh) on a bfloat16 activation
x, gy = inp((M, C4), 1), inp((M, C4), 1)
(xr,) = leaves(x, dtype=torch.float64)
yr = F.gelu(xr, approximate="tanh")
(yr * gy.double()).sum().backward()
(xd,) = leaves(x, dtype=torch.bfloat16)
yd = F.gelu(xd, approximate="tanh")
yd.backward(gy.bfloat16())
report("gelu_tanh", "out", yd, yr)
report("gelu_tanh", "dx", xd.grad, xr.grad)
# 3. causal flash attention on bfloat16 q, k, v: views of one [1, T, 3C] qkv buffer, as the GPT takes them
qkv, gy = inp((1, T, C3), 1), inp((1, H, T, D), 1)
ys, grads = [], []
for dt in (torch.float64, torch.bfloat16):
    (src,) = leaves(qkv, dtype=dt)
    q, k, v = (t.view(1, T, H, D).transpose(1, 2) for t in src.split(C, dim=2))
    with torch.autocast(dev, dtype=torch.bfloat16, enabled=dt == torch.bfloat16):
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    y.backward(gy.to(dt))
    ys.append(y)
    grads.append(src.grad)
report("sdpa", "out", ys[1], ys[0])
for j, nm in enumerate(("dq", "dk", "dv")):
    report("sdpa", nm, grads[1][:, :, j * C:(j + 1) * C], grads[0][:, :, j * C:(j + 1) * C])
# 4. lm_head and the loss's logsumexp over a float32 copy of the bf16 logits
x, w = inp((256, C), 1), inp((V, C), 0.1)
xr, wr = leaves(x, w, dtype=torch.float64)
zr = xr @ wr.t()
lr = torch.logsumexp(zr, 1)
lr.sum().backward()
xd, wd = leaves(x, w)
with torch.autocast(dev, dtype=torch.bfloat16):
    zd = xd @ wd.t()
ld = torch.logsumexp(zd.float(), 1)
ld.sum().backward()
report("lm_head", "logits", zd, zr)
print(f"bf16 census {'lse':<10} {'out':<6} {'float32':<8} err {rel(ld, lr):.3e} (float32 result of bf16 logits)")
report("lm_head", "dx", xd.grad, xr.grad)
report("lm_head", "dW", wd.grad, wr.grad)
