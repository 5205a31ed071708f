"""Random ops: every case seeds torch's default generator (attr "seed"; the C runner
seeds ctorch's default generator the same way) and compares exactly (rtol = atol = 0):
ctorch's streams are PyTorch 1.13's CPU streams bit for bit."""
import warnings
import torch
from parity_lib import case, T

warnings.filterwarnings("ignore", message=".*out of bounds.*")

EXACT = dict(rtol=0.0, atol=0.0, fd=False)
DT = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
      "int8": torch.int8, "uint8": torch.uint8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
      "bool": torch.bool}
FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int8", "uint8", "int16", "int32", "int64")


def seeded(seed, f):
    def fn(*xs):
        torch.manual_seed(seed)
        return f(*xs)
    return fn


CASES = []


def add(name, op, inputs, seed, f, attrs=None, error=None):
    a = dict(attrs or {})
    a["seed"] = seed
    CASES.append(case(name, op, inputs, seeded(seed, f) if f else None, attrs=a, error=error, **EXACT))


# ---- rand / randn: sizes below, at and above the 16-element blocks of normal_fill ----
for dt in FLOATS:
    for shape in [(), (3,), (15,), (16,), (17,), (4, 25), (2, 3, 40)]:
        tag = "x".join(map(str, shape)) or "scalar"
        add("rand_%s_%s" % (dt, tag), "rand", [], 11, lambda s=shape, d=dt: torch.rand(s, dtype=DT[d]),
            {"shape": list(shape), "dtype": dt})
        add("randn_%s_%s" % (dt, tag), "randn", [], 12, lambda s=shape, d=dt: torch.randn(s, dtype=DT[d]),
            {"shape": list(shape), "dtype": dt})
add("rand_empty", "rand", [], 1, lambda: torch.rand(0, 3), {"shape": [0, 3], "dtype": "float32"})
add("randn_empty", "randn", [], 1, lambda: torch.randn(2, 0), {"shape": [2, 0], "dtype": "float32"})
for dt in INTS + ("bool",):
    add("rand_bad_%s" % dt, "rand", [], 1, lambda d=dt: torch.rand(3, dtype=DT[d]), {"shape": [3], "dtype": dt},
        error="\"check_uniform_bounds\" not implemented for")
    add("randn_bad_%s" % dt, "randn", [], 1, lambda d=dt: torch.randn(3, dtype=DT[d]), {"shape": [3], "dtype": dt},
        error="\"normal_kernel_cpu\" not implemented for")
add("rand_negative_dim", "rand", [], 1, lambda: torch.rand(2, -1), {"shape": [2, -1], "dtype": "float32"},
    error="Trying to create tensor with negative dimension -1: [2, -1]")

# ---- randint ----
for dt in FLOATS + INTS:
    add("randint_%s" % dt, "randint", [], 21, lambda d=dt: torch.randint(0, 100, (5, 7), dtype=DT[d]),
        {"low": 0, "high": 100, "shape": [5, 7], "dtype": dt})
add("randint_bool", "randint", [], 21, lambda: torch.randint(0, 2, (9,), dtype=torch.bool),
    {"low": 0, "high": 2, "shape": [9], "dtype": "bool"})
add("randint_negative", "randint", [], 22, lambda: torch.randint(-50, -3, (30,)),
    {"low": -50, "high": -3, "shape": [30], "dtype": "int64"})
add("randint_wide_int64", "randint", [], 23, lambda: torch.randint(-2 ** 40, 2 ** 41, (20,)),
    {"low": -2 ** 40, "high": 2 ** 41, "shape": [20], "dtype": "int64"})
add("randint_wide_float32", "randint", [], 24, lambda: torch.randint(0, 2 ** 33, (20,), dtype=torch.float32),
    {"low": 0, "high": 2 ** 33, "shape": [20], "dtype": "float32"})
add("randint_wide_float64", "randint", [], 24, lambda: torch.randint(-2 ** 60, 2 ** 60, (20,), dtype=torch.float64),
    {"low": -2 ** 60, "high": 2 ** 60, "shape": [20], "dtype": "float64"})
add("randint_half_big", "randint", [], 25, lambda: torch.randint(-3000, 5000, (20,), dtype=torch.float16),
    {"low": -3000, "high": 5000, "shape": [20], "dtype": "float16"})
add("randint_bf16_big", "randint", [], 25, lambda: torch.randint(-3000, 5000, (20,), dtype=torch.bfloat16),
    {"low": -3000, "high": 5000, "shape": [20], "dtype": "bfloat16"})
