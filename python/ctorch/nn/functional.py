"""torch.nn.functional over the C ops (PyTorch's names and keyword arguments)."""
import math

from .. import _C
from .._composed import floating_only, not_implemented

relu = _C.nn_relu
relu6 = _C.nn_relu6
selu = _C.nn_selu
silu = _C.nn_silu
mish = _C.nn_mish
hardsigmoid = _C.nn_hardsigmoid
hardswish = _C.nn_hardswish
hardtanh = _C.nn_hardtanh
leaky_relu = _C.nn_leaky_relu
elu = _C.nn_elu
celu = _C.nn_celu
softplus = _C.nn_softplus
softsign = _C.nn_softsign
linear = _C.linear
conv1d = _C.conv1d
conv2d = _C.conv2d
conv_transpose2d = _C.conv_transpose2d
adaptive_avg_pool2d = _C.adaptive_avg_pool2d
layer_norm = _C.layer_norm
group_norm = _C.group_norm
rms_norm = _C.rms_norm
interpolate = _C.interpolate
pad = _C.pad
one_hot = _C.one_hot
cosine_similarity = _C.cosine_similarity
pairwise_distance = _C.pairwise_distance
scaled_dot_product_attention = _C.scaled_dot_product_attention
mse_loss = _C.nn_mse_loss
l1_loss = _C.nn_l1_loss
smooth_l1_loss = _C.nn_smooth_l1_loss
huber_loss = _C.nn_huber_loss
binary_cross_entropy = _C.nn_binary_cross_entropy
binary_cross_entropy_with_logits = _C.nn_binary_cross_entropy_with_logits
kl_div = _C.nn_kl_div
nll_loss = _C.nn_nll_loss
cross_entropy = _C.nn_cross_entropy


def gelu(input, approximate="none"):
    return _C.nn_gelu(input, approximate)


def relu_(input):
    return input.relu_()


def leaky_relu_(input, negative_slope=0.01):
    return _C.nn_leaky_relu(input, negative_slope, True)


def sigmoid(input):
    return _C.sigmoid(input)


def tanh(input):
    return _C.tanh(input)


def logsigmoid(input):
    return -_C.nn_softplus(-input)


def tanhshrink(input):
    return input - _C.tanh(input)


