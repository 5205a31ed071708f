"""Optimizer base: param_groups, per-parameter state, zero_grad, state_dict."""
from collections import defaultdict
import copy

from .. import _C


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    def __init__(self, params, defaults):
        self.defaults = defaults
        if isinstance(params, _C._TensorBase):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, but "
                            "got " + params.type())
        self.state = defaultdict(dict)
        self.param_groups = []
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def _cuda_graph_capture_health_check(self):
        """PyTorch's check: an optimizer whose update reads host-side numbers (capturable=False) must not be
        captured into a CUDA graph, whose replays would reuse the numbers of the capture."""
        from .. import cuda
        if not cuda.is_available():
            return
        capturing = cuda.is_current_stream_capturing()
        if capturing and not self.defaults.get("capturable", False):
            raise RuntimeError("Attempting CUDA graph capture of step() for an instance of " + type(self).__name__ +
                               " but this instance was constructed with capturable=False.")
        if not getattr(self, "_warned_capturable_if_run_uncaptured", False) and self.defaults.get("capturable") \
                and not capturing:
            print("Warning: This instance was constructed with capturable=True, but step() is running without CUDA "
                  "graph capture. If you never intend to graph-capture this instance, capturable=True can impair "
                  "performance, and you should set capturable=False.")
            self._warned_capturable_if_run_uncaptured = True

    def add_param_group(self, param_group):
        params = param_group["params"]
        if isinstance(params, _C._TensorBase):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        for p in param_group["params"]:
            if not isinstance(p, _C._TensorBase):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " +
                                type(p).__module__ + "." + type(p).__name__)
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required optimization parameter " + name)
            param_group.setdefault(name, default)
        seen = set()
        for g in self.param_groups:
            seen.update(id(p) for p in g["params"])
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=False):
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        gr = p.grad
                        if gr.grad_fn is not None:
                            gr.detach_()
                        else:
                            gr.requires_grad_(False)
                        gr.zero_()

    def state_dict(self):
        index = {}
        packed_groups = []
        start = 0
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            for i, p in enumerate(g["params"], start):
                index.setdefault(id(p), i)
            packed["params"] = [index[id(p)] for p in g["params"]]
            start += len(packed["params"])
            packed_groups.append(packed)
        state = {index[id(p)]: v for p, v in self.state.items()}
        return {"state": state, "param_groups": packed_groups}

    def load_state_dict(self, state_dict):
        state_dict = copy.deepcopy(state_dict)
        groups, saved = self.param_groups, state_dict["param_groups"]
        if len(groups) != len(saved):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = {}
        for g, s in zip(groups, saved):
            for old, p in zip(s["params"], g["params"]):
                id_map[old] = p
        self.state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                p = id_map[k]
                self.state[p] = {name: (val.to(p.dtype) if isinstance(val, _C._TensorBase) and
                                        val.is_floating_point() and name != "step" else val)
                                 for name, val in v.items()}
        for g, s in zip(groups, saved):
            s["params"] = g["params"]
        self.param_groups = saved

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, g in enumerate(self.param_groups):
            s += "\nParameter Group {0}".format(i)
            for key in sorted(g.keys()):
                if key != "params":
                    s += "\n    {0}: {1}".format(key, g[key])
        return s + "\n)"

    def step(self, closure=None):
        raise NotImplementedError
