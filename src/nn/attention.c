/* nn.MultiheadAttention (PyTorch 1.13's F.multi_head_attention_forward with packed
 * in-projection): the same sequence of ops, so values and gradients agree with it. */
#include "module_internal.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  int64_t E, H;
  double dropout;
  bool bias, batch_first;
} mha_cfg;

#define REL(...) ct_mod_release_n(__VA_ARGS__)

static const ct_module_vtable mha_vt;

static ct_tensor *mha_fail(const char *fmt, const char *a) {
  ct_set_error(CT_ERR_RUNTIME, fmt, a);
  return NULL;
}

/* [T, B, E] -> [B*H, T, hd] (q.contiguous().view(T, B*H, hd).transpose(0, 1)) */
static ct_tensor *heads(const ct_tensor *x, int64_t B, int64_t H, int64_t hd) {
  ct_tensor *c = ct_contiguous(x);
  if (!c) return NULL;
  int64_t shp[3] = {ct_size(c, 0), B * H, hd};
  ct_tensor *v = ct_view(c, 3, shp);
  ct_release(c);
  if (!v) return NULL;
  ct_tensor *t = ct_transpose(v, 0, 1);
  ct_release(v);
  return t;
}

ct_tensor *ct_multihead_attention_forward(ct_module *m, const ct_tensor *query, const ct_tensor *key,
                                          const ct_tensor *value, const ct_tensor *key_padding_mask,
                                          bool need_weights, const ct_tensor *attn_mask, bool average_attn_weights,
                                          ct_tensor **attn_weights) {
  if (attn_weights) *attn_weights = NULL;
  if (!m || m->vt != &mha_vt) {
    ct_set_error(CT_ERR_VALUE, "multihead_attention_forward: expected a MultiheadAttention module");
    return NULL;
  }
  if (ct_check_tensor(query, "MultiheadAttention") || ct_check_tensor(key, "MultiheadAttention") ||
      ct_check_tensor(value, "MultiheadAttention"))
    return NULL;
  const mha_cfg *c = m->user;
  int64_t E = c->E, H = c->H, hd = E / H;
  ct_tensor *W = ct_mod_p(m, 0), *Bi = c->bias ? ct_mod_p(m, 1) : NULL;
  ct_module *op = ct_module_child(m, "out_proj");
  ct_tensor *Wo = ct_module_param(op, "weight"), *bo = ct_module_param(op, "bias");
  bool self_attn = query == key && key == value, kv_same = key == value;
  char msg[256];
  int qd = ct_ndim(query);
  /* _mha_shape_check */
  if (qd == 3) {
    if (ct_ndim(key) != 3 || ct_ndim(value) != 3) {
      snprintf(msg, sizeof msg, "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found %d-D and %d-D tensors respectively",
               ct_ndim(key), ct_ndim(value));
      return mha_fail("%s", msg);
    }
    if (key_padding_mask && ct_ndim(key_padding_mask) != 2) {
      snprintf(msg, sizeof msg, "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but found %d-D tensor instead",
               ct_ndim(key_padding_mask));
      return mha_fail("%s", msg);
    }
    if (attn_mask && ct_ndim(attn_mask) != 2 && ct_ndim(attn_mask) != 3) {
      snprintf(msg, sizeof msg, "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found %d-D tensor instead",
               ct_ndim(attn_mask));
      return mha_fail("%s", msg);
    }
  } else if (qd == 2) {
    if (ct_ndim(key) != 2 || ct_ndim(value) != 2) {
      snprintf(msg, sizeof msg, "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found %d-D and %d-D tensors respectively",
               ct_ndim(key), ct_ndim(value));
      return mha_fail("%s", msg);
    }
    if (key_padding_mask && ct_ndim(key_padding_mask) != 1) {
      snprintf(msg, sizeof msg, "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but found %d-D tensor instead",
               ct_ndim(key_padding_mask));
      return mha_fail("%s", msg);
    }
    if (attn_mask && ct_ndim(attn_mask) != 2 && ct_ndim(attn_mask) != 3) {
      snprintf(msg, sizeof msg, "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found %d-D tensor instead",
               ct_ndim(attn_mask));
      return mha_fail("%s", msg);
    }
  } else {
    snprintf(msg, sizeof msg, "query should be unbatched 2D or batched 3D tensor but received %d-D query tensor", qd);
    return mha_fail("%s", msg);
  }
  bool batched = qd == 3;
  ct_tensor *q0 = NULL, *k0 = NULL, *v0 = NULL, *kpm = NULL;
  /* to [T, B, E] */
  if (!batched) {
    q0 = ct_unsqueeze(query, 1);
    k0 = self_attn ? ct_retain(q0) : ct_unsqueeze(key, 1);
    v0 = kv_same ? ct_retain(k0) : ct_unsqueeze(value, 1);
    if (key_padding_mask) kpm = ct_unsqueeze(key_padding_mask, 0);
  } else if (c->batch_first) {
    q0 = ct_transpose(query, 1, 0);
    k0 = self_attn ? ct_retain(q0) : ct_transpose(key, 1, 0);
    v0 = kv_same ? ct_retain(k0) : ct_transpose(value, 1, 0);
    if (key_padding_mask) kpm = ct_retain((ct_tensor *)key_padding_mask);
  } else {
    q0 = ct_retain((ct_tensor *)query);
    k0 = ct_retain((ct_tensor *)key);
    v0 = ct_retain((ct_tensor *)value);
    if (key_padding_mask) kpm = ct_retain((ct_tensor *)key_padding_mask);
  }
  ct_tensor *q = NULL, *k = NULL, *v = NULL, *mask = NULL, *qh = NULL, *kh = NULL, *vh = NULL, *qs = NULL, *kt = NULL,
            *att = NULL, *att2 = NULL, *sm = NULL, *dr = NULL, *o = NULL, *ot = NULL, *oc = NULL, *o2 = NULL, *y = NULL,
            *y3 = NULL, *out = NULL, *wts = NULL;
  if (!q0 || !k0 || !v0 || (key_padding_mask && !kpm)) goto done;
  int64_t T = ct_size(q0, 0), B = ct_size(q0, 1), Eq = ct_size(q0, 2), S = ct_size(k0, 0);
  if (Eq != E) {
    snprintf(msg, sizeof msg, "was expecting embedding dimension of %lld, but got %lld", (long long)E, (long long)Eq);
    mha_fail("%s", msg);
    goto done;
  }
  {
    bool same = ct_ndim(k0) == ct_ndim(v0);
    for (int d = 0; same && d < ct_ndim(k0); d++) same = ct_size(k0, d) == ct_size(v0, d);
    if (!same) {
      char a[100], b[100];
      snprintf(msg, sizeof msg, "key shape torch.Size(%s) does not match value shape torch.Size(%s)",
               ct_shape_str(ct_ndim(key), ct_shape(key), a, sizeof a),
               ct_shape_str(ct_ndim(value), ct_shape(value), b, sizeof b));
      mha_fail("%s", msg);
      goto done;
    }
  }
  /* in-projection (_in_projection_packed) */
  if (self_attn) {
    ct_tensor *p = ct_linear(q0, W, Bi);
    if (!p) goto done;
    ct_tensor *parts[3];
    int n = 0;
    ct_status st = ct_chunk(p, 3, -1, &n, parts, 3);
    ct_release(p);
    if (st || n != 3) goto done;
    q = parts[0], k = parts[1], v = parts[2];
  } else {
    ct_tensor *wq = ct_narrow(W, 0, 0, E), *wk = ct_narrow(W, 0, E, E), *wv = ct_narrow(W, 0, 2 * E, E);
    ct_tensor *bq = Bi ? ct_narrow(Bi, 0, 0, E) : NULL, *bk = Bi ? ct_narrow(Bi, 0, E, E) : NULL,
              *bv = Bi ? ct_narrow(Bi, 0, 2 * E, E) : NULL;
    if (wq && wk && wv && (!Bi || (bq && bk && bv))) {
      q = ct_linear(q0, wq, bq);
      k = ct_linear(k0, wk, bk);
      v = ct_linear(v0, wv, bv);
    }
    REL(6, wq, wk, wv, bq, bk, bv);
    if (!q || !k || !v) goto done;
  }
  /* attention mask: 2-D [T, S] -> [1, T, S]; 3-D [B*H, T, S]; bool (True = masked) -> -inf */
  if (attn_mask) {
    ct_dtype md = ct_tensor_dtype(attn_mask);
    if (md != CT_BOOL && md != CT_UINT8 && !ct_dtype_is_floating(md)) {
      snprintf(msg, sizeof msg, "Only float, byte, and bool types are supported for attn_mask, not %s", ct_dtype_name(md));
      mha_fail("%s", msg);
      goto done;
    }
    mask = md == CT_UINT8 ? ct_to_dtype(attn_mask, CT_BOOL) : ct_retain((ct_tensor *)attn_mask);
    if (!mask) goto done;
    int64_t want3[3] = {B * H, T, S};
    if (ct_ndim(mask) == 2) {
      if (ct_size(mask, 0) != T || ct_size(mask, 1) != S) {
        char a[100];
        snprintf(msg, sizeof msg, "The shape of the 2D attn_mask is torch.Size(%s), but should be (%lld, %lld).",
                 ct_shape_str(2, ct_shape(mask), a, sizeof a), (long long)T, (long long)S);
        mha_fail("%s", msg);
        goto done;
      }
      ct_tensor *u = ct_unsqueeze(mask, 0);
      ct_release(mask);
      if (!(mask = u)) goto done;
    } else {
      bool ok = true;
      for (int d = 0; d < 3; d++) ok = ok && ct_size(mask, d) == want3[d];
      if (!ok) {
        char a[100];
        if (!batched)
          snprintf(msg, sizeof msg, "Expected `attn_mask` shape to be (%lld, %lld, %lld) but got torch.Size(%s)",
                   (long long)H, (long long)T, (long long)S, ct_shape_str(3, ct_shape(mask), a, sizeof a));
        else
          snprintf(msg, sizeof msg, "The shape of the 3D attn_mask is torch.Size(%s), but should be (%lld, %lld, %lld).",
                   ct_shape_str(3, ct_shape(mask), a, sizeof a), (long long)want3[0], (long long)T, (long long)S);
        mha_fail("%s", msg);
        goto done;
      }
    }
  }
  if (kpm) {
    if (ct_tensor_dtype(kpm) == CT_UINT8) {
      ct_tensor *b = ct_to_dtype(kpm, CT_BOOL);
      ct_release(kpm);
      if (!(kpm = b)) goto done;
    }
    if (ct_ndim(kpm) != 2 || ct_size(kpm, 0) != B || ct_size(kpm, 1) != S) {
      char a[100];
      snprintf(msg, sizeof msg, "expecting key_padding_mask shape of (%lld, %lld), but got torch.Size(%s)", (long long)B,
               (long long)S, ct_shape_str(ct_ndim(kpm), ct_shape(kpm), a, sizeof a));
      mha_fail("%s", msg);
      goto done;
    }
    int64_t s4[4] = {B, 1, 1, S}, e4[4] = {-1, H, -1, -1}, s3[3] = {B * H, 1, S};
    ct_tensor *a1 = ct_view(kpm, 4, s4);
    ct_tensor *a2 = a1 ? ct_expand(a1, 4, e4) : NULL;
    ct_tensor *a3 = a2 ? ct_reshape(a2, 3, s3) : NULL;
    REL(2, a1, a2);
    if (!a3) goto done;
    ct_tensor *merged;
    if (!mask) merged = ct_retain(a3);
    else if (ct_tensor_dtype(mask) == CT_BOOL) merged = ct_logical_or(mask, a3);
    else if (ct_tensor_dtype(a3) == CT_BOOL) merged = ct_masked_fill(mask, a3, ct_sf(-INFINITY));
    else {
      ct_set_error(CT_ERR_RUNTIME, "masked_fill_ only supports boolean masks, but got mask with dtype %s",
                   ct_dtype_name(ct_tensor_dtype(a3)));
      merged = NULL;
    }
    ct_release(a3);
    ct_release(mask);
    if (!(mask = merged)) goto done;
  }
  if (mask && ct_tensor_dtype(mask) == CT_BOOL) {
    ct_options o = ct_opts_dtype(ct_tensor_dtype(q));
    o.device = ct_tensor_device(mask); /* zeros_like keeps the mask's device */
    ct_tensor *z = ct_zeros_like(mask, &o);
    ct_tensor *f = z ? ct_masked_fill(z, mask, ct_sf(-INFINITY)) : NULL;
    ct_release(z);
    ct_release(mask);
    if (!(mask = f)) goto done;
  }
  if (!(qh = heads(q, B, H, hd)) || !(kh = heads(k, B, H, hd)) || !(vh = heads(v, B, H, hd))) goto done;
  /* _scaled_dot_product_attention: q / sqrt(E), [baddbmm(mask, q, k^T) | bmm], softmax, dropout, bmm */
  if (!(qs = ct_div_scalar(qh, ct_sf(sqrt((double)hd))))) goto done;
  if (!(kt = ct_transpose(kh, -2, -1))) goto done;
  if (mask) att = ct_baddbmm(mask, qs, kt, ct_si(1), ct_si(1));
  else att = ct_bmm(qs, kt);
  if (!att) goto done;
  if (!(sm = ct_softmax(att, -1, -1))) goto done;
  double p = m->training ? c->dropout : 0.0;
  if (p > 0.0) {
    if (!(dr = ct_dropout(sm, p, true, NULL))) goto done;
  } else dr = ct_retain(sm);
  if (!(o = ct_bmm(dr, vh))) goto done;
  if (!(ot = ct_transpose(o, 0, 1)) || !(oc = ct_contiguous(ot))) goto done;
  {
    int64_t s2[2] = {T * B, E};
    if (!(o2 = ct_view(oc, 2, s2))) goto done;
  }
  if (!(y = ct_linear(o2, Wo, bo))) goto done;
  {
    int64_t s3[3] = {T, B, E};
    if (!(y3 = ct_view(y, 3, s3))) goto done;
  }
  if (!batched) out = ct_squeeze_dim(y3, 1);
  else if (c->batch_first) out = ct_transpose(y3, 1, 0);
  else out = ct_retain(y3);
  if (!out) goto done;
  if (need_weights && attn_weights) {
    int64_t s4[4] = {B, H, T, S};
    ct_tensor *w4 = ct_view(dr, 4, s4);
    ct_tensor *w = NULL;
    if (w4 && average_attn_weights) {
      int64_t one = 1;
      ct_tensor *sum = ct_sum_dims(w4, 1, &one, false);
      w = sum ? ct_div_scalar(sum, ct_si(H)) : NULL;
      ct_release(sum);
    } else if (w4) w = ct_retain(w4);
    ct_release(w4);
    if (w && !batched) {
      ct_tensor *sq = ct_squeeze_dim(w, 0);
      ct_release(w);
      w = sq;
    }
    if (!w) {
      ct_release(out);
      out = NULL;
      goto done;
    }
    wts = w;
  }
done:
  REL(8, q0, k0, v0, kpm, q, k, v, mask);
  REL(8, qh, kh, vh, qs, kt, att, att2, sm);
  REL(8, dr, o, ot, oc, o2, y, y3, NULL);
  if (out && attn_weights) *attn_weights = wts;
  else ct_release(wts);
  return out;
}