add("randint_scalar", "randint", [], 26, lambda: torch.randint(3, 9, ()), {"low": 3, "high": 9, "shape": [], "dtype": "int64"})
add("randint_empty_range", "randint", [], 1, lambda: torch.randint(5, 5, (3,)), {"low": 5, "high": 5, "shape": [3], "dtype": "int64"},
    error="random_ expects 'from' to be less than 'to', but got from=5 >= to=5")
add("randint_int8_oob", "randint", [], 1, lambda: torch.randint(0, 300, (3,), dtype=torch.int8),
    {"low": 0, "high": 300, "shape": [3], "dtype": "int8"}, error="to - 1 is out of bounds for signed char")
add("randint_uint8_oob", "randint", [], 1, lambda: torch.randint(-5, 3, (3,), dtype=torch.uint8),
    {"low": -5, "high": 3, "shape": [3], "dtype": "uint8"}, error="from is out of bounds for unsigned char")
add("randint_bool_oob", "randint", [], 1, lambda: torch.randint(0, 3, (3,), dtype=torch.bool),
    {"low": 0, "high": 3, "shape": [3], "dtype": "bool"}, error="to - 1 is out of bounds for bool")

# ---- randperm ----
for dt, n in [("int64", 50), ("int32", 50), ("int16", 50), ("int8", 128), ("uint8", 256), ("float32", 70),
              ("float64", 70), ("float16", 2049), ("bfloat16", 300)]:
    add("randperm_%s_%d" % (dt, n), "randperm", [], 31, lambda d=dt, n=n: torch.randperm(n, dtype=DT[d]), {"n": n, "dtype": dt})
add("randperm_0", "randperm", [], 31, lambda: torch.randperm(0), {"n": 0, "dtype": "int64"})
add("randperm_1", "randperm", [], 31, lambda: torch.randperm(1), {"n": 1, "dtype": "int64"})
add("randperm_big", "randperm", [], 32, lambda: torch.randperm(5000), {"n": 5000, "dtype": "int64"})
add("randperm_neg", "randperm", [], 1, lambda: torch.randperm(-1), {"n": -1, "dtype": "int64"},
    error="Trying to create tensor with negative dimension -1: [-1]")
add("randperm_half_limit", "randperm", [], 1, lambda: torch.randperm(3000, dtype=torch.half), {"n": 3000, "dtype": "float16"},
    error="n cannot be greater than 2049 for Half type.")
add("randperm_int8_limit", "randperm", [], 1, lambda: torch.randperm(129, dtype=torch.int8), {"n": 129, "dtype": "int8"},
    error="value cannot be converted to type int8_t without overflow")
add("randperm_bool", "randperm", [], 1, lambda: torch.randperm(3, dtype=torch.bool), {"n": 3, "dtype": "bool"},
    error="\"randperm\" not implemented for 'Bool'")

# ---- *_like ----
add("rand_like_f64", "rand_like", [T((3, 5), "float64", requires_grad=False)], 41, lambda x: torch.rand_like(x))
add("randn_like_f32", "randn_like", [T((4, 9), requires_grad=False)], 42, lambda x: torch.randn_like(x))
add("randn_like_bf16", "randn_like", [T((20,), "bfloat16", requires_grad=False)], 42, lambda x: torch.randn_like(x))
add("randint_like_f32", "randint_like", [T((3, 5), requires_grad=False)], 43, lambda x: torch.randint_like(x, 2, 9),
    {"low": 2, "high": 9})
add("randint_like_i32", "randint_like", [T((3, 5), "int32")], 43, lambda x: torch.randint_like(x, -4, 9),
    {"low": -4, "high": 9})
add("rand_like_long", "rand_like", [T((3,), "int64")], 1, lambda x: torch.rand_like(x),
    error="\"check_uniform_bounds\" not implemented for 'Long'")


# ---- in-place fills, contiguous and not (PyTorch fills a non-contiguous tensor in memory order) ----
def inplace(name, op, t, seed, f, attrs=None, error=None):
    add(name, op, [t], seed, f, attrs, error)


for layout in ("contiguous", "transposed", "strided"):
    for dt in FLOATS:
        for shape in [(3, 4), (6, 7), (5, 40)]:
            tag = "%s_%s_%s" % (dt, layout, "x".join(map(str, shape)))
            inplace("normal__" + tag, "normal_", T(shape, dt, layout=layout, requires_grad=False), 51,
                    lambda x: x.normal_(0.5, 2.0), {"mean": 0.5, "std": 2.0})
            inplace("uniform__" + tag, "uniform_", T(shape, dt, layout=layout, requires_grad=False), 52,
                    lambda x: x.uniform_(-1.5, 3.0), {"from": -1.5, "to": 3.0})
            inplace("exponential__" + tag, "exponential_", T(shape, dt, layout=layout, requires_grad=False), 53,
                    lambda x: x.exponential_(1.5), {"lambd": 1.5})
    for dt in FLOATS + INTS + ("bool",):
        if dt == "float16":
            continue
        tag = "%s_%s" % (dt, layout)
        inplace("bernoulli__" + tag, "bernoulli_", T((6, 7), dt, layout=layout, requires_grad=False), 54,
                lambda x: x.bernoulli_(0.3), {"p": 0.3})
        inplace("bernoulli_t_" + tag, "bernoulli_t", [T((6, 7), dt, layout=layout, requires_grad=False)][0], 55,
                None, {"p_seed": 1})
    for dt in INTS + FLOATS:
        inplace("random__%s_%s" % (dt, layout), "random_", T((6, 7), dt, layout=layout, requires_grad=False), 56,
                lambda x: x.random_(-3, 100) if x.dtype != torch.uint8 else x.random_(3, 100),
                {"from": -3 if dt != "uint8" else 3, "to": 100})
