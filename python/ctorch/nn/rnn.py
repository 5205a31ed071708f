"""nn.RNN, nn.LSTM, nn.GRU and their cells over the C ops (linear, sigmoid, tanh): PyTorch 1.13's
parameter names and order, initialisation, gate order and arithmetic, hidden-state layout,
batch_first, bidirectional, stacked layers with dropout between them, unbatched input."""
import math

from .. import _C
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _cell_step(mode, x_w, h, c, w_hh, b_hh):
    """One time step given the input projection x_w = x @ w_ih^T + b_ih; returns (h', c')."""
    h_w = F.linear(h, w_hh, b_hh)
    if mode == "LSTM":
        gates = h_w + x_w
        i, f, g, o = gates.chunk(4, 1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        c2 = f * c + i * g
        return o * c2.tanh(), c2
    if mode == "GRU":
        i_r, i_z, i_n = x_w.chunk(3, 1)
        h_r, h_z, h_n = h_w.chunk(3, 1)
        r = (i_r + h_r).sigmoid()
        z = (i_z + h_z).sigmoid()
        n = (i_n + r * h_n).tanh()
        return n + z * (h - n), None
    pre = h_w + x_w
    return (pre.tanh() if mode == "RNN_TANH" else pre.relu()), None


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        if not isinstance(dropout, (int, float)) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            import warnings
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          "expects num_layers greater than 1, but got dropout={} and num_layers={}".format(
                              dropout, num_layers))
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size:
            raise NotImplementedError("LSTM(proj_size=...) is not implemented in ctorch")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                in_size = input_size if layer == 0 else hidden_size * dirs
                sfx = "_l{}{}".format(layer, "_reverse" if d == 1 else "")
                names = ["weight_ih" + sfx, "weight_hh" + sfx]
                setattr(self, names[0], Parameter(_C.empty((gate_size, in_size), dtype=dtype)))
                setattr(self, names[1], Parameter(_C.empty((gate_size, hidden_size), dtype=dtype)))
                if bias:
                    names += ["bias_ih" + sfx, "bias_hh" + sfx]
                    setattr(self, names[2], Parameter(_C.empty(gate_size, dtype=dtype)))
                    setattr(self, names[3], Parameter(_C.empty(gate_size, dtype=dtype)))
                self._flat_weights_names.extend(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        per = 4 if self.bias else 2
        w = self._flat_weights
        return [w[i:i + per] for i in range(0, len(w), per)]

    def flatten_parameters(self):
        pass

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def _check_hidden(self, hx, expected, msg="Expected hidden size {}, got {}"):
        if tuple(hx.shape) != tuple(expected):
            raise RuntimeError(msg.format(tuple(expected), list(hx.shape)))

    def forward(self, input, hx=None):
        is_lstm = self.mode == "LSTM"
        batched = input.dim() == 3
        if input.dim() not in (2, 3):
            raise ValueError("{}: Expected input to be 2-D or 3-D but received {}-D tensor".format(
                type(self).__name__, input.dim()))
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        if x.size(-1) != self.input_size:
            raise RuntimeError("input.size(-1) must be equal to input_size. Expected {}, got {}".format(
                self.input_size, x.size(-1)))
        T, B = x.size(0), x.size(1)
        dirs = 2 if self.bidirectional else 1
        hshape = (self.num_layers * dirs, B, self.hidden_size)
        if hx is None:
            h0 = _C.zeros(hshape, dtype=x.dtype, device=x.device)
            c0 = h0 if is_lstm else None
        else:
            if is_lstm:
                h0, c0 = hx
            else:
                h0, c0 = hx, None
            if not batched:
                want = 2
                for t in ((h0, c0) if is_lstm else (h0,)):
                    if t.dim() != want:
                        raise RuntimeError("For unbatched 2-D input, hx {}should also be 2-D but got {}-D "
                                           "tensor".format("and cx " if is_lstm else "", t.dim()))
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if is_lstm else None
            elif h0.dim() != 3 or (is_lstm and c0.dim() != 3):
                raise RuntimeError("For batched 3-D input, hx {}should also be 3-D but got {}-D tensor".format(
                    "and cx " if is_lstm else "", h0.dim()))
            self._check_hidden(h0, hshape)
            if is_lstm:
                self._check_hidden(c0, hshape, "Expected hidden[1] size {}, got {}")
        weights = self._flat_weights
        per = 4 if self.bias else 2
        layer_in = x
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                w = weights[k * per:(k + 1) * per]
                w_ih, w_hh = w[0], w[1]
                b_ih, b_hh = (w[2], w[3]) if self.bias else (None, None)
                # the input projection of every step in one product, as PyTorch does
                xw = F.linear(layer_in, w_ih, b_ih)
                h, c = h0[k], (c0[k] if is_lstm else None)
                steps = [None] * T
                order = range(T - 1, -1, -1) if d == 1 else range(T)
                for t in order:
                    h, c = _cell_step(self.mode, xw[t], h, c, w_hh, b_hh)
                    steps[t] = h
                outs.append(_C.stack(steps, 0) if T else _C.zeros((0, B, self.hidden_size), dtype=x.dtype,
                                                                    device=x.device))
                h_n.append(h)
                if is_lstm:
                    c_n.append(c)
            layer_in = outs[0] if dirs == 1 else _C.cat(outs, 2)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_in = F.dropout(layer_in, self.dropout, True)
        out = layer_in
        hn = _C.stack(h_n, 0)
        cn = _C.stack(c_n, 0) if is_lstm else None
        if batched and self.batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1)
            hn = hn.squeeze(1)
            cn = cn.squeeze(1) if is_lstm else None
        return (out, (hn, cn)) if is_lstm else (out, hn)


class RNN(RNNBase):
    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError("Unknown nonlinearity '{}'".format(self.nonlinearity))
        super().__init__(mode, *args, **kwargs)


class LSTM(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(_C.empty((num_chunks * hidden_size, input_size), dtype=dtype))
        self.weight_hh = Parameter(_C.empty((num_chunks * hidden_size, hidden_size), dtype=dtype))
        if bias:
            self.bias_ih = Parameter(_C.empty(num_chunks * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(_C.empty(num_chunks * hidden_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _run(self, mode, input, hx, cx=None):
        if input.dim() not in (1, 2):
            raise ValueError("{}: Expected input to be 1-D or 2-D but received {}-D tensor".format(
                type(self).__name__, input.dim()))
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        if x.size(1) != self.input_size:
            raise RuntimeError("input has inconsistent input_size: got {} expected {}".format(x.size(1),
                                                                                           self.input_size))
        if hx is None:
            hx = _C.zeros((x.size(0), self.hidden_size), dtype=x.dtype, device=x.device)
            if mode == "LSTM":
                cx = hx
        elif not batched:
            hx = hx.unsqueeze(0)
            cx = cx.unsqueeze(0) if cx is not None else None
        h, c = _cell_step(mode, F.linear(x, self.weight_ih, self.bias_ih), hx, cx, self.weight_hh, self.bias_hh)
        if not batched:
            h = h.squeeze(0)
            c = c.squeeze(0) if c is not None else None
        return h, c


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError("Unknown nonlinearity: {}".format(self.nonlinearity))
        return self._run("RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU", input, hx)[0]


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, dtype=dtype)

    def forward(self, input, hx=None):
        if hx is None:
            return self._run("LSTM", input, None)
        return self._run("LSTM", input, hx[0], hx[1])


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, dtype=dtype)

    def forward(self, input, hx=None):
        return self._run("GRU", input, hx)[0]
