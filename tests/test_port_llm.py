"""Modern LLM building blocks as the reference code writes them (Meta's LLaMA model.py,
pytorch-labs/gpt-fast, Hugging Face's Mixtral MoE block and load-balancing loss,
microsoft/LoRA's loralib, BitNet-style fake quantisation), re-typed against a module
`torch` that is torch or retrograd, so one body runs on both; plus the minimal cases of
the gaps the port found. Each test compares with torch computed in the test."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pytest
import torch as _torch
from port_compare import close

import retrograd as rg

LIBS = [_torch, rg]


def _to_rg(sd):
    return {k: rg.tensor(v.detach().numpy().copy()) for k, v in sd.items()}


# ---------------------------------------------------------------- minimal cases


@pytest.mark.parametrize("target, index, value", [
    ((10,), 3, (1, 1)),            # gpt-fast: seq[T] = next_token, a (1, 1) token
    ((10,), slice(4, 6), (1, 1, 2)),
    ((2, 3, 4), (slice(None), 0), (1, 1, 2, 4)),
    ((2, 3, 4), (0, [0, 2]), (1, 2, 4)),
])
def test_setitem_drops_the_values_leading_unit_dims_as_torch(target, index, value):
    """PyTorch strips a value's leading size-1 dims before broadcasting it into the
    indexed part; the gradient flows back to the value's own shape."""
    got = {}
    for L in LIBS:
        x = L.zeros(target, dtype=L.float64, requires_grad=True)
        v = L.tensor(np.arange(1.0, 1 + math.prod(value)).reshape(value), requires_grad=True)
        y = x * 1
        y[index] = v * 2
        (y * L.arange(y.numel(), dtype=L.float64).reshape(target)).sum().backward()
        got[L] = (y, x.grad, v.grad)
    for a, b in zip(got[rg], got[_torch]):
        close(a, b)


def test_setitem_still_refuses_a_value_that_does_not_fit_as_torch():
    for L in LIBS:
        with pytest.raises(RuntimeError):
            L.zeros(10)[3] = L.ones(1, 2)