def glu(input, dim=-1):
    floating_only("glu_cpu", input)
    a, b = input.chunk(2, dim)
    return a * _C.sigmoid(b)


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return _C.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return _C.log_softmax(input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return softmax(-input, dim, dtype=dtype)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = _C._vector_norm(input, p, dim, True).clamp_min(eps).expand_as(input)
    return input / denom


def _dropout_fn(input, p=0.5, train=True):
    return _C.dropout(input, p, train)


def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError("dropout probability has to be between 0 and 1, but got {}".format(p))
    out = _C.dropout(input, p, training)
    if inplace:
        input.copy_(out)
        return input
    return out


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _C.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _C.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _C.adaptive_max_pool2d(input, output_size, return_indices)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    stride = kernel_size if stride is None else stride
    r = _C.max_pool2d(input.unsqueeze(-2), (1, kernel_size), (1, stride), (0, padding), (1, dilation), ceil_mode,
                      return_indices)
    if return_indices:
        return r[0].squeeze(-2), r[1].squeeze(-2)
    return r.squeeze(-2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    stride = kernel_size if stride is None else stride
    return _C.avg_pool2d(input.unsqueeze(-2), (1, kernel_size), (1, stride), (0, padding), ceil_mode,
                         count_include_pad).squeeze(-2)


def adaptive_avg_pool1d(input, output_size):
    return _C.adaptive_avg_pool2d(input.unsqueeze(-2), (1, output_size)).squeeze(-2)


def _batch_norm_fn(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled=True):
    return _C.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    return _C.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return _C.embedding(input, weight, padding_idx)


def _embedding_renorm_(weight, input, max_norm, norm_type):
    """embedding(max_norm=): the rows looked up whose norm exceeds max_norm are scaled in place to
    max_norm (PyTorch's embedding_renorm_, with its 1e-7 guard), outside autograd."""
    from ..autograd.grad_mode import no_grad
    with no_grad():
        rows = input.reshape(-1).unique()
        if rows.numel() == 0:
            return
        sel = weight.index_select(0, rows)
        norms = _C._vector_norm(sel, norm_type, 1, True)
        scale = (max_norm / (norms + 1e-7)).where(norms > max_norm, _C.ones_like(norms))
        weight.index_copy_(0, rows, sel * scale)


def _pair2(x, what):
    t = tuple(x) if isinstance(x, (tuple, list)) else (x, x)
    if len(t) != 2:
        raise RuntimeError("It is expected {} equals to 2, but got size {}".format(what, len(t)))
    return t


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """F.unfold (im2col): [N, C, H, W] -> [N, C*kh*kw, L] as one gather over the padded plane."""
    floating_only("im2col_out_cpu", input)
    kh, kw = _pair2(kernel_size, "kernel_size")
    dh, dw = _pair2(dilation, "dilation")
    ph, pw = _pair2(padding, "padding")
    sh, sw = _pair2(stride, "stride")
    if kh <= 0 or kw <= 0:
        raise RuntimeError("kernel size should be greater than zero, but got kernel_height: {} kernel_width: "
                           "{}".format(kh, kw))
    if dh <= 0 or dw <= 0:
        raise RuntimeError("dilation should be greater than zero, but got dilation_height: {} dilation_width: "
                           "{}".format(dh, dw))
    if sh <= 0 or sw <= 0:
        raise RuntimeError("stride should be greater than zero, but got stride_height: {} stride_width: "
                           "{}".format(sh, sw))
    if ph < 0 or pw < 0:
        raise RuntimeError("padding should be non-negative, but got pad_height: {} pad_width: {}".format(ph, pw))
    if input.dim() not in (3, 4) or (input.dim() == 4 and (input.size(1) == 0 or input.size(2) == 0 or
                                                            input.size(3) == 0)):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
                           "but got: {}".format(tuple(input.shape)))
    batched = input.dim() == 4
    x = input if batched else input.unsqueeze(0)
    if ph or pw:
        x = pad(x, (pw, pw, ph, ph))
    n, c, h, w = x.shape
    eh, ew = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    oh, ow = (h - eh) // sh + 1 if h >= eh else 0, (w - ew) // sw + 1 if w >= ew else 0
    if oh < 1 or ow < 1:
        raise RuntimeError("Given input with spatial size ({}, {}), kernel_size=({}, {}), dilation=({}, {}), "
                           "padding=({}, {}), calculated shape of the array of sliding blocks as ({}, {}), but "
                           "its components must be at least one.".format(h - 2 * ph, w - 2 * pw, kh, kw, dh, dw,
                                                                         ph, pw, (h - eh) // sh + 1,
                                                                         (w - ew) // sw + 1))
    # flat positions in the padded plane: tap (i, j) of block (oy, ox) reads (oy*sh + i*dh, ox*sw + j*dw);
    # one index_select gathers them (its backward, index_add, sums overlapping blocks)
    rows = (_C.arange(kh).reshape(kh, 1, 1, 1) * dh + _C.arange(oh).reshape(1, 1, oh, 1) * sh) * w
    cols = _C.arange(kw).reshape(1, kw, 1, 1) * dw + _C.arange(ow).reshape(1, 1, 1, ow) * sw
    idx = (rows + cols).reshape(-1)
    if x.device.type != "cpu":
        idx = idx.to(x.device)
    out = x.reshape(n, c, h * w).index_select(2, idx).reshape(n, c * kh * kw, oh * ow)
    return out if batched else out.squeeze(0)


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """PyTorch's input checks (AssertionError with its wording); True when the input is batched."""
    if query.dim() == 3:
        if not (key.dim() == 3 and value.dim() == 3):
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 "{}-D and {}-D tensors respectively".format(key.dim(), value.dim()))
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 "found {}-D tensor instead".format(key_padding_mask.dim()))
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 "found {}-D tensor instead".format(attn_mask.dim()))
        return True
    if query.dim() == 2:
        if not (key.dim() == 2 and value.dim() == 2):
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 "{}-D and {}-D tensors respectively".format(key.dim(), value.dim()))
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                                 "but found {}-D tensor instead".format(key_padding_mask.dim()))
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     "but found {}-D tensor instead".format(attn_mask.dim()))
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError("Expected `attn_mask` shape to be {} but got {}".format(
                        expected, attn_mask.shape))
        return False
    raise AssertionError("query should be unbatched 2D or batched 3D tensor but received {}-D query "
                         "tensor".format(query.dim()))