# bernoulli_ with a tensor p: p float32 (float uniforms) / float64 (double uniforms), broadcast p
CASES[:] = [c for c in CASES if not c.name.startswith("bernoulli_t_")]
for pdt in ("float32", "float64", "bfloat16"):
    for sdt in ("float32", "float64", "int64", "bool", "bfloat16"):
        for layout in ("contiguous", "transposed"):
            add("bernoulli_t_%s_p%s_%s" % (sdt, pdt, layout), "bernoulli_t",
                [T((6, 7), sdt, layout=layout, requires_grad=False), T((6, 7), pdt, low=0.0, high=1.0, requires_grad=False)],
                57, lambda x, p: x.bernoulli_(p))
add("bernoulli_t_broadcast", "bernoulli_t", [T((5, 7), requires_grad=False), T((7,), "float64", low=0.0, high=1.0, requires_grad=False)],
    58, lambda x, p: x.bernoulli_(p))
add("bernoulli_t_bad_p", "bernoulli_t", [T((3,), requires_grad=False), T((3,), low=1.5, high=2.0, requires_grad=False)], 1,
    lambda x, p: x.bernoulli_(p), error="Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
add("bernoulli_t_bad_shape", "bernoulli_t", [T((3,), requires_grad=False), T((2,), low=0.0, high=1.0, requires_grad=False)], 1,
    lambda x, p: x.bernoulli_(p), error="The expanded size of the tensor (3) must match the existing size (2)")
add("bernoulli__half", "bernoulli_", [T((3,), "float16", requires_grad=False)], 1, lambda x: x.bernoulli_(0.5), {"p": 0.5},
    error="\"bernoulli_scalar_cpu_\" not implemented for 'Half'")
add("bernoulli__bad_p", "bernoulli_", [T((3,), requires_grad=False)], 1, lambda x: x.bernoulli_(1.5), {"p": 1.5},
    error="bernoulli_ expects p to be in [0, 1], but got p=1.5")
add("normal__bad_std", "normal_", [T((3,), requires_grad=False)], 1, lambda x: x.normal_(0.0, -1.0), {"mean": 0.0, "std": -1.0},
    error="normal expects std >= 0.0, but found std -1")
add("normal__long", "normal_", [T((3,), "int64")], 1, lambda x: x.normal_(), {"mean": 0.0, "std": 1.0},
    error="\"normal_kernel_cpu\" not implemented for 'Long'")
add("uniform__bad_range", "uniform_", [T((3,), requires_grad=False)], 1, lambda x: x.uniform_(2.0, 1.0), {"from": 2.0, "to": 1.0},
    error="uniform_ expects to return a [from, to) range, but found from=2 > to=1")
add("uniform__long", "uniform_", [T((3,), "int64")], 1, lambda x: x.uniform_(), {"from": 0.0, "to": 1.0},
    error="\"check_uniform_bounds\" not implemented for 'Long'")
add("exponential__bad", "exponential_", [T((3,), requires_grad=False)], 1, lambda x: x.exponential_(-1.0), {"lambd": -1.0},
    error="exponential_ expects lambda >= 0.0, but found lambda=-1")
add("normal__leaf", "normal_", [T((3,))], 1, lambda x: x.normal_(), {"mean": 0.0, "std": 1.0},
    error="a leaf Variable that requires grad is being used in an in-place operation.")
add("normal__0dim", "normal_", [T((), requires_grad=False)], 59, lambda x: x.normal_(), {"mean": 0.0, "std": 1.0})
add("uniform__empty", "uniform_", [T((0, 4), requires_grad=False)], 59, lambda x: x.uniform_(), {"from": 0.0, "to": 1.0})

# ---- bernoulli (out of place) ----
for dt in ("float32", "float64", "bfloat16"):
    add("bernoulli_%s" % dt, "bernoulli", [T((5, 8), dt, low=0.0, high=1.0)], 61, lambda p: torch.bernoulli(p))
add("bernoulli_nc", "bernoulli", [T((5, 8), low=0.0, high=1.0, layout="transposed")], 61, lambda p: torch.bernoulli(p))
add("bernoulli_long", "bernoulli", [T((3,), "int64", low=0, high=2)], 1, lambda p: torch.bernoulli(p),
    error="\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'")
add("bernoulli_p", "bernoulli_p", [T((4, 6))], 62, lambda t: torch.bernoulli(t, 0.25), {"p": 0.25})

# ---- multinomial ----
for dt in ("float32", "float64"):
    for repl in (False, True):
        for k in (1, 3):
            add("multinomial_%s_%s_%d" % (dt, "r" if repl else "nr", k), "multinomial",
                [T((4, 6), dt, low=0.0, high=1.0, requires_grad=False)], 71,
                lambda p, k=k, r=repl: torch.multinomial(p, k, r), {"num_samples": k, "replacement": repl})
    add("multinomial_%s_1d" % dt, "multinomial", [T((10,), dt, low=0.0, high=1.0, requires_grad=False)], 72,
        lambda p: torch.multinomial(p, 10), {"num_samples": 10, "replacement": False})
    add("multinomial_%s_1d_r" % dt, "multinomial", [T((10,), dt, low=0.0, high=1.0, requires_grad=False)], 72,
        lambda p: torch.multinomial(p, 25, True), {"num_samples": 25, "replacement": True})
add("multinomial_bf16_r", "multinomial", [T((3, 7), "bfloat16", low=0.0, high=1.0, requires_grad=False)], 73,
    lambda p: torch.multinomial(p, 9, True), {"num_samples": 9, "replacement": True})
add("multinomial_nc", "multinomial", [T((5, 6), low=0.0, high=1.0, layout="transposed", requires_grad=False)], 74,
    lambda p: torch.multinomial(p, 4, True), {"num_samples": 4, "replacement": True})
add("multinomial_zeros_in_row", "multinomial", [T((2, 4), values=[[0.0, 1.0, 0.0, 2.0], [3.0, 0.0, 0.0, 1.0]], requires_grad=False)],
    75, lambda p: torch.multinomial(p, 2), {"num_samples": 2, "replacement": False})
add("multinomial_empty_rows", "multinomial", [T((0, 3), requires_grad=False)], 1,
    lambda p: torch.multinomial(p, 2), {"num_samples": 2, "replacement": False})
add("multinomial_too_many", "multinomial", [T((3,), low=0.0, high=1.0, requires_grad=False)], 1,
    lambda p: torch.multinomial(p, 4), {"num_samples": 4, "replacement": False},
    error="cannot sample n_sample > prob_dist.size(-1) samples without replacement")
add("multinomial_neg", "multinomial", [T((3,), values=[1.0, -2.0, 1.0], requires_grad=False)], 1,
    lambda p: torch.multinomial(p, 1), {"num_samples": 1, "replacement": False},
    error="probability tensor contains either `inf`, `nan` or element < 0")
add("multinomial_neg_r", "multinomial", [T((3,), values=[1.0, -2.0, 1.0], requires_grad=False)], 1,
    lambda p: torch.multinomial(p, 2, True), {"num_samples": 2, "replacement": True},
    error="invalid multinomial distribution (encountering probability entry < 0)")
add("multinomial_zero_sum", "multinomial", [T((2, 2), values=[[1.0, 2.0], [0.0, 0.0]], requires_grad=False)], 1,
    lambda p: torch.multinomial(p, 1), {"num_samples": 1, "replacement": False},
    error="invalid multinomial distribution (sum of probabilities <= 0)")
add("multinomial_0", "multinomial", [T((3,), low=0.0, high=1.0, requires_grad=False)], 1,
    lambda p: torch.multinomial(p, 0), {"num_samples": 0, "replacement": False}, error="cannot sample n_sample <= 0 samples")
add("multinomial_3d", "multinomial", [T((2, 2, 2), low=0.0, high=1.0, requires_grad=False)], 1,
    lambda p: torch.multinomial(p, 1), {"num_samples": 1, "replacement": False}, error="prob_dist must be 1 or 2 dim")
add("multinomial_long", "multinomial", [T((3,), "int64", low=0, high=3)], 1,
    lambda p: torch.multinomial(p, 1), {"num_samples": 1, "replacement": False},
    error="multinomial only supports floating-point dtypes for input, got: Long")
add("multinomial_half", "multinomial", [T((3,), "float16", low=0.0, high=1.0, requires_grad=False)], 1,
    lambda p: torch.multinomial(p, 1), {"num_samples": 1, "replacement": False},
    error="multinomial is not implemented for half on CPU")