def test_private_load_state_dict_pre_hook_converts_checkpoint_keys_as_torch():
    """gpt-fast fuses a checkpoint's wq/wk/wv into wqkv with
    `self._register_load_state_dict_pre_hook(self.load_hook)`: the hook gets the state
    dict and the prefix, not the module (with_module=True passes the module first)."""
    def make(torch, with_module):
        class Attention(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.wqkv = torch.nn.Linear(4, 12, bias=False)
                if with_module:
                    self._register_load_state_dict_pre_hook(Attention.hook_m, with_module=True)
                else:
                    self._register_load_state_dict_pre_hook(self.load_hook)

            def load_hook(self, state_dict, prefix, *args):
                if prefix + "wq.weight" in state_dict:
                    wq = state_dict.pop(prefix + "wq.weight")
                    wk = state_dict.pop(prefix + "wk.weight")
                    wv = state_dict.pop(prefix + "wv.weight")
                    state_dict[prefix + "wqkv.weight"] = torch.cat([wq, wk, wv])

            @staticmethod
            def hook_m(module, state_dict, prefix, *args):
                module.load_hook(state_dict, prefix, *args)

        return torch.nn.Sequential(Attention(), Attention())

    rng = np.random.default_rng(0)
    ck = {f"{i}.w{n}.weight": rng.normal(size=(4, 4)) for i in range(2) for n in "qkv"}
    for with_module in (False, True):
        want = make(_torch, with_module)
        want.load_state_dict({k: _torch.tensor(v) for k, v in ck.items()})
        got = make(rg, with_module)
        got.load_state_dict({k: rg.tensor(v) for k, v in ck.items()})
        for (k, a), (k2, b) in zip(got.state_dict().items(), want.state_dict().items()):
            assert k == k2
            close(a.double(), b.double(), k)
    handle = got[0]._register_load_state_dict_pre_hook(lambda *a: None)
    handle.remove()


@pytest.mark.parametrize("call", [
    "L.full((2, 2), -1.7976931348623157e308)",            # HF: finfo(float64).min, float32
    "L.full((2,), 1e300, dtype=L.float32)",
    "L.full((2,), 3.4028235e38)",
    "L.zeros(3).fill_(-1e300)",
])
def test_full_and_fill_refuse_a_value_beyond_float32_as_torch(call):
    for L in LIBS:
        with pytest.raises(RuntimeError, match="overflow"):
            eval(call, {"L": L})


@pytest.mark.parametrize("call", [
    "L.full((2,), float(np.finfo(np.float32).min))", "L.full((2,), float('-inf'))",
    "L.full((2,), 1e300, dtype=L.float64)", "L.zeros(2).fill_(float('nan'))",
    "L.zeros(2).fill_(3.4028234663852886e38)",
])
def test_full_and_fill_keep_values_a_float32_holds(call):
    close(eval(call, {"L": rg, "np": np}), eval(call, {"L": _torch, "np": np}))


def test_data_update_with_a_graph_value_as_loralib_merges():
    """loralib's `train(False)` merges with `self.weight.data += (B @ A) * scaling`
    outside no_grad: retrograd's `.data` is a NumPy array, and writing a tensor that
    requires grad into it stores the values (PyTorch's `.data` write is untracked too)."""
    rng = np.random.default_rng(1)
    w0, a0, b0 = rng.normal(size=(3, 4)), rng.normal(size=(2, 4)), rng.normal(size=(3, 2))
    got = {}
    for L in LIBS:
        w = L.nn.Parameter(L.tensor(w0))
        a, b = L.nn.Parameter(L.tensor(a0)), L.nn.Parameter(L.tensor(b0))
        w.data += (b @ a) * 0.5
        merged = w.detach().clone()
        w.data -= (b @ a) * 0.5
        got[L] = (merged, w)
    close(got[rg][0], got[_torch][0])
    close(got[rg][1], got[_torch][1])
    arr = np.zeros(2)
    with pytest.raises(RuntimeError, match="requires grad"):  # no `out`: still refused
        np.sqrt(rg.ones(2, requires_grad=True))
    arr += rg.ones(2, requires_grad=True)
    np.testing.assert_array_equal(arr, [1.0, 1.0])


@pytest.mark.parametrize("call", [
    "L.zeros(2, 5, 3).index_copy_(2 - 1, L.tensor([0, 1], dtype=L.int32), L.ones(2, 2, 3))",
    "L.index_copy(L.zeros(5, 3), 0, L.tensor([0, 1], dtype=L.int32), L.ones(2, 3))",
    "L.zeros(5, 3).index_fill_(0, L.tensor([0, 1], dtype=L.int32), 1.0)",
    "L.take(L.zeros(5, 3), L.tensor([0, 1], dtype=L.int32))",
])
def test_index_copy_fill_and_take_refuse_an_int32_index_as_torch(call):
    """gpt-fast's positions are int32: `v_cache.index_copy_(2, input_pos, v)` raises in
    torch (index_add_, index_select, gather, scatter and [] take int32)."""
    for L in LIBS:  # index_fill_'s is an IndexError in torch, the others RuntimeErrors
        with pytest.raises(IndexError if "index_fill" in call else RuntimeError):
            eval(call, {"L": L})
    i32 = np.array([0, 2], np.int32)
    for fn in ("index_add_", "index_select"):
        got = {}
        for L in LIBS:
            a = (0, L.tensor(i32), L.ones(2, 3)) if fn == "index_add_" else (0, L.tensor(i32))
            got[L] = getattr(L.zeros(5, 3), fn)(*a)
        close(got[rg], got[_torch], fn)
    close(rg.zeros(5, 3).index_copy_(0, rg.tensor([0, 1]), rg.ones(2, 3)),
          _torch.zeros(5, 3).index_copy_(0, _torch.tensor([0, 1]), _torch.ones(2, 3)))


@pytest.mark.parametrize("call", [
    "L.polar(L.ones(3), L.ones(3, dtype=L.float64))",
    "L.polar(L.ones(3, dtype=L.int64), L.ones(3, dtype=L.int64))",
    "L.polar(L.ones(3, dtype=L.float16), L.ones(3, dtype=L.float16))",
    "L.complex(L.ones(3), L.ones(3, dtype=L.float64))",
])
def test_polar_and_complex_refuse_mixed_or_non_float_dtypes_as_torch(call):
    for L in LIBS:
        with pytest.raises(RuntimeError):
            eval(call, {"L": L})


def test_polar_as_llama_precomputes_freqs_cis():
    got = {}
    for L in LIBS:
        freqs = 1.0 / (10000.0 ** (L.arange(0, 8, 2)[:4].float() / 8))
        t = L.arange(6, dtype=L.float32)
        freqs = L.outer(t, freqs).float()
        got[L] = L.polar(L.ones_like(freqs), freqs)
    close(got[rg], got[_torch], tol=1e-6)


# ---------------------------------------------------------------- whole programs


@dataclass
class LlamaArgs:
    dim: int = 32
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    vocab_size: int = 50
    multiple_of: int = 16
    norm_eps: float = 1e-5
    max_batch_size: int = 2
    max_seq_len: int = 16


def llama(torch):
    """Meta's llama/model.py (fairscale layers as nn.Linear/nn.Embedding), with an
    optional use_cache=False path for training and per-block activation checkpointing."""
    nn, F = torch.nn, torch.nn.functional
    checkpoint = torch.utils.checkpoint.checkpoint

    class RMSNorm(torch.nn.Module):
        def __init__(self, dim: int, eps: float = 1e-6):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(dim))

        def _norm(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

        def forward(self, x):
            output = self._norm(x.float()).type_as(x)
            return output * self.weight

    def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0):
        freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
        t = torch.arange(end, device=freqs.device, dtype=torch.float32)
        freqs = torch.outer(t, freqs).float()
        return torch.polar(torch.ones_like(freqs), freqs)

    def reshape_for_broadcast(freqs_cis, x):
        ndim = x.ndim
        assert freqs_cis.shape == (x.shape[1], x.shape[-1])
        shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
        return freqs_cis.view(*shape)

    def apply_rotary_emb(xq, xk, freqs_cis):
        xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
        freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
        xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
        xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
        return xq_out.type_as(xq), xk_out.type_as(xk)

    def repeat_kv(x, n_rep: int):
        bs, slen, n_kv_heads, head_dim = x.shape
        if n_rep == 1:
            return x
        return (x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim)
                .reshape(bs, slen, n_kv_heads * n_rep, head_dim))

    class Attention(nn.Module):
        def __init__(self, args):
            super().__init__()
            self.n_kv_heads = args.n_kv_heads
            self.n_local_heads = args.n_heads
            self.n_rep = self.n_local_heads // self.n_kv_heads
            self.head_dim = args.dim // args.n_heads
            self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
            self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
            self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
            self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
            shape = (args.max_batch_size, args.max_seq_len, self.n_kv_heads, self.head_dim)
            self.cache_k = torch.zeros(shape)
            self.cache_v = torch.zeros(shape)

        def forward(self, x, start_pos, freqs_cis, mask, use_cache=True):
            bsz, seqlen, _ = x.shape
            xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
            xq = xq.view(bsz, seqlen, self.n_local_heads, self.head_dim)
            xk = xk.view(bsz, seqlen, self.n_kv_heads, self.head_dim)
            xv = xv.view(bsz, seqlen, self.n_kv_heads, self.head_dim)
            xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)
            if use_cache:
                self.cache_k = self.cache_k.to(xq)
                self.cache_v = self.cache_v.to(xq)
                self.cache_k[:bsz, start_pos: start_pos + seqlen] = xk
                self.cache_v[:bsz, start_pos: start_pos + seqlen] = xv
                keys = self.cache_k[:bsz, : start_pos + seqlen]
                values = self.cache_v[:bsz, : start_pos + seqlen]
            else:
                keys, values = xk, xv
            keys = repeat_kv(keys, self.n_rep).transpose(1, 2)
            values = repeat_kv(values, self.n_rep).transpose(1, 2)
            xq = xq.transpose(1, 2)
            scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
            if mask is not None:
                scores = scores + mask
            scores = F.softmax(scores.float(), dim=-1).type_as(xq)
            output = torch.matmul(scores, values)
            return self.wo(output.transpose(1, 2).contiguous().view(bsz, seqlen, -1))

    class FeedForward(nn.Module):
        def __init__(self, dim, hidden_dim, multiple_of):
            super().__init__()
            hidden_dim = int(2 * hidden_dim / 3)
            hidden_dim = multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)
            self.w1 = nn.Linear(dim, hidden_dim, bias=False)
            self.w2 = nn.Linear(hidden_dim, dim, bias=False)
            self.w3 = nn.Linear(dim, hidden_dim, bias=False)

        def forward(self, x):
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class TransformerBlock(nn.Module):
        def __init__(self, layer_id, args):
            super().__init__()
            self.attention = Attention(args)
            self.feed_forward = FeedForward(args.dim, 4 * args.dim, args.multiple_of)
            self.attention_norm = RMSNorm(args.dim, eps=args.norm_eps)
            self.ffn_norm = RMSNorm(args.dim, eps=args.norm_eps)

        def forward(self, x, start_pos, freqs_cis, mask, use_cache=True):
            h = x + self.attention(self.attention_norm(x), start_pos, freqs_cis, mask, use_cache)
            return h + self.feed_forward(self.ffn_norm(h))

    class Transformer(nn.Module):
        def __init__(self, params):
            super().__init__()
            self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)
            self.layers = torch.nn.ModuleList()
            for layer_id in range(params.n_layers):
                self.layers.append(TransformerBlock(layer_id, params))
            self.norm = RMSNorm(params.dim, eps=params.norm_eps)
            self.output = nn.Linear(params.dim, params.vocab_size, bias=False)
            self.freqs_cis = precompute_freqs_cis(params.dim // params.n_heads,
                                                  params.max_seq_len * 2)

        @torch.inference_mode()
        def generate_step(self, tokens, start_pos: int):
            return self(tokens, start_pos)

        def forward(self, tokens, start_pos: int, use_cache=True, ckpt=False):
            _bsz, seqlen = tokens.shape
            h = self.tok_embeddings(tokens)
            self.freqs_cis = self.freqs_cis.to(h.device)
            freqs_cis = self.freqs_cis[start_pos: start_pos + seqlen]
            mask = None
            if seqlen > 1:
                mask = torch.full((seqlen, seqlen), float("-inf"), device=tokens.device)
                mask = torch.triu(mask, diagonal=1)
                mask = torch.hstack([torch.zeros((seqlen, start_pos), device=tokens.device),
                                     mask]).type_as(h)
            for layer in self.layers:
                if ckpt:
                    h = checkpoint(layer, h, start_pos, freqs_cis, mask, use_cache,
                                   use_reentrant=False)
                else:
                    h = layer(h, start_pos, freqs_cis, mask, use_cache)
            return self.output(self.norm(h)).float()

    return Transformer