static ct_tensor *mha_forward(ct_module *m, const ct_tensor *x) {
  return ct_multihead_attention_forward(m, x, x, x, NULL, false, NULL, true, NULL);
}

/* (query, key, value[, key_padding_mask[, attn_mask]]) -> (output, averaged weights) */
static int mha_forward_n(ct_module *m, int n_in, const ct_tensor *const *in, int max_out, ct_tensor **out) {
  if (n_in < 3 || n_in > 5) {
    ct_set_error(CT_ERR_TYPE, "MultiheadAttention.forward takes (query, key, value[, key_padding_mask[, attn_mask]]), "
                              "got %d inputs", n_in);
    return -1;
  }
  ct_tensor *w = NULL;
  out[0] = ct_multihead_attention_forward(m, in[0], in[1], in[2], n_in > 3 ? in[3] : NULL, max_out > 1,
                                          n_in > 4 ? in[4] : NULL, true, max_out > 1 ? &w : NULL);
  if (!out[0]) return -1;
  if (max_out > 1) {
    out[1] = w;
    return 2;
  }
  return 1;
}

static const ct_module_vtable mha_vt = {mha_forward, mha_forward_n, free, NULL};

ct_module *ct_multihead_attention_new(int64_t embed_dim, int64_t num_heads, double dropout, bool bias,
                                      bool batch_first) {
  if (num_heads <= 0 || embed_dim <= 0) {
    ct_set_error(CT_ERR_VALUE, "embed_dim and num_heads must be greater than 0, got embed_dim=%lld and num_heads=%lld "
                               "instead", (long long)embed_dim, (long long)num_heads);
    return NULL;
  }
  if ((embed_dim / num_heads) * num_heads != embed_dim) {
    ct_set_error(CT_ERR_VALUE, "embed_dim must be divisible by num_heads");
    return NULL;
  }
  if (!(dropout >= 0 && dropout <= 1)) {
    ct_set_error(CT_ERR_VALUE, "dropout probability has to be between 0 and 1, but got %g", dropout);
    return NULL;
  }
  mha_cfg *c = ct_xmalloc(sizeof *c);
  if (!c) return NULL;
  *c = (mha_cfg){embed_dim, num_heads, dropout, bias, batch_first};
  ct_module *m = ct_module_new("MultiheadAttention", &mha_vt, c);
  if (!m) {
    free(c);
    return NULL;
  }
  int64_t ws[2] = {3 * embed_dim, embed_dim}, bs = 3 * embed_dim;
  ct_tensor *w = ct_mod_new_param(m, "in_proj_weight", 2, ws);
  ct_tensor *b = NULL;
  if (!w || (bias && !(b = ct_mod_new_param(m, "in_proj_bias", 1, &bs)))) goto fail;
  /* out_proj is a Linear built (and initialised, drawing random numbers) before _reset_parameters */
  ct_module *op = ct_linear_new(embed_dim, embed_dim, bias);
  if (!op || ct_module_register_module(m, "out_proj", op)) goto fail;
  if (ct_init_xavier_uniform(w, 1.0)) goto fail;
  bool prev = ct_set_grad_enabled(false);
  ct_status st = b ? ct_zero_(b) : CT_OK;
  ct_tensor *ob = ct_module_param(m, "out_proj.bias");
  if (!st && ob) st = ct_zero_(ob);
  ct_set_grad_enabled(prev);
  if (st) goto fail;
  return m;
fail:
  ct_module_free(m);
  return NULL;
}
