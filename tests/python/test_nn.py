"""torch.nn and torch.optim: same initial weights (same seed), same outputs, same training steps."""
import pytest
import torch
import ctorch
from conftest import both


def seeded(L, fn, seed=0):
    L.manual_seed(seed)
    return fn(L)


LAYERS = {
    "linear": lambda L: L.nn.Linear(4, 3),
    "linear_nobias": lambda L: L.nn.Linear(4, 3, bias=False),
    "conv2d": lambda L: L.nn.Conv2d(2, 3, 3, padding=1),
    "conv2d_stride": lambda L: L.nn.Conv2d(2, 4, (3, 2), stride=2, bias=False),
    "conv2d_reflect": lambda L: L.nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"),
    "conv1d": lambda L: L.nn.Conv1d(2, 3, 3),
    "convT": lambda L: L.nn.ConvTranspose2d(2, 3, 3, stride=2),
    "embedding": lambda L: L.nn.Embedding(10, 4),
    "embedding_pad": lambda L: L.nn.Embedding(10, 4, padding_idx=0),
    "layernorm": lambda L: L.nn.LayerNorm(4),
    "batchnorm1d": lambda L: L.nn.BatchNorm1d(4),
    "groupnorm": lambda L: L.nn.GroupNorm(2, 4),
    "sequential": lambda L: L.nn.Sequential(L.nn.Linear(4, 8), L.nn.ReLU(), L.nn.Linear(8, 2)),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_init_and_state_dict(name):
    def f(L):
        m = seeded(L, LAYERS[name])
        sd = m.state_dict()
        return list(sd.keys()), [sd[k] for k in sd], [n for n, _ in m.named_parameters()]
    both(f, rtol=0, atol=0)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_repr(name):
    assert repr(seeded(ctorch, LAYERS[name])) == repr(seeded(torch, LAYERS[name]))


INPUTS = {
    "linear": lambda L: L.randn(5, 4), "linear_nobias": lambda L: L.randn(2, 4), "conv2d": lambda L: L.randn(1, 2, 5, 5),
    "conv2d_stride": lambda L: L.randn(2, 2, 6, 5), "conv2d_reflect": lambda L: L.randn(1, 2, 4, 4),
    "conv1d": lambda L: L.randn(2, 2, 7), "convT": lambda L: L.randn(1, 2, 3, 3),
    "embedding": lambda L: L.tensor([[1, 2], [9, 0]]), "embedding_pad": lambda L: L.tensor([0, 3, 0]),
    "layernorm": lambda L: L.randn(3, 4), "batchnorm1d": lambda L: L.randn(6, 4), "groupnorm": lambda L: L.randn(2, 4, 3),
    "sequential": lambda L: L.randn(3, 4),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_forward_backward(name):
    def f(L):
        m = seeded(L, LAYERS[name])
        x = INPUTS[name](L)
        y = m(x)
        y.sum().backward() if y.is_floating_point() else None
        return y, [p.grad for p in m.parameters()], [b for b in m.buffers()]
    both(f, rtol=1e-4, atol=1e-5)


ACTS = ["ReLU", "ReLU6", "LeakyReLU", "GELU", "SiLU", "Mish", "ELU", "CELU", "SELU", "Sigmoid", "Tanh", "Softsign",
        "Hardsigmoid", "Hardswish", "Hardtanh", "Softplus", "LogSigmoid", "Identity", "Flatten"]


@pytest.mark.parametrize("name", ACTS)
def test_activation_modules(name):
    def f(L):
        m = getattr(L.nn, name)()
        x = L.linspace(-3, 3, 12).reshape(3, 4).requires_grad_()
        y = m(x)
        y.sum().backward()
        return y, x.grad, repr(m)
    both(f, rtol=1e-5, atol=1e-6)


def test_softmax_modules():
    both(lambda L: L.nn.Softmax(dim=1)(L.arange(6.0).reshape(2, 3)))
    both(lambda L: L.nn.LogSoftmax(dim=0)(L.arange(6.0).reshape(2, 3)))
    both(lambda L: repr(L.nn.Softmax(dim=1)))


LOSSES = {
    "mse": lambda L: L.nn.MSELoss()(L.arange(6.0).reshape(2, 3) / 4, L.ones(2, 3)),
    "l1_sum": lambda L: L.nn.L1Loss(reduction="sum")(L.arange(6.0), L.ones(6)),
    "ce": lambda L: L.nn.CrossEntropyLoss()(L.tensor([[1.0, 2.0, 0.1], [0.3, 0.2, 2.0]]), L.tensor([1, 0])),
    "ce_ls": lambda L: L.nn.CrossEntropyLoss(label_smoothing=0.1)(L.tensor([[1.0, 2.0, 0.1]]), L.tensor([2])),
    "nll": lambda L: L.nn.NLLLoss()(L.log_softmax(L.tensor([[1.0, 2.0], [0.5, 0.1]]), 1), L.tensor([1, 1])),
    "bce": lambda L: L.nn.BCELoss()(L.tensor([0.2, 0.9]), L.tensor([0.0, 1.0])),
    "bcel": lambda L: L.nn.BCEWithLogitsLoss()(L.tensor([0.2, -0.9]), L.tensor([0.0, 1.0])),
    "smoothl1": lambda L: L.nn.SmoothL1Loss()(L.tensor([0.2, 3.0]), L.tensor([0.0, 1.0])),
    "huber": lambda L: L.nn.HuberLoss(delta=0.5)(L.tensor([0.2, 3.0]), L.tensor([0.0, 1.0])),
    "kl": lambda L: L.nn.KLDivLoss(reduction="batchmean")(L.tensor([[-1.0, -2.0]]), L.tensor([[0.3, 0.7]])),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_losses(name):
    both(LOSSES[name])


def test_functional():
    F = "nn.functional"
    both(lambda L: L.nn.functional.relu(L.tensor([-1.0, 2.0])))
    both(lambda L: L.nn.functional.gelu(L.tensor([-1.0, 2.0]), approximate="tanh"))
    both(lambda L: L.nn.functional.softmax(L.tensor([[1.0, 2.0]]), dim=-1))
    both(lambda L: L.nn.functional.one_hot(L.tensor([0, 2]), 3))
    both(lambda L: L.nn.functional.pad(L.ones(2, 2), (1, 1)))
    both(lambda L: L.nn.functional.max_pool2d(L.arange(16.0).reshape(1, 1, 4, 4), 2))
    both(lambda L: L.nn.functional.avg_pool2d(L.arange(16.0).reshape(1, 1, 4, 4), 2, stride=1))
    both(lambda L: L.nn.functional.adaptive_avg_pool2d(L.arange(16.0).reshape(1, 1, 4, 4), (1, 1)))
    both(lambda L: L.nn.functional.normalize(L.tensor([[3.0, 4.0]])))
    both(lambda L: L.nn.functional.cosine_similarity(L.tensor([[1.0, 0.0]]), L.tensor([[1.0, 1.0]])))
    both(lambda L: L.nn.functional.dropout(L.ones(4), 0.5, training=False))
    both(lambda L: seeded(L, lambda L: L.nn.functional.dropout(L.ones(10), 0.5)), rtol=0, atol=0)
    both(lambda L: seeded(L, lambda L: L.nn.Dropout(0.3)(L.ones(3, 4))), rtol=0, atol=0)


def test_module_api():
    def f(L):
        L.manual_seed(0)

        class Net(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = L.nn.Linear(3, 4)
                self.act = L.nn.Tanh()
                self.blocks = L.nn.ModuleList([L.nn.Linear(4, 4) for _ in range(2)])
                self.head = L.nn.ModuleDict({"out": L.nn.Linear(4, 1)})
                self.register_buffer("scale", L.tensor(2.0))
                self.extra = L.nn.Parameter(L.zeros(2))

            def forward(self, x):
                x = self.act(self.fc1(x))
                for b in self.blocks:
                    x = b(x)
                return self.head["out"](x) * self.scale

        net = Net()
        names = [n for n, _ in net.named_parameters()]
        mods = [n for n, _ in net.named_modules()]
        buf = [n for n, _ in net.named_buffers()]
        kids = [type(c).__name__ for c in net.children()]
        y = net(L.ones(2, 3))
        net.eval()
        tr = [m.training for m in net.modules()]
        net.train()
        return names, mods, buf, kids, y, tr, repr(net), len(list(net.parameters()))
    both(f, rtol=1e-5, atol=1e-6)


def test_load_state_dict():
    def f(L):
        L.manual_seed(1)
        a = L.nn.Linear(3, 2)
        b = L.nn.Linear(3, 2)
        r = b.load_state_dict(a.state_dict())
        return repr(r), b.weight, b(L.ones(1, 3))
    both(f)

    def bad(L):
        m = L.nn.Linear(3, 2)
        sd = m.state_dict()
        del sd["bias"]
        sd["extra"] = L.zeros(1)
        m.load_state_dict(sd)
    c, t = both(bad)
    assert str(c) == str(t)

    def shape(L):
        m = L.nn.Linear(3, 2)
        m.load_state_dict({"weight": L.zeros(2, 4), "bias": L.zeros(2)})
    c, t = both(shape)
    assert str(c) == str(t)

    def nonstrict(L):
        m = L.nn.Linear(3, 2)
        return tuple(m.load_state_dict({"weight": L.zeros(2, 3), "foo": L.zeros(1)}, strict=False))
    both(nonstrict)


def _train(L, opt_fn, steps=5):
    L.manual_seed(0)
    model = L.nn.Sequential(L.nn.Linear(4, 8), L.nn.ReLU(), L.nn.Linear(8, 3))
    opt = opt_fn(L, model.parameters())
    x = L.randn(16, 4)
    y = L.randint(0, 3, (16,))
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = L.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p for p in model.parameters()]


OPTS = {
    "sgd": lambda L, p: L.optim.SGD(p, lr=0.1),
    "sgd_momentum": lambda L, p: L.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-3),
    "sgd_nesterov": lambda L, p: L.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
    "adam": lambda L, p: L.optim.Adam(p, lr=0.01),
    "adam_wd_ams": lambda L, p: L.optim.Adam(p, lr=0.01, weight_decay=0.1, amsgrad=True),
    "adamw": lambda L, p: L.optim.AdamW(p, lr=0.01),
    "rmsprop": lambda L, p: L.optim.RMSprop(p, lr=0.01),
    "adagrad": lambda L, p: L.optim.Adagrad(p, lr=0.1),
}


@pytest.mark.parametrize("name", sorted(OPTS))
def test_optimizers(name):
    both(lambda L: _train(L, OPTS[name]), rtol=1e-4, atol=1e-5)


SCHEDS = {
    "step": lambda L, o: L.optim.lr_scheduler.StepLR(o, 2, 0.5),
    "multistep": lambda L, o: L.optim.lr_scheduler.MultiStepLR(o, [2, 4], 0.1),
    "exp": lambda L, o: L.optim.lr_scheduler.ExponentialLR(o, 0.9),
    "cos": lambda L, o: L.optim.lr_scheduler.CosineAnnealingLR(o, 5),
    "lambda": lambda L, o: L.optim.lr_scheduler.LambdaLR(o, lambda e: 0.5 ** e),
    "linear": lambda L, o: L.optim.lr_scheduler.LinearLR(o, 0.5, total_iters=3),
    "onecycle": lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, 0.1, total_steps=10),
}


@pytest.mark.parametrize("name", sorted(SCHEDS))
def test_schedulers(name):
    def f(L):
        p = L.nn.Parameter(L.zeros(2))
        o = L.optim.SGD([p], lr=0.1, momentum=0.9)
        s = SCHEDS[name](L, o)
        lrs = []
        for _ in range(8):
            o.step()
            s.step()
            lrs.append(s.get_last_lr()[0])
        return lrs
    both(f, rtol=1e-12, atol=1e-15)


def test_clip_grad_norm():
    def f(L):
        p = L.nn.Parameter(L.tensor([3.0, 4.0]))
        (p * p).sum().backward()
        n = L.nn.utils.clip_grad_norm_([p], 1.0)
        return n, p.grad
    both(f)


def test_dataloader_shuffle():
    def f(L):
        L.manual_seed(7)
        ds = L.utils.data.TensorDataset(L.arange(10.0), L.arange(10))
        dl = L.utils.data.DataLoader(ds, batch_size=4, shuffle=True)
        out = [(x.tolist(), y.tolist()) for x, y in dl]
        out2 = [y.tolist() for _, y in L.utils.data.DataLoader(ds, batch_size=3, drop_last=True)]
        return out, out2, len(dl), L.rand(1)
    both(f, rtol=0, atol=0)


def test_random_split():
    def f(L):
        a, b = L.utils.data.random_split(range(10), [7, 3], generator=L.Generator().manual_seed(42))
        return list(a), list(b)
    both(f)


def test_save_load_roundtrip(tmp_path):
    ctorch.manual_seed(0)
    m = ctorch.nn.Linear(3, 2)
    p = tmp_path / "m.pt"
    ctorch.save(m.state_dict(), str(p))
    sd = ctorch.load(str(p))
    assert list(sd.keys()) == ["weight", "bias"]
    assert sd["weight"].tolist() == m.weight.tolist()
    # PyTorch reads ctorch's file, and ctorch reads PyTorch's
    tsd = torch.load(str(p))
    assert tsd["weight"].tolist() == m.weight.tolist()
    q = tmp_path / "t.pt"
    torch.save({"a": torch.arange(6).reshape(2, 3).t(), "b": [torch.tensor(1.5), 3], "n": "x"}, str(q))
    d = ctorch.load(str(q))
    assert d["a"].tolist() == [[0, 3], [1, 4], [2, 5]] and d["b"][0].item() == 1.5 and d["b"][1] == 3


def test_load_refuses_code(tmp_path):
    import pickle
    import zipfile

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))
    p = tmp_path / "evil.pt"
    with zipfile.ZipFile(str(p), "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps(Evil(), protocol=2))
    with pytest.raises(pickle.UnpicklingError, match="refuses"):
        ctorch.load(str(p))