def _run_llama(torch, sd, toks):
    torch.set_default_dtype(torch.float64)
    F = torch.nn.functional
    model = llama(torch)(LlamaArgs())
    if sd is not None:
        model.load_state_dict(sd)
    sd0 = {k: v.clone() for k, v in model.state_dict().items()}
    tok = torch.tensor(toks)
    out = {}
    for ckpt in (False, True):
        model.zero_grad(set_to_none=True)
        logits = model(tok[:, :-1], 0, use_cache=False, ckpt=ckpt)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), tok[:, 1:].reshape(-1))
        loss.backward()
        out[f"logits{ckpt}"], out[f"loss{ckpt}"] = logits, loss
        out.update({f"grad{ckpt} {k}": p.grad for k, p in model.named_parameters()})
    steps = [model.generate_step(tok[:, :4], 0)]  # prefill, then one token at a time
    for pos in range(4, 8):
        steps.append(model.generate_step(tok[:, pos: pos + 1], pos))
    out["decode"] = torch.cat(steps, 1)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1, betas=(0.9, 0.95))
    for _ in range(2):
        opt.zero_grad()
        logits = model(tok[:, :-1], 0, use_cache=False)
        F.cross_entropy(logits.flatten(0, 1), tok[:, 1:].flatten()).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    out.update({f"param {k}": p for k, p in model.named_parameters()})
    return out, sd0