def _check_kpm_dtype(key_padding_mask):
    if key_padding_mask is not None and key_padding_mask.dtype != _C.bool \
            and not key_padding_mask.is_floating_point():
        raise AssertionError("only bool and floating types of key_padding_mask are supported")


def _in_projection_packed(q, k, v, w, b=None):
    # the same split of the packed weight as PyTorch, so the same products (and rounding) are formed
    E = q.size(-1)
    if k is v:
        if q is k:
            return linear(q, w, b).chunk(3, dim=-1)
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        return (linear(q, w_q, b_q),) + tuple(linear(k, w_kv, b_kv).chunk(2, dim=-1))
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    Eq, Ek, Ev = q.size(-1), k.size(-1), v.size(-1)
    for name, w, want in (("query", w_q, (Eq, Eq)), ("key", w_k, (Eq, Ek)), ("value", w_v, (Eq, Ev))):
        if tuple(w.shape) != want:
            raise AssertionError("expecting {} weights shape of {}, but got {}".format(name, want, w.shape))
    for name, b in (("query", b_q), ("key", b_k), ("value", b_v)):
        if b is not None and tuple(b.shape) != (Eq,):
            raise AssertionError("expecting {} bias shape of {}, but got {}".format(name, (Eq,), b.shape))
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True):
    """F.multi_head_attention_forward of PyTorch 1.13: the same sequence of C ops (in-projection, masks
    merged to an additive float mask, baddbmm, softmax, dropout, bmm, out-projection), so values,
    gradients and dropout's random draws agree with it. Sequence-first layout [L, N, E]."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    _check_kpm_dtype(key_padding_mask)
    if embed_dim != embed_dim_to_check:
        raise AssertionError("was expecting embedding dimension of {}, but got {}".format(embed_dim_to_check,
                                                                                         embed_dim))
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError("embed_dim {} not divisible by num_heads {}".format(embed_dim, num_heads))
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError("key's sequence and batch dims {} do not match value's {}".format(
                key.shape[:2], value.shape[:2]))
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError("key shape {} does not match value shape {}".format(key.shape, value.shape))

    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        for nm, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError("use_separate_proj_weight is True but {}_proj_weight is None".format(nm))
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, b_q, b_k, b_v)

    if attn_mask is not None:
        if attn_mask.dtype == _C.uint8:
            import warnings
            warnings.warn("Byte tensor for attn_mask in nn.MultiheadAttention is deprecated. Use bool tensor "
                          "instead.")
            attn_mask = attn_mask.to(_C.bool)
        elif not (attn_mask.is_floating_point() or attn_mask.dtype == _C.bool):
            raise AssertionError("Only float, byte, and bool types are supported for attn_mask, not {}".format(
                attn_mask.dtype))
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError("The shape of the 2D attn_mask is {}, but should be {}.".format(
                    attn_mask.shape, (tgt_len, src_len)))
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            want = (bsz * num_heads, tgt_len, src_len)
            if tuple(attn_mask.shape) != want:
                raise RuntimeError("The shape of the 3D attn_mask is {}, but should be {}.".format(
                    attn_mask.shape, want))
        else:
            raise RuntimeError("attn_mask's dimension {} is not supported".format(attn_mask.dim()))

    if key_padding_mask is not None and key_padding_mask.dtype == _C.uint8:
        import warnings
        warnings.warn("Byte tensor for key_padding_mask in nn.MultiheadAttention is deprecated. Use bool tensor "
                      "instead.")
        key_padding_mask = key_padding_mask.to(_C.bool)

    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = _C.cat([k, bias_k.repeat(1, bsz, 1)])
        v = _C.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    elif bias_k is not None or bias_v is not None:
        raise AssertionError()

    q = q.contiguous().view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.contiguous().view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_k.size(0) != bsz * num_heads:
            raise AssertionError("expecting static_k.size(0) of {}, but got {}".format(bsz * num_heads,
                                                                                    static_k.size(0)))
        if static_k.size(2) != head_dim:
            raise AssertionError("expecting static_k.size(2) of {}, but got {}".format(head_dim, static_k.size(2)))
        k = static_k
    if static_v is None:
        v = v.contiguous().view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_v.size(0) != bsz * num_heads:
            raise AssertionError("expecting static_v.size(0) of {}, but got {}".format(bsz * num_heads,
                                                                                    static_v.size(0)))
        if static_v.size(2) != head_dim:
            raise AssertionError("expecting static_v.size(2) of {}, but got {}".format(head_dim, static_v.size(2)))
        v = static_v

    if add_zero_attn:
        zshape = (bsz * num_heads, 1, head_dim)
        k = _C.cat([k, _C.zeros(zshape, dtype=k.dtype, device=k.device)], dim=1)
        v = _C.cat([v, _C.zeros(zshape, dtype=v.dtype, device=v.device)], dim=1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))

    src_len = k.size(1)
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError("expecting key_padding_mask shape of {}, but got {}".format(
                (bsz, src_len), key_padding_mask.shape))
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1) \
            .reshape(bsz * num_heads, 1, src_len)
        if attn_mask is None:
            attn_mask = key_padding_mask
        elif attn_mask.dtype == _C.bool:
            attn_mask = attn_mask.logical_or(key_padding_mask)
        else:
            attn_mask = attn_mask.masked_fill(key_padding_mask, float("-inf"))

    if attn_mask is not None and attn_mask.dtype == _C.bool:
        new_mask = _C.zeros_like(attn_mask, dtype=q.dtype)
        new_mask.masked_fill_(attn_mask, float("-inf"))
        attn_mask = new_mask

    if not training:
        dropout_p = 0.0
    q_scaled = q / math.sqrt(q.shape[2])
    if attn_mask is not None:
        w = _C.baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
    else:
        w = _C.bmm(q_scaled, k.transpose(-2, -1))
    w = _C.softmax(w, -1)
    if dropout_p > 0.0:
        w = dropout(w, p=dropout_p)
    out = _C.bmm(w, v)
    out = out.transpose(0, 1).contiguous().view(tgt_len * bsz, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias)
    out = out.view(tgt_len, bsz, out.size(1))
    if need_weights:
        w = w.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            w = w.sum(dim=1) / num_heads
        if not is_batched:
            out = out.squeeze(1)
            w = w.squeeze(0)
        return out, w
    if not is_batched:
        out = out.squeeze(1)
    return out, None


def prelu(input, weight):
    """max(0, x) + weight * min(0, x), weight per channel (dim 1)."""
    floating_only("prelu_cpu", input)
    w = weight
    if weight.numel() != 1:
        if input.dim() < 2 and weight.numel() != input.numel():
            raise RuntimeError("Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               "{} and channel size = {}.".format(weight.numel(), input.size(0) if input.dim()
                                                                  else 1))
        if input.dim() >= 2:
            if weight.numel() != input.size(1):
                raise RuntimeError("Mismatch of parameter numbers and input channel size. Found parameter numbers "
                                   "= {} and channel size = {}.".format(weight.numel(), input.size(1)))
            w = weight.reshape((1, -1) + (1,) * (input.dim() - 2))
    else:
        w = weight.reshape(())  # one slope: the result keeps the input's shape (a 0-dim input included)
    return _C.where(input > 0, input, w * input)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Per (sample, channel) statistics: batch norm over the [1, N*C, ...] reshape with the channel
    parameters and running statistics repeated N times (PyTorch's own route), then the running
    statistics averaged back over the samples."""
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    n, c = input.size(0), input.size(1)
    x = input.reshape((1, n * c) + tuple(input.shape[2:]))
    rm = running_mean.repeat(n) if running_mean is not None else None
    rv = running_var.repeat(n) if running_var is not None else None
    w = weight.repeat(n) if weight is not None else None
    b = bias.repeat(n) if bias is not None else None
    y = _C.batch_norm(x, rm, rv, w, b, True, momentum, eps).reshape(input.shape)
    if rm is not None or rv is not None:
        from ..autograd.grad_mode import no_grad
        with no_grad():
            if rm is not None:
                running_mean.copy_(rm.view(n, c).mean(0))
            if rv is not None:
                running_var.copy_(rv.view(n, c).mean(0))
    return y


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """F.fold (col2im): sums the [N, C*kh*kw, L] blocks back into [N, C, H, W] with one index_add
    (the adjoint of F.unfold's gather)."""
    oh_, ow_ = _pair2(output_size, "output_size")
    kh, kw = _pair2(kernel_size, "kernel_size")
    dh, dw = _pair2(dilation, "dilation")
    ph, pw = _pair2(padding, "padding")
    sh, sw = _pair2(stride, "stride")
    if kh <= 0 or kw <= 0 or dh <= 0 or dw <= 0 or sh <= 0 or sw <= 0 or ph < 0 or pw < 0:
        raise RuntimeError("fold: kernel size, dilation and stride must be > 0 and padding >= 0")
    batched = input.dim() == 3
    if input.dim() not in (2, 3):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
                           "non-zero dimensions for input, but got: {}".format(tuple(input.shape)))
    x = input if batched else input.unsqueeze(0)
    n, ckk, L = x.shape
    if ckk % (kh * kw) != 0:
        raise RuntimeError("Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
                           "but got input.size(1)={} and kernel_size=({}, {}).".format(ckk, kh, kw))
    c = ckk // (kh * kw)
    h, w = oh_ + 2 * ph, ow_ + 2 * pw
    bh, bw = (h - (dh * (kh - 1) + 1)) // sh + 1, (w - (dw * (kw - 1) + 1)) // sw + 1
    if bh * bw != L:
        raise RuntimeError("Given output_size=({}, {}), kernel_size=({}, {}), dilation=({}, {}), padding=({}, {}), "
                           "stride=({}, {}), expected size of input's dimension 2 to match the calculated number of "
                           "sliding blocks {} * {} = {}, but got input.size(2)={}.".format(
                               oh_, ow_, kh, kw, dh, dw, ph, pw, sh, sw, bh, bw, bh * bw, L))
    rows = (_C.arange(kh).reshape(kh, 1, 1, 1) * dh + _C.arange(bh).reshape(1, 1, bh, 1) * sh) * w
    cols = _C.arange(kw).reshape(1, kw, 1, 1) * dw + _C.arange(bw).reshape(1, 1, 1, bw) * sw
    idx = (rows + cols).reshape(-1)
    if x.device.type != "cpu":
        idx = idx.to(x.device)
    plane = _C.zeros((n, c, h * w), dtype=x.dtype, device=x.device)
    out = plane.index_add(2, idx, x.reshape(n, c, kh * kw * L)).reshape(n, c, h, w)
    if ph or pw:
        out = out[:, :, ph:ph + oh_, pw:pw + ow_]
    return out if batched else out.squeeze(0)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.size(-1) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var.clone()
    from ..autograd.grad_mode import no_grad
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (_C.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """Gumbel(0, 1) noise from exponential_ (the same random draws as PyTorch), then a softmax; hard=True
    returns the one-hot of the argmax with the soft sample's gradient (straight-through)."""
    if eps != 1e-10:
        import warnings
        warnings.warn("`eps` parameter is deprecated and has no effect.")
    gumbels = -_C.empty_like(logits).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = _C.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of embeddings: a gather (index_select) and, per bag, an index_add
    (sum, mean) or an amax; bags are given by offsets into the 1-D input or are the rows of a 2-D input."""
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError("embedding_bag: If per_sample_weights ({}) is not None, then it must have the same shape "
                         "as the input ({})".format(per_sample_weights.shape, input.shape))
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             "fixed length sequences. However, found offsets of type {}".format(
                                 str(type(offsets)).replace("ctorch", "torch")))
        bounds = list(range(0, input.numel() + 1, input.size(1))) if input.size(1) else [0] * (input.size(0) + 1)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        bounds = [int(v) for v in offsets.tolist()]
        if not include_last_offset:
            bounds.append(input.numel())
    else:
        raise ValueError("input has to be 1D or 2D Tensor, but got Tensor of dimension {}".format(input.dim()))
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  "supported for mode='sum' (got mode='{}'). Please open a feature request on "
                                  "GitHub.".format(mode))
    n, d = input.numel(), weight.size(1)
    nbags = max(len(bounds) - 1, 0)
    for i in range(nbags):
        if not 0 <= bounds[i] <= bounds[i + 1] <= n:
            raise RuntimeError("embedding_bag: offsets must be non-decreasing and within the input, got {}".format(
                bounds))
    idx = [int(v) for v in input.tolist()]
    keep = [j for j in range(n) if padding_idx is None or idx[j] != padding_idx]
    bag_of = {}
    for b in range(nbags):
        for j in range(bounds[b], bounds[b + 1]):
            bag_of[j] = b
    keep = [j for j in keep if j in bag_of]
    sel = _C.tensor(keep, dtype=_C.int64)
    emb = weight.index_select(0, input.index_select(0, sel) if keep else input[:0])
    if mode == "max":
        rows = []
        for b in range(nbags):
            js = [k for k, j in enumerate(keep) if bag_of[j] == b]
            rows.append(emb.index_select(0, _C.tensor(js, dtype=_C.int64)).amax(0) if js else
                        _C.zeros(d, dtype=weight.dtype))
        return _C.stack(rows, 0) if rows else _C.zeros((0, d), dtype=weight.dtype)
    if per_sample_weights is not None:
        emb = emb * per_sample_weights.index_select(0, sel).unsqueeze(1)
    bags = _C.tensor([bag_of[j] for j in keep], dtype=_C.int64)
    out = _C.zeros((nbags, d), dtype=weight.dtype).index_add(0, bags, emb)
    if mode == "mean":
        counts = [0] * nbags
        for j in keep:
            counts[bag_of[j]] += 1
        out = out / _C.tensor([max(c, 1) for c in counts], dtype=weight.dtype).unsqueeze(1)
    return out


def _reduce(output, reduction):
    if reduction == "mean":
        return output.mean()
    if reduction == "sum":
        return output.sum()
    if reduction == "none":
        return output
    raise ValueError("{} is not a valid value for reduction".format(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = ("mean" if size_average else "sum") if reduce else "none"
    a, pd, n = anchor.dim(), positive.dim(), negative.dim()
    if not (a == pd and pd == n):
        raise RuntimeError("All inputs should have same dimension but got {}D, {}D and {}D inputs.".format(a, pd, n))
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = _C.minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + dist_pos - dist_neg).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    dist = distance_function if distance_function is not None else pairwise_distance
    dist_pos = dist(anchor, positive)
    dist_neg = dist(anchor, negative)
    if swap:
        dist_neg = _C.minimum(dist_neg, dist(positive, negative))
    return _reduce(_C.clamp(dist_pos - dist_neg + margin, min=0.0), reduction)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kw, kh = (tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) else (kernel_size, kernel_size))
    out = avg_pool2d(input.pow(norm_type), kernel_size, stride if stride is not None else None, 0, ceil_mode)
    return (_C.sign(out) * relu(_C.abs(out))).mul(kw * kh).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (_C.sign(out) * relu(_C.abs(out))).mul(kernel_size).pow(1.0 / norm_type)


# ---- found missing by the op sweep (tests/python/test_op_sweep.py) ----
def hardshrink(input, lambd=0.5):
    floating_only("hardshrink_cpu", input)
    return _C.where((input > lambd) | (input < -lambd), input, _C.zeros((), dtype=input.dtype))


def softshrink(input, lambd=0.5):
    floating_only("softshrink_cpu", input)
    zero = _C.zeros((), dtype=input.dtype)
    return _C.where(input > lambd, input - lambd, _C.where(input < -lambd, input + lambd, zero))


def threshold(input, threshold, value, inplace=False):
    if input.dtype == _C.bool:
        raise not_implemented("threshold_cpu", input.dtype)
    out = _C.where(input > threshold, input, _C.tensor(value, dtype=input.dtype))
    return input.copy_(out) if inplace else out


def threshold_(input, threshold_, value):
    return threshold(input, threshold_, value, inplace=True)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    floating_only("leaky_relu_cpu", input)
    if training:
        # a slope per element drawn from U(lower, upper) for negative inputs
        slope = _C.empty_like(input).uniform_(lower, upper)
        out = _C.where(input >= 0, input, input * slope)
    else:
        out = leaky_relu(input, (lower + upper) / 2)
    return input.copy_(out) if inplace else out


def bilinear(input1, input2, weight, bias=None):
    y = _C.einsum("...i,oij,...j->...o", input1, weight, input2)
    return y + bias if bias is not None else y


def pixel_shuffle(input, upscale_factor):
    r = upscale_factor
    if input.dim() < 3:
        raise RuntimeError("pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           "{} dimension(s)".format(input.dim()))
    *b, c, h, w = input.shape
    if c % (r * r) != 0:
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           "upscale_factor, but input.size(-3)={} is not divisible by {}".format(c, r * r))
    n = len(b)
    x = input.reshape(*b, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*b, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    r = downscale_factor
    if input.dim() < 3:
        raise RuntimeError("pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           "{} dimension(s)".format(input.dim()))
    *b, c, h, w = input.shape
    if h % r != 0 or w % r != 0:
        raise RuntimeError("pixel_unshuffle expects height and width to be divisible by downscale_factor")
    n = len(b)
    x = input.reshape(*b, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*b, c * r * r, h // r, w // r)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError("margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           "input1: {}, input2: {}, target: {} ".format(input1.size(), input2.size(), target.size()))
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), _legacy_reduction(size_average, reduce,
                                                                                            reduction))


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    floating_only("soft_margin_loss", input)
    if target.requires_grad and _C.is_grad_enabled():
        raise RuntimeError("The function 'soft_margin_loss' is not differentiable with respect to argument 'target'. "
                           "This input cannot have requires_grad True.")
    return _reduce(_C.log1p(_C.exp(-target * input)), _legacy_reduction(size_average, reduce, reduction))


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    d = input1.dim() - 1
    eps = 1e-12  # keeps the magnitudes of zero vectors away from 0, as PyTorch does
    dot = (input1 * input2).sum(d)
    cos = dot / _C.sqrt(((input1 * input1).sum(d) + eps) * ((input2 * input2).sum(d) + eps))
    zero = _C.zeros((), dtype=cos.dtype)
    out = _C.where(target == 1, 1 - cos, zero) + _C.where(target == -1, (cos - margin).clamp_min(0), zero)
    return _reduce(out, _legacy_reduction(size_average, reduce, reduction))


def _legacy_reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"