def test_llama_reference_model_as_torch():
    """Complex RoPE (polar, view_as_complex/real, flatten(3)), RMSNorm's float upcast,
    GQA by expand+reshape, the KV cache written by slice assignment with start_pos,
    the triu/hstack mask, per-block checkpointing, AdamW with clipping."""
    toks = np.random.default_rng(0).integers(0, 50, size=(2, 8))
    _torch.manual_seed(0)
    want, sd = _run_llama(_torch, None, toks)
    got, _ = _run_llama(rg, _to_rg(sd), toks)
    assert list(got) == list(want)
    for k in want:  # float32 RoPE and logits: float32's precision (Adam's steps amplify it)
        close(got[k], want[k], k, tol=2e-5 if k.startswith("param") else 2e-6)


def gpt_fast(torch):
    """pytorch-labs/gpt-fast model.py and generate.py (greedy: top_k=1), at tiny sizes:
    the fused wqkv with its checkpoint-converting load hook, the KV cache written with
    index assignment and index_copy_, the boolean causal mask rows picked by input_pos,
    SDPA, the real-pair RoPE, and generate's preallocated `seq`."""
    nn, F = torch.nn, torch.nn.functional
    dim, n_head, n_local_heads, head_dim, vocab = 32, 4, 2, 8, 40

    class KVCache(nn.Module):
        def __init__(self, max_batch_size, max_seq_length, n_heads, head_dim, dtype):
            super().__init__()
            cache_shape = (max_batch_size, n_heads, max_seq_length, head_dim)
            self.register_buffer("k_cache", torch.zeros(cache_shape, dtype=dtype))
            self.register_buffer("v_cache", torch.zeros(cache_shape, dtype=dtype))

        def update(self, input_pos, k_val, v_val):
            k_out, v_out = self.k_cache, self.v_cache
            k_out[:, :, input_pos] = k_val
            v_out.index_copy_(2, input_pos.long(), v_val)
            return k_out, v_out

    class RMSNorm(nn.Module):
        def __init__(self, dim: int, eps: float = 1e-5):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            x32 = x.float()
            out = x32 * torch.rsqrt(torch.mean(x32 * x32, dim=-1, keepdim=True) + self.eps)
            return out.type_as(x) * self.weight

    def precompute_freqs_cis(seq_len, n_elem, base=10000, dtype=torch.float64):
        freqs = 1.0 / (base ** (torch.arange(0, n_elem, 2)[: (n_elem // 2)].float() / n_elem))
        t = torch.arange(seq_len, device=freqs.device)
        freqs_cis = torch.polar(torch.ones_like(torch.outer(t, freqs)), torch.outer(t, freqs))
        return torch.stack([freqs_cis.real, freqs_cis.imag], dim=-1).to(dtype=dtype)

    def apply_rotary_emb(x, freqs_cis):
        xshaped = x.float().reshape(*x.shape[:-1], -1, 2)
        freqs_cis = freqs_cis.view(1, xshaped.size(1), 1, xshaped.size(3), 2)
        x_out2 = torch.stack([
            xshaped[..., 0] * freqs_cis[..., 0] - xshaped[..., 1] * freqs_cis[..., 1],
            xshaped[..., 1] * freqs_cis[..., 0] + xshaped[..., 0] * freqs_cis[..., 1],
        ], -1)
        return x_out2.flatten(3).type_as(x)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.wqkv = nn.Linear(dim, (n_head + 2 * n_local_heads) * head_dim, bias=False)
            self.wo = nn.Linear(dim, dim, bias=False)
            self.kv_cache = None
            self._register_load_state_dict_pre_hook(self.load_hook)

        def load_hook(self, state_dict, prefix, *args):
            if prefix + "wq.weight" in state_dict:
                wq = state_dict.pop(prefix + "wq.weight")
                wk = state_dict.pop(prefix + "wk.weight")
                wv = state_dict.pop(prefix + "wv.weight")
                state_dict[prefix + "wqkv.weight"] = torch.cat([wq, wk, wv])

        def forward(self, x, freqs_cis, mask, input_pos=None):
            bsz, seqlen, _ = x.shape
            kv_size = n_local_heads * head_dim
            q, k, v = self.wqkv(x).split([dim, kv_size, kv_size], dim=-1)
            q = apply_rotary_emb(q.view(bsz, seqlen, n_head, head_dim), freqs_cis)
            k = apply_rotary_emb(k.view(bsz, seqlen, n_local_heads, head_dim), freqs_cis)
            v = v.view(bsz, seqlen, n_local_heads, head_dim)
            q, k, v = map(lambda x: x.transpose(1, 2), (q, k, v))
            if self.kv_cache is not None:
                k, v = self.kv_cache.update(input_pos, k, v)
            k = k.repeat_interleave(n_head // n_local_heads, dim=1)
            v = v.repeat_interleave(n_head // n_local_heads, dim=1)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0)
            return self.wo(y.transpose(1, 2).contiguous().view(bsz, seqlen, dim))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = Attention()
            self.w1 = nn.Linear(dim, 64, bias=False)
            self.w3 = nn.Linear(dim, 64, bias=False)
            self.w2 = nn.Linear(64, dim, bias=False)
            self.ffn_norm, self.attention_norm = RMSNorm(dim), RMSNorm(dim)

        def forward(self, x, input_pos, freqs_cis, mask):
            h = x + self.attention(self.attention_norm(x), freqs_cis, mask, input_pos)
            y = self.ffn_norm(h)
            return h + self.w2(F.silu(self.w1(y)) * self.w3(y))

    class Transformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_embeddings = nn.Embedding(vocab, dim)
            self.layers = nn.ModuleList(Block() for _ in range(2))
            self.norm = RMSNorm(dim)
            self.output = nn.Linear(dim, vocab, bias=False)

        def setup_caches(self, max_batch_size, max_seq_length):
            max_seq_length = (max_seq_length + 7) // 8 * 8
            dtype = self.output.weight.dtype
            for b in self.layers:
                b.attention.kv_cache = KVCache(max_batch_size, max_seq_length, n_local_heads,
                                               head_dim, dtype)
            self.freqs_cis = precompute_freqs_cis(32, head_dim, 10000, dtype)
            self.causal_mask = torch.tril(torch.ones(max_seq_length, max_seq_length,
                                                     dtype=torch.bool))

        def forward(self, idx, input_pos):
            mask = self.causal_mask[None, None, input_pos]
            freqs_cis = self.freqs_cis[input_pos]
            x = self.tok_embeddings(idx)
            for layer in self.layers:
                x = layer(x, input_pos, freqs_cis, mask)
            return self.output(self.norm(x))

    def logits_to_probs(logits, temperature=1.0, top_k=None):
        logits = logits / max(temperature, 1e-5)
        if top_k is not None:
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            pivot = v.select(-1, -1).unsqueeze(-1)
            logits = torch.where(logits < pivot, -float("Inf"), logits)
        return torch.nn.functional.softmax(logits, dim=-1)

    def sample(logits, temperature=1.0, top_k=None):
        probs = logits_to_probs(logits[:, -1], temperature, top_k)
        q = torch.empty_like(probs).exponential_(1)
        return torch.argmax(probs / q, dim=-1, keepdim=True).to(dtype=torch.int), probs

    @torch.no_grad()
    def generate(model, prompt, max_new_tokens, **sampling_kwargs):
        T = prompt.size(-1)
        T_new = T + max_new_tokens
        model.setup_caches(max_batch_size=1, max_seq_length=T_new)
        seq = torch.empty(T_new, dtype=prompt.dtype, device=prompt.device)
        seq[:T] = prompt
        input_pos = torch.arange(0, T, device=prompt.device)
        all_logits = [model(prompt.view(1, -1), input_pos)]
        next_token = sample(all_logits[-1], **sampling_kwargs)[0].clone()
        seq[T] = next_token
        input_pos = torch.tensor([T], device=prompt.device, dtype=torch.int)
        new_tokens, cur_token = [], next_token.view(1, -1)
        for _ in range(max_new_tokens - 1):
            all_logits.append(model(cur_token, input_pos))
            next_token, _ = sample(all_logits[-1], **sampling_kwargs)
            input_pos += 1
            new_tokens.append(next_token.clone())
            cur_token = next_token.clone()
        seq[T + 1:] = torch.cat(new_tokens).view(-1)
        return seq, torch.cat(all_logits, 1)

    return Transformer, generate


def test_gpt_fast_generate_as_torch():
    _torch.manual_seed(0)
    want_model, want_gen = gpt_fast(_torch)
    tm = want_model().double()
    got_model, got_gen = gpt_fast(rg)
    rm = got_model().double()
    sd = _to_rg(tm.state_dict())
    for i in range(2):  # a checkpoint with separate wq/wk/wv, as gpt-fast's converter reads
        w = sd.pop(f"layers.{i}.attention.wqkv.weight")
        sd[f"layers.{i}.attention.wq.weight"] = w[:32]
        sd[f"layers.{i}.attention.wk.weight"] = w[32:48]
        sd[f"layers.{i}.attention.wv.weight"] = w[48:]
    rm.load_state_dict(sd)
    want = want_gen(tm, _torch.tensor([1, 5, 7, 2]), 6, temperature=1.0, top_k=1)
    got = got_gen(rm, rg.tensor([1, 5, 7, 2]), 6, temperature=1.0, top_k=1)
    close(got[0], want[0], "tokens")
    close(got[1], want[1], "logits", tol=1e-6)  # float32 RoPE tables


def mixtral_moe(torch):
    """Hugging Face's MixtralSparseMoeBlock and load_balancing_loss_func (with and without
    an attention mask), and mistral-src's loop over experts with where and +=."""
    nn, F = torch.nn, torch.nn.functional

    class Expert(nn.Module):
        def __init__(self, hidden, ffn):
            super().__init__()
            self.w1 = nn.Linear(hidden, ffn, bias=False)
            self.w2 = nn.Linear(ffn, hidden, bias=False)
            self.w3 = nn.Linear(hidden, ffn, bias=False)
            self.act_fn = nn.SiLU()

        def forward(self, hidden_states):
            return self.w2(self.act_fn(self.w1(hidden_states)) * self.w3(hidden_states))

    class MixtralSparseMoeBlock(nn.Module):
        def __init__(self, hidden=16, ffn=24, num_experts=4, top_k=2):
            super().__init__()
            self.hidden_dim, self.num_experts, self.top_k = hidden, num_experts, top_k
            self.gate = nn.Linear(hidden, num_experts, bias=False)
            self.experts = nn.ModuleList([Expert(hidden, ffn) for _ in range(num_experts)])

        def forward(self, hidden_states):
            batch_size, sequence_length, hidden_dim = hidden_states.shape
            hidden_states = hidden_states.view(-1, hidden_dim)
            router_logits = self.gate(hidden_states)
            routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
            routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
            routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
            routing_weights = routing_weights.to(hidden_states.dtype)
            final_hidden_states = torch.zeros((batch_size * sequence_length, hidden_dim),
                                              dtype=hidden_states.dtype,
                                              device=hidden_states.device)
            expert_mask = torch.nn.functional.one_hot(
                selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
            expert_hitted = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
            for expert_idx in expert_hitted:
                expert_layer = self.experts[expert_idx]
                idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
                current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
                current = expert_layer(current_state) * routing_weights[top_x, idx, None]
                final_hidden_states.index_add_(0, top_x, current.to(hidden_states.dtype))
            final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length,
                                                              hidden_dim)
            return final_hidden_states, router_logits

    def load_balancing_loss_func(gate_logits, num_experts, top_k=2, attention_mask=None):
        compute_device = gate_logits[0].device
        concatenated = torch.cat([g.to(compute_device) for g in gate_logits], dim=0)
        routing_weights = torch.nn.functional.softmax(concatenated, dim=-1)
        _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
        expert_mask = torch.nn.functional.one_hot(selected_experts, num_experts)
        if attention_mask is None:
            tokens_per_expert = torch.mean(expert_mask.float(), dim=0)
            router_prob_per_expert = torch.mean(routing_weights, dim=0)
        else:
            batch_size, sequence_length = attention_mask.shape
            num_layers = concatenated.shape[0] // (batch_size * sequence_length)
            expert_attention_mask = (
                attention_mask[None, :, :, None, None]
                .expand((num_layers, batch_size, sequence_length, top_k, num_experts))
                .reshape(-1, top_k, num_experts).to(compute_device))
            tokens_per_expert = torch.sum(expert_mask.float() * expert_attention_mask,
                                          dim=0) / torch.sum(expert_attention_mask, dim=0)
            router_mask = (attention_mask[None, :, :, None]
                           .expand((num_layers, batch_size, sequence_length, num_experts))
                           .reshape(-1, num_experts).to(compute_device))
            router_prob_per_expert = torch.sum(routing_weights * router_mask,
                                               dim=0) / torch.sum(router_mask, dim=0)
        return torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0)) * num_experts

    def mistral_moe(experts, gate, inputs, k=2):
        gate_logits = gate(inputs)
        weights, selected_experts = torch.topk(gate_logits, k)
        weights = F.softmax(weights, dim=1, dtype=torch.float).to(inputs.dtype)
        results = torch.zeros_like(inputs)
        for i, expert in enumerate(experts):
            batch_idx, nth_expert = torch.where(selected_experts == i)
            results[batch_idx] += weights[batch_idx, nth_expert, None] * expert(inputs[batch_idx])
        return results

    return MixtralSparseMoeBlock, load_balancing_loss_func, mistral_moe


def _run_moe(torch, sd, x_np, am_np):
    torch.set_default_dtype(torch.float64)
    Moe, aux_loss, mistral_moe = mixtral_moe(torch)
    m = Moe()
    if sd is not None:
        m.load_state_dict(sd)
    sd0 = {k: v.clone() for k, v in m.state_dict().items()}
    x = torch.tensor(x_np, requires_grad=True)
    y, logits = m(x)
    y2, logits2 = m(y)
    aux = aux_loss((logits, logits2), 4, 2)
    aux_masked = aux_loss((logits, logits2), 4, 2, torch.tensor(am_np))
    y3 = mistral_moe(m.experts, m.gate, x.view(-1, 16))
    loss = y2.pow(2).mean() + 0.01 * aux + 0.02 * aux_masked + y3.sum()
    loss.backward()
    out = {"y": y, "y2": y2, "aux": aux, "aux_masked": aux_masked, "y3": y3, "x.grad": x.grad}
    out.update({f"grad {k}": p.grad for k, p in m.named_parameters()})
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    for _ in range(2):
        opt.zero_grad()
        y, lg = m(x.detach())
        (y.square().sum() + aux_loss((lg,), 4, 2)).backward()
        opt.step()
    out.update({f"param {k}": p for k, p in m.named_parameters()})
    return out, sd0


def test_mixtral_moe_and_load_balancing_loss_as_torch():
    rng = np.random.default_rng(1)
    x_np = rng.normal(size=(2, 5, 16))
    am_np = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]])
    _torch.manual_seed(0)
    want, sd = _run_moe(_torch, None, x_np, am_np)
    got, _ = _run_moe(rg, _to_rg(sd), x_np, am_np)
    assert list(got) == list(want)
    for k in want:  # routing weights in float32 (softmax(dtype=torch.float)), as the source
        close(got[k], want[k], k, tol=1e-6)


def lora_and_quant(torch):
    """microsoft/LoRA's loralib Linear (merge/unmerge through .data in train()), a
    lit-gpt-style wrapper merged in no_grad, weight-only STE fake quantisation, a BitNet
    BitLinear, an autograd.Function fake quantiser, int8 absmax, and weight tying."""
    nn, F = torch.nn, torch.nn.functional

    class LoRALinear(nn.Linear):
        def __init__(self, in_features, out_features, r=4, lora_alpha=8, **kwargs):
            nn.Linear.__init__(self, in_features, out_features, **kwargs)
            self.r, self.lora_alpha = r, lora_alpha
            self.merged, self.merge_weights = False, True
            self.lora_A = nn.Parameter(self.weight.new_zeros((r, in_features)))
            self.lora_B = nn.Parameter(self.weight.new_zeros((out_features, r)))
            self.scaling = self.lora_alpha / self.r
            self.weight.requires_grad = False
            self.reset_parameters()

        def reset_parameters(self):
            nn.Linear.reset_parameters(self)
            if hasattr(self, "lora_A"):
                nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
                nn.init.zeros_(self.lora_B)

        def train(self, mode: bool = True):
            nn.Linear.train(self, mode)
            if mode:
                if self.merge_weights and self.merged:
                    self.weight.data -= (self.lora_B @ self.lora_A) * self.scaling
                    self.merged = False
            elif self.merge_weights and not self.merged:
                self.weight.data += (self.lora_B @ self.lora_A) * self.scaling
                self.merged = True
            return self

        def forward(self, x):
            if self.r > 0 and not self.merged:
                result = F.linear(x, self.weight, bias=self.bias)
                result += (x @ self.lora_A.transpose(0, 1) @ self.lora_B.transpose(0, 1)) \
                    * self.scaling
                return result
            return F.linear(x, self.weight, bias=self.bias)

    class LoRAWrap(nn.Module):
        def __init__(self, base, rank=2, alpha=4):
            super().__init__()
            self.base = base
            self.base.requires_grad_(False)
            self.A = nn.Parameter(torch.randn(base.in_features, rank) / math.sqrt(rank))
            self.B = nn.Parameter(torch.zeros(rank, base.out_features))
            self.alpha, self.rank = alpha, rank

        def forward(self, x):
            return self.base(x) + self.alpha / self.rank * (x @ self.A @ self.B)

        @torch.no_grad()
        def merge(self):
            self.base.weight.add_((self.A @ self.B).T, alpha=self.alpha / self.rank)

    class FakeQuant(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, bits):
            qmax = 2 ** (bits - 1) - 1
            scale = x.abs().amax(dim=-1, keepdim=True).clamp(min=1e-8) / qmax
            return (x / scale).round().clamp(-qmax - 1, qmax) * scale

        @staticmethod
        def backward(ctx, g):
            return g, None

    def quantize_ste(w, bits=4):
        qmax = 2 ** (bits - 1) - 1
        scale = w.abs().max(dim=-1, keepdim=True)[0] / qmax
        w_q = torch.clamp(torch.round(w / scale), -qmax - 1, qmax) * scale
        return (w_q - w).detach() + w

    class QLinear(nn.Linear):
        def forward(self, x):
            return F.linear(x, quantize_ste(self.weight), self.bias)

    class BitLinear(nn.Linear):
        def forward(self, x):
            w = self.weight
            scale = 1.0 / w.abs().mean().clamp_(min=1e-5)
            u = (w * scale).round().clamp_(-1, 1) / scale
            w_quant = w + (u - w).detach()
            x_scale = 127.0 / x.abs().max(dim=-1, keepdim=True).values.clamp_(min=1e-5)
            x_quant = x + ((x * x_scale).round().clamp_(-128, 127) / x_scale - x).detach()
            return F.linear(x_quant, w_quant, self.bias)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(20, 12)
            self.l1 = LoRALinear(12, 16)
            self.l2 = LoRAWrap(nn.Linear(16, 16))
            self.q = QLinear(16, 16)
            self.b = BitLinear(16, 12, bias=False)
            self.head = nn.Linear(12, 20, bias=False)
            self.head.weight = self.emb.weight

        def forward(self, idx):
            h = F.gelu(self.l1(self.emb(idx)), approximate="tanh")
            h = FakeQuant.apply(self.q(F.relu(self.l2(h))), 8)
            return self.head(self.b(h))

    return Net


def _run_lora(torch, sd, idx_np):
    torch.set_default_dtype(torch.float64)
    F = torch.nn.functional
    m = lora_and_quant(torch)()
    if sd is not None:
        m.load_state_dict(sd)
    with torch.no_grad():
        m.l2.B.fill_(0.05)
        m.l1.lora_B.fill_(0.03)
    sd0 = {k: v.clone() for k, v in m.state_dict().items()}
    out = {"trainable": torch.tensor([p.requires_grad for p in m.parameters()])}
    idx = torch.tensor(idx_np)
    logits = m(idx[:, :-1])
    loss = F.cross_entropy(logits.float().view(-1, 20), idx[:, 1:].contiguous().view(-1))
    loss.backward()
    out.update({"logits": logits, "loss": loss})
    out.update({f"grad {k}": p.grad for k, p in m.named_parameters() if p.grad is not None})
    scale = 127.0 / logits.abs().amax(dim=-1, keepdim=True)
    out["int8"] = (logits * scale).round().to(torch.int8)
    opt = torch.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(2):
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(m(idx[:, :-1]).flatten(0, 1), idx[:, 1:].flatten()).backward()
        opt.step()
    m.eval()  # loralib merges B @ A into the frozen weight
    out["merged l1"] = m.l1.weight.clone()
    out["eval logits"] = m(idx)
    m.l2.merge()
    out["merged l2"] = m.l2.base.weight.clone()
    m.train()
    out["unmerged l1"] = m.l1.weight.clone()
    return out, sd0


def test_lora_and_fake_quantisation_as_torch():
    idx_np = np.random.default_rng(2).integers(0, 20, size=(3, 7))
    _torch.manual_seed(0)
    want, sd = _run_lora(_torch, None, idx_np)
    got, _ = _run_lora(rg, _to_rg(sd), idx_np)
    assert list(got) == list(want)
    for k in want:
        close(got[k], want[k], k, tol=1e-6)


def test_attention_backend_flags_and_deprecated_sdp_kernel_as_torch():
    """2023-era LLM code (lit-gpt, HF) wraps attention in the deprecated
    `torch.backends.cuda.sdp_kernel(...)` and reads `flash_sdp_enabled()`."""
    for L in LIBS:
        cuda = L.backends.cuda
        seen = []
        with pytest.warns(FutureWarning, match="sdp_kernel"):
            with cuda.sdp_kernel(enable_flash=False, enable_math=True,
                                 enable_mem_efficient=False):
                seen.append((cuda.flash_sdp_enabled(), cuda.math_sdp_enabled(),
                             cuda.mem_efficient_sdp_enabled()))
        seen.append((cuda.flash_sdp_enabled(), cuda.math_sdp_enabled(),
                     cuda.mem_efficient_sdp_enabled()))
        with L.nn.attention.sdpa_kernel([L.nn.attention.SDPBackend.MATH]):
            seen.append((cuda.flash_sdp_enabled(), cuda.math_sdp_enabled(),
                         cuda.cudnn_sdp_enabled()))
        cuda.enable_flash_sdp(False)
        seen.append(cuda.flash_sdp_enabled())
        cuda.enable_flash_sdp(True)
        if L is _torch:
            want = seen
        else:
            assert seen == want


@pytest.mark.parametrize("kind", ["HalfTensor", "torch.HalfTensor"])
def test_set_default_tensor_type_takes_half_as_torch(kind):
    """LLaMA 2's example scripts set half precision with set_default_tensor_type."""
    got = {}
    for L in LIBS:
        with warnings.catch_warnings():  # deprecated (torch warns once per process)
            warnings.simplefilter("ignore")
            L.set_default_tensor_type(getattr(L, kind) if kind == "HalfTensor" else kind)
        try:
            got[L] = (L.zeros(2), L.tensor([1.5, 2.0]), L.arange(0, 4, 2).float(),
                      L.get_default_dtype() == L.float16)
        finally:
            L.set_default_dtype(L.float32)
    assert got[rg][3] and got[_torch][3]
    for a, b in zip(got[rg][:3], got[_torch][:3]):
        close(a, b)
