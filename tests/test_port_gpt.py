"""The GPT code people run (karpathy/nanoGPT model.py and train.py's loop, karpathy/minGPT
model.py, karpathy/makemore's models and data pipeline), re-typed as each source writes it
but against a module `torch` that is either torch or retrograd, so one class body runs on
both. Each test builds both at tiny sizes, copies torch's weights into retrograd, and
compares logits, losses, every parameter's gradient, AdamW steps with the source's param
groups, generation and checkpoint round trips."""

# ruff: noqa: B007, UP031  (the sources' own loop variables and %-formatting, kept as written)
from __future__ import annotations

import inspect
import math
import os
from contextlib import nullcontext
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pytest
import torch as _torch

import retrograd as rg

# ---------------------------------------------------------------- the sources, re-typed


def nanogpt(torch, flash=None):
    """karpathy/nanoGPT model.py. `flash` forces the attention path (None: the source's
    `hasattr` test)."""
    nn = torch.nn
    F = torch.nn.functional

    class LayerNorm(nn.Module):
        def __init__(self, ndim, bias):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(ndim))
            self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

        def forward(self, input):
            return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)

    class CausalSelfAttention(nn.Module):
        def __init__(self, config):
            super().__init__()
            assert config.n_embd % config.n_head == 0
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
            self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
            self.attn_dropout = nn.Dropout(config.dropout)
            self.resid_dropout = nn.Dropout(config.dropout)
            self.n_head = config.n_head
            self.n_embd = config.n_embd
            self.dropout = config.dropout
            self.flash = hasattr(torch.nn.functional, 'scaled_dot_product_attention')
            if flash is not None:
                self.flash = flash
            if not self.flash:
                self.register_buffer("bias", torch.tril(
                    torch.ones(config.block_size, config.block_size))
                    .view(1, 1, config.block_size, config.block_size))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            if self.flash:
                y = torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0,
                    is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
                att = F.softmax(att, dim=-1)
                att = self.attn_dropout(att)
                y = att @ v
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            y = self.resid_dropout(self.c_proj(y))
            return y

    class MLP(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
            self.dropout = nn.Dropout(config.dropout)

        def forward(self, x):
            x = self.c_fc(x)
            x = self.gelu(x)
            x = self.c_proj(x)
            x = self.dropout(x)
            return x

    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
            self.attn = CausalSelfAttention(config)
            self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
            self.mlp = MLP(config)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            x = x + self.mlp(self.ln_2(x))
            return x

    @dataclass
    class GPTConfig:
        block_size: int = 1024
        vocab_size: int = 50304
        n_layer: int = 12
        n_head: int = 12
        n_embd: int = 768
        dropout: float = 0.0
        bias: bool = True

    class GPT(nn.Module):
        def __init__(self, config):
            super().__init__()
            assert config.vocab_size is not None
            assert config.block_size is not None
            self.config = config
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=LayerNorm(config.n_embd, bias=config.bias),
            ))
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith('c_proj.weight'):
                    torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))
            "number of parameters: %.2fM" % (self.get_num_params() / 1e6,)

        def get_num_params(self, non_embedding=True):
            n_params = sum(p.numel() for p in self.parameters())
            if non_embedding:
                n_params -= self.transformer.wpe.weight.numel()
            return n_params

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets=None):
            device = idx.device
            b, t = idx.size()
            assert t <= self.config.block_size
            pos = torch.arange(0, t, dtype=torch.long, device=device)
            tok_emb = self.transformer.wte(idx)
            pos_emb = self.transformer.wpe(pos)
            x = self.transformer.drop(tok_emb + pos_emb)
            for block in self.transformer.h:
                x = block(x)
            x = self.transformer.ln_f(x)
            if targets is not None:
                logits = self.lm_head(x)
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                       ignore_index=-1)
            else:
                logits = self.lm_head(x[:, [-1], :])
                loss = None
            return logits, loss

        def crop_block_size(self, block_size):
            assert block_size <= self.config.block_size
            self.config.block_size = block_size
            self.transformer.wpe.weight = nn.Parameter(self.transformer.wpe.weight[:block_size])
            for block in self.transformer.h:
                if hasattr(block.attn, 'bias'):
                    block.attn.bias = block.attn.bias[:, :, :block_size, :block_size]

        def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
            param_dict = {pn: p for pn, p in self.named_parameters()}
            param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
            decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
            nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
            optim_groups = [
                {'params': decay_params, 'weight_decay': weight_decay},
                {'params': nodecay_params, 'weight_decay': 0.0}
            ]
            num_decay_params = sum(p.numel() for p in decay_params)
            num_nodecay_params = sum(p.numel() for p in nodecay_params)
            assert f"{len(decay_params)}, {num_decay_params:,}" and \
                f"{len(nodecay_params)}, {num_nodecay_params:,}"  # the source's prints
            fused_available = 'fused' in inspect.signature(torch.optim.AdamW).parameters
            use_fused = fused_available and device_type == 'cuda'
            extra_args = dict(fused=True) if use_fused else dict()
            optimizer = torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas,
                                          **extra_args)
            return optimizer

        def estimate_mfu(self, fwdbwd_per_iter, dt):
            N = self.get_num_params()
            cfg = self.config
            L, H, Q, T = cfg.n_layer, cfg.n_head, cfg.n_embd // cfg.n_head, cfg.block_size
            flops_per_token = 6 * N + 12 * L * H * Q * T
            flops_per_fwdbwd = flops_per_token * T
            flops_per_iter = flops_per_fwdbwd * fwdbwd_per_iter
            flops_achieved = flops_per_iter * (1.0 / dt)
            flops_promised = 312e12
            mfu = flops_achieved / flops_promised
            return mfu

        @torch.no_grad()
        def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
            for _ in range(max_new_tokens):
                idx_cond = idx if idx.size(1) <= self.config.block_size \
                    else idx[:, -self.config.block_size:]
                logits, _ = self(idx_cond)
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                    logits[logits < v[:, [-1]]] = -float('Inf')
                probs = F.softmax(logits, dim=-1)
                idx_next = torch.multinomial(probs, num_samples=1)
                idx = torch.cat((idx, idx_next), dim=1)
            return idx

    return SimpleNamespace(GPT=GPT, GPTConfig=GPTConfig)


class CN:
    """minGPT's CfgNode, reduced to attribute storage and merge_from_dict."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    def merge_from_dict(self, d):
        self.__dict__.update(d)


def mingpt(torch):
    """karpathy/minGPT mingpt/model.py."""
    nn = torch.nn
    F = torch.nn.functional

    class NewGELU(nn.Module):
        def forward(self, x):
            return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi)
                                               * (x + 0.044715 * torch.pow(x, 3.0))))

    class CausalSelfAttention(nn.Module):
        def __init__(self, config):
            super().__init__()
            assert config.n_embd % config.n_head == 0
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
            self.c_proj = nn.Linear(config.n_embd, config.n_embd)
            self.attn_dropout = nn.Dropout(config.attn_pdrop)
            self.resid_dropout = nn.Dropout(config.resid_pdrop)
            self.register_buffer("bias", torch.tril(
                torch.ones(config.block_size, config.block_size))
                .view(1, 1, config.block_size, config.block_size))
            self.n_head = config.n_head
            self.n_embd = config.n_embd

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            y = self.resid_dropout(self.c_proj(y))
            return y

    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.ln_1 = nn.LayerNorm(config.n_embd)
            self.attn = CausalSelfAttention(config)
            self.ln_2 = nn.LayerNorm(config.n_embd)
            self.mlp = nn.ModuleDict(dict(
                c_fc=nn.Linear(config.n_embd, 4 * config.n_embd),
                c_proj=nn.Linear(4 * config.n_embd, config.n_embd),
                act=NewGELU(),
                dropout=nn.Dropout(config.resid_pdrop),
            ))
            m = self.mlp
            self.mlpf = lambda x: m.dropout(m.c_proj(m.act(m.c_fc(x))))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            x = x + self.mlpf(self.ln_2(x))
            return x

    class GPT(nn.Module):
        @staticmethod
        def get_default_config():
            C = CN()
            C.model_type = 'gpt'
            C.n_layer = None
            C.n_head = None
            C.n_embd = None
            C.vocab_size = None
            C.block_size = None
            C.embd_pdrop = 0.1
            C.resid_pdrop = 0.1
            C.attn_pdrop = 0.1
            return C

        def __init__(self, config):
            super().__init__()
            assert config.vocab_size is not None
            assert config.block_size is not None
            self.block_size = config.block_size
            type_given = config.model_type is not None
            params_given = all([config.n_layer is not None, config.n_head is not None,
                                config.n_embd is not None])
            assert type_given ^ params_given
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.embd_pdrop),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=nn.LayerNorm(config.n_embd),
            ))
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith('c_proj.weight'):
                    torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))
            n_params = sum(p.numel() for p in self.transformer.parameters())
            "number of parameters: %.2fM" % (n_params / 1e6,)

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            elif isinstance(module, nn.LayerNorm):
                torch.nn.init.zeros_(module.bias)
                torch.nn.init.ones_(module.weight)

        def configure_optimizers(self, train_config):
            decay = set()
            no_decay = set()
            whitelist_weight_modules = (torch.nn.Linear, )
            blacklist_weight_modules = (torch.nn.LayerNorm, torch.nn.Embedding)
            for mn, m in self.named_modules():
                for pn, p in m.named_parameters():
                    fpn = '%s.%s' % (mn, pn) if mn else pn
                    if pn.endswith('bias'):
                        no_decay.add(fpn)
                    elif pn.endswith('weight') and isinstance(m, whitelist_weight_modules):
                        decay.add(fpn)
                    elif pn.endswith('weight') and isinstance(m, blacklist_weight_modules):
                        no_decay.add(fpn)
            param_dict = {pn: p for pn, p in self.named_parameters()}
            inter_params = decay & no_decay
            union_params = decay | no_decay
            assert len(inter_params) == 0
            assert len(param_dict.keys() - union_params) == 0
            optim_groups = [
                {"params": [param_dict[pn] for pn in sorted(list(decay))],
                 "weight_decay": train_config.weight_decay},
                {"params": [param_dict[pn] for pn in sorted(list(no_decay))], "weight_decay": 0.0},
            ]
            optimizer = torch.optim.AdamW(optim_groups, lr=train_config.learning_rate,
                                          betas=train_config.betas)
            return optimizer

        def forward(self, idx, targets=None):
            device = idx.device
            b, t = idx.size()
            assert t <= self.block_size
            pos = torch.arange(0, t, dtype=torch.long, device=device).unsqueeze(0)
            tok_emb = self.transformer.wte(idx)
            pos_emb = self.transformer.wpe(pos)
            x = self.transformer.drop(tok_emb + pos_emb)
            for block in self.transformer.h:
                x = block(x)
            x = self.transformer.ln_f(x)
            logits = self.lm_head(x)
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                       ignore_index=-1)
            return logits, loss

        @torch.no_grad()
        def generate(self, idx, max_new_tokens, temperature=1.0, do_sample=False, top_k=None):
            for _ in range(max_new_tokens):
                idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
                logits, _ = self(idx_cond)
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    v, _ = torch.topk(logits, top_k)
                    logits[logits < v[:, [-1]]] = -float('Inf')
                probs = F.softmax(logits, dim=-1)
                if do_sample:
                    idx_next = torch.multinomial(probs, num_samples=1)
                else:
                    _, idx_next = torch.topk(probs, k=1, dim=-1)
                idx = torch.cat((idx, idx_next), dim=1)
            return idx

    return SimpleNamespace(GPT=GPT)


def makemore(torch):
    """karpathy/makemore makemore.py: its models, generate, CharDataset and
    InfiniteDataLoader."""
    nn = torch.nn
    F = torch.nn.functional
    Dataset = torch.utils.data.Dataset
    DataLoader = torch.utils.data.DataLoader

    @dataclass
    class ModelConfig:
        block_size: int = None
        vocab_size: int = None
        n_layer: int = 4
        n_embd: int = 64
        n_embd2: int = 64
        n_head: int = 4

    class NewGELU(nn.Module):
        def forward(self, x):
            return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi)
                                               * (x + 0.044715 * torch.pow(x, 3.0))))

    class CausalSelfAttention(nn.Module):
        def __init__(self, config):
            super().__init__()
            assert config.n_embd % config.n_head == 0
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
            self.c_proj = nn.Linear(config.n_embd, config.n_embd)
            self.register_buffer("bias", torch.tril(
                torch.ones(config.block_size, config.block_size))
                .view(1, 1, config.block_size, config.block_size))
            self.n_head = config.n_head
            self.n_embd = config.n_embd

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
            att = F.softmax(att, dim=-1)
            y = att @ v
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            y = self.c_proj(y)
            return y

    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.ln_1 = nn.LayerNorm(config.n_embd)
            self.attn = CausalSelfAttention(config)
            self.ln_2 = nn.LayerNorm(config.n_embd)
            self.mlp = nn.ModuleDict(dict(
                c_fc=nn.Linear(config.n_embd, 4 * config.n_embd),
                c_proj=nn.Linear(4 * config.n_embd, config.n_embd),
                act=NewGELU(),
            ))
            m = self.mlp
            self.mlpf = lambda x: m.c_proj(m.act(m.c_fc(x)))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            x = x + self.mlpf(self.ln_2(x))
            return x

    class Transformer(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.block_size = config.block_size
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=nn.LayerNorm(config.n_embd),
            ))
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            n_params = sum(p.numel() for p in self.transformer.parameters())
            "number of parameters: %.2fM" % (n_params / 1e6,)

        def get_block_size(self):
            return self.block_size

        def forward(self, idx, targets=None):
            device = idx.device
            b, t = idx.size()
            assert t <= self.block_size
            pos = torch.arange(0, t, dtype=torch.long, device=device).unsqueeze(0)
            tok_emb = self.transformer.wte(idx)
            pos_emb = self.transformer.wpe(pos)
            x = tok_emb + pos_emb
            for block in self.transformer.h:
                x = block(x)
            x = self.transformer.ln_f(x)
            logits = self.lm_head(x)
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                       ignore_index=-1)
            return logits, loss

    class CausalBoW(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.block_size = config.block_size
            self.register_buffer("bias", torch.tril(
                torch.ones(config.block_size, config.block_size))
                .view(1, config.block_size, config.block_size))

        def forward(self, x):
            B, T, C = x.size()
            att = torch.zeros((B, T, T), device=x.device)
            att = att.masked_fill(self.bias[:, :T, :T] == 0, float('-inf'))
            att = F.softmax(att, dim=-1)
            y = att @ x
            return y

    class BoWBlock(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.cbow = CausalBoW(config)
            self.mlp = nn.ModuleDict(dict(
                c_fc=nn.Linear(config.n_embd, config.n_embd2),
                c_proj=nn.Linear(config.n_embd2, config.n_embd),
            ))
            m = self.mlp
            self.mlpf = lambda x: m.c_proj(F.tanh(m.c_fc(x)))

        def forward(self, x):
            x = x + self.cbow(x)
            x = x + self.mlpf(x)
            return x

    class BoW(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.block_size = config.block_size
            self.vocab_size = config.vocab_size
            self.wte = nn.Embedding(config.vocab_size, config.n_embd)
            self.wpe = nn.Embedding(config.block_size, config.n_embd)
            self.context_block = BoWBlock(config)
            self.lm_head = nn.Linear(config.n_embd, self.vocab_size)

        def get_block_size(self):
            return self.block_size

        def forward(self, idx, targets=None):
            device = idx.device
            b, t = idx.size()
            assert t <= self.block_size
            pos = torch.arange(0, t, dtype=torch.long, device=device).unsqueeze(0)
            tok_emb = self.wte(idx)
            pos_emb = self.wpe(pos)
            x = tok_emb + pos_emb
            x = self.context_block(x)
            logits = self.lm_head(x)
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                       ignore_index=-1)
            return logits, loss

    class RNNCell(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.xh_to_h = nn.Linear(config.n_embd + config.n_embd2, config.n_embd2)

        def forward(self, xt, hprev):
            xh = torch.cat([xt, hprev], dim=1)
            ht = F.tanh(self.xh_to_h(xh))
            return ht

    class GRUCell(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.xh_to_z = nn.Linear(config.n_embd + config.n_embd2, config.n_embd2)
            self.xh_to_r = nn.Linear(config.n_embd + config.n_embd2, config.n_embd2)
            self.xh_to_hbar = nn.Linear(config.n_embd + config.n_embd2, config.n_embd2)

        def forward(self, xt, hprev):
            xh = torch.cat([xt, hprev], dim=1)
            r = F.sigmoid(self.xh_to_r(xh))
            hprev_reset = r * hprev
            xhr = torch.cat([xt, hprev_reset], dim=1)
            hbar = F.tanh(self.xh_to_hbar(xhr))
            z = F.sigmoid(self.xh_to_z(xh))
            ht = (1 - z) * hprev + z * hbar
            return ht

    class RNN(nn.Module):
        def __init__(self, config, cell_type):
            super().__init__()
            self.block_size = config.block_size
            self.vocab_size = config.vocab_size
            self.start = nn.Parameter(torch.zeros(1, config.n_embd2))
            self.wte = nn.Embedding(config.vocab_size, config.n_embd)
            if cell_type == 'rnn':
                self.cell = RNNCell(config)
            elif cell_type == 'gru':
                self.cell = GRUCell(config)
            self.lm_head = nn.Linear(config.n_embd2, self.vocab_size)

        def get_block_size(self):
            return self.block_size

        def forward(self, idx, targets=None):
            b, t = idx.size()
            emb = self.wte(idx)
            hprev = self.start.expand((b, -1))
            hiddens = []
            for i in range(t):
                xt = emb[:, i, :]
                ht = self.cell(xt, hprev)
                hprev = ht
                hiddens.append(ht)
            hidden = torch.stack(hiddens, 1)
            logits = self.lm_head(hidden)
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                       ignore_index=-1)
            return logits, loss

    class MLP(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.block_size = config.block_size
            self.vocab_size = config.vocab_size
            self.wte = nn.Embedding(config.vocab_size + 1, config.n_embd)
            self.mlp = nn.Sequential(
                nn.Linear(self.block_size * config.n_embd, config.n_embd2),
                nn.Tanh(),
                nn.Linear(config.n_embd2, self.vocab_size)
            )

        def get_block_size(self):
            return self.block_size

        def forward(self, idx, targets=None):
            embs = []
            for k in range(self.block_size):
                tok_emb = self.wte(idx)
                idx = torch.roll(idx, 1, 1)
                idx[:, 0] = self.vocab_size
                embs.append(tok_emb)
            x = torch.cat(embs, -1)
            logits = self.mlp(x)
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                       ignore_index=-1)
            return logits, loss

    class Bigram(nn.Module):
        def __init__(self, config):
            super().__init__()
            n = config.vocab_size
            self.logits = nn.Parameter(torch.zeros((n, n)))

        def get_block_size(self):
            return 1

        def forward(self, idx, targets=None):
            logits = self.logits[idx]
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                       ignore_index=-1)
            return logits, loss

    @torch.no_grad()
    def generate(model, idx, max_new_tokens, temperature=1.0, do_sample=False, top_k=None):
        block_size = model.get_block_size()
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= block_size else idx[:, -block_size:]
            logits, _ = model(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, top_k)
                logits[logits < v[:, [-1]]] = -float('Inf')
            probs = F.softmax(logits, dim=-1)
            if do_sample:
                idx_next = torch.multinomial(probs, num_samples=1)
            else:
                _, idx_next = torch.topk(probs, k=1, dim=-1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx

    @torch.inference_mode()
    def evaluate(model, dataset, batch_size=50, max_batches=None):
        model.eval()
        loader = DataLoader(dataset, shuffle=True, batch_size=batch_size, num_workers=0)
        losses = []
        for i, batch in enumerate(loader):
            batch = [t.to('cpu') for t in batch]
            X, Y = batch
            logits, loss = model(X, Y)
            losses.append(loss.item())
            if max_batches is not None and i >= max_batches:
                break
        mean_loss = torch.tensor(losses).mean().item()
        model.train()
        return mean_loss

    class CharDataset(Dataset):
        def __init__(self, words, chars, max_word_length):
            self.words = words
            self.chars = chars
            self.max_word_length = max_word_length
            self.stoi = {ch: i + 1 for i, ch in enumerate(chars)}
            self.itos = {i: s for s, i in self.stoi.items()}

        def __len__(self):
            return len(self.words)

        def contains(self, word):
            return word in self.words

        def get_vocab_size(self):
            return len(self.chars) + 1

        def get_output_length(self):
            return self.max_word_length + 1

        def encode(self, word):
            ix = torch.tensor([self.stoi[w] for w in word], dtype=torch.long)
            return ix

        def decode(self, ix):
            word = ''.join(self.itos[i] for i in ix)
            return word

        def __getitem__(self, idx):
            word = self.words[idx]
            ix = self.encode(word)
            x = torch.zeros(self.max_word_length + 1, dtype=torch.long)
            y = torch.zeros(self.max_word_length + 1, dtype=torch.long)
            x[1:1 + len(ix)] = ix
            y[:len(ix)] = ix
            y[len(ix) + 1:] = -1
            return x, y

    def create_datasets(words):
        words = [w.strip() for w in words]
        words = [w for w in words if w]
        chars = sorted(list(set(''.join(words))))
        max_word_length = max(len(w) for w in words)
        test_set_size = min(1000, int(len(words) * 0.1))
        rp = torch.randperm(len(words)).tolist()
        train_words = [words[i] for i in rp[:-test_set_size]]
        test_words = [words[i] for i in rp[-test_set_size:]]
        return (CharDataset(train_words, chars, max_word_length),
                CharDataset(test_words, chars, max_word_length))

    class InfiniteDataLoader:
        def __init__(self, dataset, **kwargs):
            train_sampler = torch.utils.data.RandomSampler(dataset, replacement=True,
                                                           num_samples=int(1e10))
            self.train_loader = DataLoader(dataset, sampler=train_sampler, **kwargs)
            self.data_iter = iter(self.train_loader)

        def next(self):
            try:
                batch = next(self.data_iter)
            except StopIteration:
                self.data_iter = iter(self.train_loader)
                batch = next(self.data_iter)
            return batch

    return SimpleNamespace(**{k: v for k, v in locals().items() if not k.startswith('_')})


# ---------------------------------------------------------------- helpers

def as_np(t):
    if isinstance(t, _torch.Tensor):
        return t.detach().numpy()
    return np.asarray(t.detach().numpy() if hasattr(t, "detach") else t)


def close(a, b, rtol, atol=0.0):
    a, b = as_np(a), as_np(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def copy_weights(tm, rm):
    """Torch's state_dict into the retrograd model, as NumPy arrays."""
    res = rm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    assert not res.missing_keys and not res.unexpected_keys


def check_grads(tm, rm, rtol, atol=0.0):
    tn = dict(tm.named_parameters())
    rn = dict(rm.named_parameters())
    assert list(tn) == list(rn)
    for name, p in tn.items():
        assert rn[name].grad is not None, name
        np.testing.assert_allclose(as_np(rn[name].grad), as_np(p.grad), rtol=rtol, atol=atol,
                                   err_msg=name)


def tokens(b, t, vocab, seed=0):
    return np.random.default_rng(seed).integers(0, vocab, size=(b, t)).astype(np.int64)


F64 = dict(rtol=1e-6, atol=1e-10)
F32 = dict(rtol=2e-4, atol=2e-6)


# ---------------------------------------------------------------- nanoGPT

def build_nanogpt(bias=True, flash=None, double=True, **over):
    cfg = dict(block_size=8, vocab_size=11, n_layer=2, n_head=2, n_embd=8, dropout=0.0,
               bias=bias)
    cfg.update(over)
    _torch.manual_seed(0)
    T, R = nanogpt(_torch, flash), nanogpt(rg, flash)
    tm, rm = T.GPT(T.GPTConfig(**cfg)), R.GPT(R.GPTConfig(**cfg))
    if double:
        tm, rm = tm.double(), rm.double()
    copy_weights(tm, rm)
    return tm, rm


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("flash", [True, False])
def test_nanogpt_forward_backward_adamw(bias, flash):
    tm, rm = build_nanogpt(bias=bias, flash=flash)
    assert rm.get_num_params() == tm.get_num_params()
    assert rm.get_num_params(False) == tm.get_num_params(False)
    assert rm.transformer.wte.weight is rm.lm_head.weight
    x, y = tokens(3, 8, 11), tokens(3, 8, 11, seed=1)
    y[0, -2:] = -1  # ignore_index
    topt = tm.configure_optimizers(0.1, 1e-2, (0.9, 0.95), 'cpu')
    ropt = rm.configure_optimizers(0.1, 1e-2, (0.9, 0.95), 'cpu')
    assert [len(g['params']) for g in ropt.param_groups] == \
        [len(g['params']) for g in topt.param_groups]
    for step in range(3):
        tl, tloss = tm(_torch.from_numpy(x), _torch.from_numpy(y))
        rl, rloss = rm(rg.from_numpy(x), rg.from_numpy(y))
        close(rl, tl, **F64)
        close(rloss, tloss, **F64)
        assert rl.dtype == rg.float64
        tloss.backward()
        rloss.backward()
        check_grads(tm, rm, **F64)
        topt.step()
        ropt.step()
        topt.zero_grad(set_to_none=True)
        ropt.zero_grad(set_to_none=True)
        assert all(p.grad is None for p in rm.parameters())
    for (n, tp), rp in zip(tm.named_parameters(), rm.parameters()):
        close(rp, tp, **F64)
    # inference path: lm_head only on the last position (list index keeps the time dim)
    tl, tloss = tm(_torch.from_numpy(x))
    rl, rloss = rm(rg.from_numpy(x))
    assert rloss is None and tuple(rl.shape) == (3, 1, 11)
    close(rl, tl, **F64)


def test_nanogpt_float32_and_dropout_train_mode():
    tm, rm = build_nanogpt(double=False)
    x, y = tokens(2, 8, 11), tokens(2, 8, 11, seed=1)
    tl, tloss = tm(_torch.from_numpy(x), _torch.from_numpy(y))
    rl, rloss = rm(rg.from_numpy(x), rg.from_numpy(y))
    assert rl.dtype == rg.float32 and rloss.dtype == rg.float32
    close(rl, tl, **F32)
    tloss.backward()
    rloss.backward()
    check_grads(tm, rm, rtol=1e-3, atol=1e-5)
    # with dropout both attention paths run in train mode and differ from eval mode
    for flash in (True, False):
        _, rm = build_nanogpt(flash=flash, dropout=0.5)
        rm.train()
        rl, rloss = rm(rg.from_numpy(x), rg.from_numpy(y))
        rloss.backward()
        rm.eval()
        el, _ = rm(rg.from_numpy(x), rg.from_numpy(y))
        assert not np.allclose(rl.detach().numpy(), el.detach().numpy())


@pytest.mark.parametrize("flash", [True, False])
def test_nanogpt_init_and_crop_block_size(flash):
    rg.manual_seed(0)
    R = nanogpt(rg, flash=flash)
    rm = R.GPT(R.GPTConfig(block_size=16, vocab_size=11, n_layer=2, n_head=2, n_embd=8))
    for name, p in rm.named_parameters():
        if name.endswith('.bias'):
            assert np.all(p.detach().numpy() == 0), name
    ln = rm.transformer.ln_f
    assert np.all(ln.weight.detach().numpy() == 1)
    rm.crop_block_size(8)
    tm, rm2 = build_nanogpt(flash=flash, block_size=16)
    tm.crop_block_size(8)
    rm2.crop_block_size(8)
    for m in (rm, rm2):
        assert tuple(m.transformer.wpe.weight.shape) == (8, 8)
        assert isinstance(m.transformer.wpe.weight, rg.nn.Parameter)
        assert hasattr(m.transformer.h[0].attn, 'bias') == (not flash)
        if not flash:
            assert tuple(m.transformer.h[0].attn.bias.shape) == (1, 1, 8, 8)
        assert list(m.state_dict()) == list(tm.state_dict())
        assert m.get_num_params() == tm.get_num_params()
    x = tokens(2, 8, 11)
    logits, _ = rm(rg.from_numpy(x))
    assert tuple(logits.shape) == (2, 1, 11)
    close(rm2(rg.from_numpy(x))[0], tm(_torch.from_numpy(x))[0], **F64)
    assert rm.estimate_mfu(4, 0.5) == pytest.approx(tm.estimate_mfu(4, 0.5))


def test_nanogpt_configure_optimizers_fused_signature():
    assert ('fused' in inspect.signature(rg.optim.AdamW).parameters) == \
        ('fused' in inspect.signature(_torch.optim.AdamW).parameters)
    _, rm = build_nanogpt()
    opt = rm.configure_optimizers(0.1, 1e-3, (0.9, 0.95), 'cuda')  # asks for fused=True
    assert [g['weight_decay'] for g in opt.param_groups] == [0.1, 0.0]


@pytest.mark.parametrize("flash", [True, False])
def test_nanogpt_generate(flash):
    tm, rm = build_nanogpt(flash=flash)
    tm.eval()
    rm.eval()
    x = tokens(2, 3, 11)
    # top_k=1 makes sampling deterministic: it must equal torch's tokens
    tout = tm.generate(_torch.from_numpy(x), 7, temperature=0.8, top_k=1)
    rout = rm.generate(rg.from_numpy(x), 7, temperature=0.8, top_k=1)
    assert rout.dtype == rg.int64 and tuple(rout.shape) == (2, 10)
    np.testing.assert_array_equal(rout.numpy(), tout.numpy())
    # crop to block_size once the context grows past it
    rg.manual_seed(5)
    a = rm.generate(rg.from_numpy(x), 9, temperature=1.3, top_k=3)
    rg.manual_seed(5)
    b = rm.generate(rg.from_numpy(x), 9, temperature=1.3, top_k=3)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert tuple(a.shape) == (2, 12) and a.dtype == rg.int64 and not a.requires_grad
    np.testing.assert_array_equal(a.numpy()[:, :3], x)
    for s in range(3, 12):  # each sampled token is among the top 3 of its step's logits
        ctx = a[:, max(0, s - 8):s]
        logits, _ = rm(ctx)
        top3 = np.argsort(-logits.detach().numpy()[:, -1, :], axis=-1)[:, :3]
        assert all(a.numpy()[i, s] in top3[i] for i in range(2))


def write_tokens(path, n, vocab, seed):
    data = np.random.default_rng(seed).integers(0, vocab, size=n).astype(np.uint16)
    data.tofile(path)


def nanogpt_train(torch, model, data_dir, steps, block_size=8, batch_size=4, state=None,
                  ckpt=None, save=None):
    """train.py's loop: get_batch from np.memmap, cosine lr writing param_group['lr'],
    no-op GradScaler, nullcontext on cpu, clip_grad_norm_, zero_grad(set_to_none=True),
    checkpoint save / resume. Batch indices come from torch so both sides see the same
    data."""
    device, device_type = 'cpu', 'cpu'
    ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16,
               'float16': torch.float16}['float32']
    ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type,
                                                                      dtype=ptdtype)
    gen = _torch.Generator().manual_seed(1234)

    def get_batch(split):
        data = np.memmap(os.path.join(data_dir, f'{split}.bin'), dtype=np.uint16, mode='r')
        ix = _torch.randint(len(data) - block_size, (batch_size,), generator=gen).tolist()
        x = torch.stack([torch.from_numpy((data[i:i + block_size]).astype(np.int64))
                         for i in ix])
        y = torch.stack([torch.from_numpy((data[i + 1:i + 1 + block_size]).astype(np.int64))
                         for i in ix])
        x, y = x.to(device), y.to(device)
        return x, y

    learning_rate, min_lr, warmup_iters, lr_decay_iters = 6e-3, 6e-4, 2, 6

    def get_lr(it):
        if it < warmup_iters:
            return learning_rate * (it + 1) / (warmup_iters + 1)
        if it > lr_decay_iters:
            return min_lr
        decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
        assert 0 <= decay_ratio <= 1
        coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
        return min_lr + coeff * (learning_rate - min_lr)

    iter_num = 0
    if ckpt is not None:
        checkpoint = torch.load(ckpt, map_location=device)
        state_dict = checkpoint['model']
        unwanted_prefix = '_orig_mod.'
        for k, v in list(state_dict.items()):
            if k.startswith(unwanted_prefix):
                state_dict[k[len(unwanted_prefix):]] = state_dict.pop(k)
        model.load_state_dict(state_dict)
        iter_num = checkpoint['iter_num']
        gen.manual_seed(1234 + iter_num)
    dtype = 'float32'
    scaler = torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))
    optimizer = model.configure_optimizers(0.1, learning_rate, (0.9, 0.95), device_type)
    if ckpt is not None:
        optimizer.load_state_dict(checkpoint['optimizer'])
    X, Y = get_batch('train')
    losses, norms = [], []
    gradient_accumulation_steps = 2
    for _ in range(steps):
        lr = get_lr(iter_num)
        for param_group in optimizer.param_groups:
            param_group['lr'] = lr
        for micro_step in range(gradient_accumulation_steps):
            with ctx:
                logits, loss = model(X, Y)
                loss = loss / gradient_accumulation_steps
            X, Y = get_batch('train')
            scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)))
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item() * gradient_accumulation_steps)
        iter_num += 1
    if save is not None:
        with torch.no_grad():
            model.eval()
            vl = torch.zeros(2)
            for k in range(2):
                Xv, Yv = get_batch('val')
                with ctx:
                    _, vloss = model(Xv, Yv)
                vl[k] = vloss.item()
            model.train()
        checkpoint = {
            'model': model.state_dict(),
            'optimizer': optimizer.state_dict(),
            'model_args': dict(n_layer=2, n_head=2, n_embd=8, block_size=block_size, bias=True,
                               vocab_size=11, dropout=0.0),
            'iter_num': iter_num,
            'best_val_loss': vl.mean(),
            'config': {'learning_rate': learning_rate, 'dataset': 'tiny', 'compile': False},
        }
        torch.save(checkpoint, save)
    return losses, norms


def test_nanogpt_train_loop_and_resume(tmp_path):
    write_tokens(tmp_path / 'train.bin', 200, 11, 0)
    write_tokens(tmp_path / 'val.bin', 60, 11, 1)
    tm, rm = build_nanogpt()
    tpath, rpath = str(tmp_path / 't.pt'), str(tmp_path / 'r.pt')
    tl, tn = nanogpt_train(_torch, tm, tmp_path, 4, save=tpath)
    rl, rn = nanogpt_train(rg, rm, tmp_path, 4, save=rpath)
    np.testing.assert_allclose(rl, tl, rtol=1e-6)
    np.testing.assert_allclose(rn, tn, rtol=1e-6)
    for (n, tp), rp in zip(tm.named_parameters(), rm.parameters()):
        close(rp, tp, **F64)
    ck = rg.load(rpath)
    assert ck['iter_num'] == 4 and ck['config']['dataset'] == 'tiny'
    assert ck['model_args']['bias'] is True
    tck = _torch.load(tpath, weights_only=False)
    assert float(ck['best_val_loss']) == pytest.approx(float(tck['best_val_loss']), rel=1e-6)
    assert list(ck['model']) == list(tck['model'])
    # resume into fresh models and continue: same numbers as torch resuming
    tm2, rm2 = build_nanogpt()
    tl2, _ = nanogpt_train(_torch, tm2, tmp_path, 2, ckpt=tpath)
    rl2, _ = nanogpt_train(rg, rm2, tmp_path, 2, ckpt=rpath)
    np.testing.assert_allclose(rl2, tl2, rtol=1e-6)
    for (n, tp), rp in zip(tm2.named_parameters(), rm2.parameters()):
        close(rp, tp, **F64)
    # a checkpoint whose keys carry torch.compile's prefix loads the same way
    ck['model'] = {'_orig_mod.' + k: v for k, v in ck['model'].items()}
    rg.save(ck, rpath)
    _, rm3 = build_nanogpt()
    rl3, _ = nanogpt_train(rg, rm3, tmp_path, 2, ckpt=rpath)
    np.testing.assert_allclose(rl3, rl2, rtol=1e-12)
    # strict=False reports the missing and unexpected names as torch does
    sd = dict(rm3.state_dict())
    sd['extra'] = sd.pop('lm_head.weight')
    tsd = dict(tm2.state_dict())
    tsd['extra'] = tsd.pop('lm_head.weight')
    rres, tres = rm3.load_state_dict(sd, strict=False), tm2.load_state_dict(tsd, strict=False)
    assert rres.missing_keys == tres.missing_keys
    assert rres.unexpected_keys == tres.unexpected_keys
    with pytest.raises(RuntimeError):
        rm3.load_state_dict(sd)


# ---------------------------------------------------------------- minGPT

def build_mingpt(double=True, pdrop=0.0):
    cfgs = []
    for _ in range(2):
        C = mingpt(_torch).GPT.get_default_config()
        C.model_type = None
        C.n_layer, C.n_head, C.n_embd = 2, 2, 8
        C.vocab_size, C.block_size = 11, 8
        C.embd_pdrop = C.resid_pdrop = C.attn_pdrop = pdrop
        cfgs.append(C)
    _torch.manual_seed(0)
    tm, rm = mingpt(_torch).GPT(cfgs[0]), mingpt(rg).GPT(cfgs[1])
    if double:
        tm, rm = tm.double(), rm.double()
    copy_weights(tm, rm)
    return tm, rm


def test_mingpt_forward_backward_adamw():
    tm, rm = build_mingpt()
    train_config = SimpleNamespace(weight_decay=0.1, learning_rate=3e-3, betas=(0.9, 0.95))
    topt, ropt = tm.configure_optimizers(train_config), rm.configure_optimizers(train_config)
    assert [len(g['params']) for g in ropt.param_groups] == \
        [len(g['params']) for g in topt.param_groups]
    x, y = tokens(3, 8, 11), tokens(3, 8, 11, seed=1)
    y[1, :3] = -1
    for _ in range(3):
        tl, tloss = tm(_torch.from_numpy(x), _torch.from_numpy(y))
        rl, rloss = rm(rg.from_numpy(x), rg.from_numpy(y))
        close(rl, tl, **F64)
        close(rloss, tloss, **F64)
        tm.zero_grad(set_to_none=True)
        rm.zero_grad(set_to_none=True)
        tloss.backward()
        rloss.backward()
        check_grads(tm, rm, **F64)
        _torch.nn.utils.clip_grad_norm_(tm.parameters(), 1.0)
        rg.nn.utils.clip_grad_norm_(rm.parameters(), 1.0)
        topt.step()
        ropt.step()
    for (n, tp), rp in zip(tm.named_parameters(), rm.parameters()):
        close(rp, tp, **F64)


def test_mingpt_generate_and_checkpoint(tmp_path):
    tm, rm = build_mingpt(double=False)
    tm.eval()
    rm.eval()
    x = tokens(2, 2, 11)
    tout = tm.generate(_torch.from_numpy(x), 8, do_sample=False)
    rout = rm.generate(rg.from_numpy(x), 8, do_sample=False)
    assert rout.dtype == rg.int64
    np.testing.assert_array_equal(rout.numpy(), tout.numpy())
    rg.manual_seed(3)
    a = rm.generate(rg.from_numpy(x), 8, temperature=2.0, do_sample=True, top_k=2)
    rg.manual_seed(3)
    b = rm.generate(rg.from_numpy(x), 8, temperature=2.0, do_sample=True, top_k=2)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert tuple(a.shape) == (2, 10)
    path = str(tmp_path / 'model.pt')
    rg.save(rm.state_dict(), path)
    _, rm2 = build_mingpt(double=False)
    with rg.no_grad():
        for p in rm2.parameters():
            p.zero_()
    rm2.load_state_dict(rg.load(path))
    rm2.eval()
    close(rm2(rg.from_numpy(x))[0], rm(rg.from_numpy(x))[0], rtol=0, atol=0)


def test_mingpt_dropout_train_mode_runs():
    _, rm = build_mingpt(pdrop=0.1)
    rm.train()
    x, y = tokens(2, 8, 11), tokens(2, 8, 11, seed=1)
    _, loss = rm(rg.from_numpy(x), rg.from_numpy(y))
    loss.backward()
    assert all(p.grad is not None for p in rm.parameters())


# ---------------------------------------------------------------- makemore

WORDS = ["emma", "olivia", "ava", "isabella", "sophia", "mia", "amelia", "harper", "evelyn",
         "abigail", "emily", "ella", "elizabeth", "camila", "luna", "sofia", "avery", "mila",
         "aria", "scarlett", "penelope", "layla", "chloe", "victoria"]


@pytest.mark.parametrize("kind", ["transformer", "bigram", "mlp", "rnn", "gru", "bow"])
def test_makemore_models(kind):
    T, R = makemore(_torch), makemore(rg)
    cfg = dict(vocab_size=9, block_size=6, n_layer=2, n_head=2, n_embd=8, n_embd2=12)
    ctor = {'transformer': 'Transformer', 'bigram': 'Bigram', 'mlp': 'MLP', 'bow': 'BoW',
            'rnn': 'RNN', 'gru': 'RNN'}[kind]
    args = (kind,) if kind in ('rnn', 'gru') else ()
    _torch.manual_seed(0)
    tm = getattr(T, ctor)(T.ModelConfig(**cfg), *args)
    rm = getattr(R, ctor)(R.ModelConfig(**cfg), *args)
    # CausalBoW makes a float32 torch.zeros and matmuls it with x: float32 only (torch and
    # retrograd both refuse float32 @ float64)
    tol, gtol = (F32, dict(rtol=1e-3, atol=1e-5)) if kind == 'bow' else (F64, F64)
    if kind != 'bow':
        tm, rm = tm.double(), rm.double()
    if kind == 'bigram':  # zeros at init: make it interesting
        with _torch.no_grad():
            tm.logits.normal_()
    copy_weights(tm, rm)
    assert sum(p.numel() for p in rm.parameters()) == sum(p.numel() for p in tm.parameters())
    x, y = tokens(3, 6, 9), tokens(3, 6, 9, seed=1)
    y[2, 4:] = -1
    topt = _torch.optim.AdamW(tm.parameters(), lr=5e-3, weight_decay=0.01, betas=(0.9, 0.99),
                              eps=1e-8)
    ropt = rg.optim.AdamW(rm.parameters(), lr=5e-3, weight_decay=0.01, betas=(0.9, 0.99),
                          eps=1e-8)
    rx = rg.from_numpy(x)
    for _ in range(3):
        tl, tloss = tm(_torch.from_numpy(x), _torch.from_numpy(y))
        rl, rloss = rm(rx, rg.from_numpy(y))
        close(rl, tl, **tol)
        close(rloss, tloss, **tol)
        tm.zero_grad(set_to_none=True)
        rm.zero_grad(set_to_none=True)
        tloss.backward()
        rloss.backward()
        check_grads(tm, rm, **gtol)
        topt.step()
        ropt.step()
    np.testing.assert_array_equal(rx.numpy(), x)  # MLP's in-place write hit a rolled copy
    # greedy generation equals torch's; sampling is reproducible and within top_k
    tm.eval()
    rm.eval()
    X_init = np.zeros((3, 1), dtype=np.int64)
    tg = T.generate(tm, _torch.zeros(3, 1, dtype=_torch.long), 5, do_sample=False)
    rg_ = R.generate(rm, rg.zeros(3, 1, dtype=rg.long).to('cpu'), 5, do_sample=False)
    np.testing.assert_array_equal(rg_.numpy(), tg.numpy())
    rg.manual_seed(1)
    a = R.generate(rm, rg.from_numpy(X_init), 5, top_k=3, do_sample=True).to('cpu')
    rg.manual_seed(1)
    b = R.generate(rm, rg.from_numpy(X_init), 5, top_k=3, do_sample=True).to('cpu')
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert a[0, 1:].tolist() == b[0, 1:].tolist() and isinstance(a[0, 1:].tolist()[0], int)


def test_makemore_dataset_loader_and_evaluate(tmp_path):
    T, R = makemore(_torch), makemore(rg)
    rg.manual_seed(0)
    rtrain, rtest = R.create_datasets(WORDS)
    assert len(rtrain) + len(rtest) == len(WORDS) and len(rtest) == 2
    ttrain = T.CharDataset(rtrain.words, rtrain.chars, rtrain.max_word_length)
    for i in range(len(rtrain)):
        rx, ry = rtrain[i]
        tx, ty = ttrain[i]
        assert rx.dtype == rg.int64 and ry.dtype == rg.int64
        np.testing.assert_array_equal(rx.numpy(), tx.numpy())
        np.testing.assert_array_equal(ry.numpy(), ty.numpy())
    assert rtrain.decode(rtrain.encode('emma').tolist()) == 'emma'
    seen = []
    for workers in (0, 4):  # makemore's default is --num-workers 4
        rg.manual_seed(0)
        loader = R.InfiniteDataLoader(rtrain, batch_size=5, pin_memory=True,
                                      num_workers=workers)
        for _ in range(3):
            batch = loader.next()
            batch = [t.to('cpu') for t in batch]
            X, Y = batch
            assert tuple(X.shape) == (5, rtrain.max_word_length + 1) and X.dtype == rg.int64
            seen.append(X.numpy())
    for a, b in zip(seen[:3], seen[3:]):
        np.testing.assert_array_equal(a, b)
    cfg = R.ModelConfig(vocab_size=rtrain.get_vocab_size(), block_size=rtrain.get_output_length(),
                        n_layer=1, n_head=2, n_embd=8, n_embd2=8)
    rm = R.Transformer(cfg)
    rm.train()
    loss = R.evaluate(rm, rtest, batch_size=100, max_batches=10)
    assert isinstance(loss, float) and rm.training
    tcfg = T.ModelConfig(**vars(cfg))
    tm = T.Transformer(tcfg)
    copy_weights(tm, rm)
    ttest = T.CharDataset(rtest.words, rtest.chars, rtest.max_word_length)
    tloss = T.evaluate(tm, ttest, batch_size=100, max_batches=10)
    loss = R.evaluate(rm, rtest, batch_size=100, max_batches=10)
    assert loss == pytest.approx(tloss, rel=1e-5)
    path = str(tmp_path / 'model.pt')
    rg.save(rm.state_dict(), path)
    rm2 = R.Transformer(cfg)
    rm2.load_state_dict(rg.load(os.path.join(str(tmp_path), 'model.pt')))
    # evaluate shuffles: the batch's order, so the mean's rounding, may differ
    assert R.evaluate(rm2, rtest, batch_size=100) == pytest.approx(loss, rel=1e-6)


# ---------------------------------------------------------------- the pieces the ports needed

def test_optimizer_implementation_flags_as_torch():
    for name in ("SGD", "Adam", "AdamW"):
        for flag in ("foreach", "differentiable", "fused"):
            assert flag in inspect.signature(getattr(rg.optim, name)).parameters
    w = np.random.default_rng(0).standard_normal((3, 2))
    tp, rp = _torch.nn.Parameter(_torch.tensor(w)), rg.nn.Parameter(rg.tensor(w))
    topt = _torch.optim.AdamW([tp], lr=0.1, fused=True)
    ropt = rg.optim.AdamW([rp], lr=0.1, fused=True)
    for _ in range(2):
        (tp ** 2).sum().backward()
        (rp ** 2).sum().backward()
        topt.step()
        ropt.step()
    close(rp, tp, **F64)
    for name in ("SGD", "Adam", "AdamW"):
        tg = getattr(_torch.optim, name)([tp], lr=0.1).param_groups[0]
        rg_ = getattr(rg.optim, name)([rp], lr=0.1).param_groups[0]
        for k in ("foreach", "capturable", "differentiable", "fused"):
            assert rg_.get(k, "absent") == tg.get(k, "absent"), (name, k)
        with pytest.raises(RuntimeError, match="cannot be `True` together"):
            getattr(_torch.optim, name)([tp], lr=0.1, fused=True, foreach=True)
        with pytest.raises(RuntimeError, match="cannot be `True` together"):
            getattr(rg.optim, name)([rp], lr=0.1, fused=True, foreach=True)
        with pytest.raises(NotImplementedError, match="differentiable"):
            getattr(rg.optim, name)([rp], lr=0.1, differentiable=True)


def test_nanogpt_get_batch_as_written(tmp_path):
    """train.py's get_batch on retrograd alone: torch.randint indices iterated as 0-d
    tensors slicing a np.memmap, from_numpy, stack, pin_memory().to(non_blocking=True)."""
    write_tokens(tmp_path / 'train.bin', 100, 11, 0)
    torch, block_size, batch_size, device = rg, 8, 4, 'cpu'
    dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() \
        else 'float16'
    assert dtype == 'float16' and torch.cuda.is_bf16_supported() == _torch.cuda.is_bf16_supported()

    def get_batch(split):
        data = np.memmap(os.path.join(tmp_path, f'{split}.bin'), dtype=np.uint16, mode='r')
        ix = torch.randint(len(data) - block_size, (batch_size,))
        x = torch.stack([torch.from_numpy((data[i:i + block_size]).astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy((data[i + 1:i + 1 + block_size]).astype(np.int64))
                         for i in ix])
        x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device,
                                                                              non_blocking=True)
        return x, y, ix

    torch.manual_seed(1337)
    x, y, ix = get_batch('train')
    torch.manual_seed(1337)
    x2, _, _ = get_batch('train')
    data = np.fromfile(tmp_path / 'train.bin', dtype=np.uint16)
    assert x.dtype == rg.int64 and tuple(x.shape) == (4, 8) and ix.dtype == rg.int64
    np.testing.assert_array_equal(x.numpy(), x2.numpy())
    for row, i in enumerate(ix.tolist()):
        np.testing.assert_array_equal(x.numpy()[row], data[i:i + 8])
        np.testing.assert_array_equal(y.numpy()[row], data[i + 1:i + 9])
    losses = torch.zeros(3)
    for k in range(3):
        losses[k] = float(k)
    out = {'val': losses.mean()}
    assert f"{out['val']:.4f}" == f"{_torch.tensor([0.0, 1.0, 2.0]).mean():.4f}"
    assert bool(out['val'] < 1e9)


def test_bfloat16_name_exists_and_refuses_use():
    ptdtype = {'float32': rg.float32, 'bfloat16': rg.bfloat16, 'float16': rg.float16}['float32']
    assert ptdtype == rg.float32 and rg.bfloat16.itemsize == _torch.bfloat16.itemsize
    with pytest.raises(TypeError, match="bfloat16"):
        rg.zeros(2, dtype=rg.bfloat16)
    with pytest.raises(TypeError, match="bfloat16"):
        rg.ones(2).to(dtype=rg.bfloat16)
    # positionally, as a method, and for a module: the same message (not "a device")
    for use in (lambda: rg.ones(2).to(rg.bfloat16), lambda: rg.ones(2).bfloat16(),
                lambda: rg.ones(2).to("cpu", rg.bfloat16),
                lambda: rg.nn.Linear(2, 2).to(rg.bfloat16)):
        with pytest.raises(TypeError, match="NumPy has no bfloat16"):
            use()


def test_autocast_disables_itself_with_torchs_warning():
    with rg.amp.autocast(device_type='cpu', enabled=False):
        x = rg.ones(2) * 2
    assert x.dtype == rg.float32
    assert rg.autocast is rg.amp.autocast
    assert rg.is_autocast_enabled() == _torch.is_autocast_enabled() is False
    assert rg.is_autocast_enabled('cpu') == _torch.is_autocast_enabled('cpu') is False
    # torch, asked for a dtype it cannot autocast to on CPU, warns and disables itself;
    # retrograd can autocast to none, so it does the same for every dtype
    with pytest.warns(UserWarning, match="target dtype is not supported. Disabling autocast"):
        with _torch.autocast(device_type='cpu', dtype=_torch.float64):
            ref = _torch.ones(2, 2) @ _torch.ones(2, 2)
    with pytest.warns(UserWarning, match="target dtype is not supported. Disabling autocast"):
        with rg.autocast(device_type='cpu', dtype=rg.bfloat16):
            out = rg.ones(2, 2) @ rg.ones(2, 2)
            assert not rg.is_autocast_enabled('cpu')  # torch's, disabled, says the same
    assert out.dtype == rg.float32 and ref.dtype == _torch.float32
    close(out, ref, rtol=0)

    @rg.amp.autocast(device_type='cpu', enabled=False)
    def f(x):
        return x * 2
    assert f(rg.ones(1)).dtype == rg.float32
    if not rg.cuda.is_available() and not _torch.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available"):
            _torch.autocast(device_type='cuda', dtype=_torch.float16)
        with pytest.warns(UserWarning, match="CUDA is not available"):
            ctx = rg.amp.autocast(device_type='cuda', dtype=rg.float16)
        with ctx:
            assert (rg.ones(2) * 2).dtype == rg.float32


def scaler_run(torch, scaler, grads_seq):
    """A loop of scale -> backward -> unscale_ -> step -> update with chosen gradients (an inf
    one forces a skipped step); returns the parameter, scales and state dicts seen."""
    p = torch.nn.Parameter(torch.tensor(np.array([1.0, -2.0, 0.5], dtype=np.float32)))
    opt = torch.optim.SGD([p], lr=0.1)
    out = []
    for g in grads_seq:
        loss = (p * torch.tensor(np.asarray(g, dtype=np.float32))).sum()
        scaled = scaler.scale(loss)
        out.append((tuple(scaled.shape), scaled.dtype == torch.float32))
        scaled.backward()
        scaler.unscale_(opt)
        out.append(p.grad.detach().numpy().copy())
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        out.append(scaler.get_scale())
        out.append(scaler.state_dict())
    return p.detach().numpy(), out


def test_grad_scaler_as_torch():
    seq = [[1.0, 2.0, 3.0], [np.inf, 1.0, 1.0], [0.5, 0.5, 0.5], [1.0, 1.0, 1.0],
           [2.0, 0.0, 1.0]]
    kw = dict(init_scale=2.0 ** 10, growth_interval=2)
    tp, tout = scaler_run(_torch, _torch.amp.GradScaler('cpu', **kw), seq)
    rp, rout = scaler_run(rg, rg.amp.GradScaler('cpu', **kw), seq)
    np.testing.assert_array_equal(rp, tp)
    for a, b in zip(rout, tout):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b
    # disabled (the nanoGPT spelling): a pass-through
    tp, tout = scaler_run(_torch, _torch.amp.GradScaler('cpu', enabled=False), seq[:1])
    rp, rout = scaler_run(rg, rg.cuda.amp.GradScaler(enabled=False), seq[:1])
    np.testing.assert_array_equal(rp, tp)
    assert rout[-2:] == tout[-2:] == [1.0, {}]
    s = rg.amp.GradScaler('cpu')
    opt = rg.optim.SGD([rg.nn.Parameter(rg.ones(1))], lr=0.1)
    s.scale(rg.ones(1, requires_grad=True).sum()).backward()
    s.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        s.unscale_(opt)
    with pytest.raises(RuntimeError, match="empty"):
        s.load_state_dict({})
    if not rg.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available"):
            assert not rg.cuda.amp.GradScaler().is_enabled()
    from retrograd.cuda.amp import GradScaler, autocast  # torch.cuda.amp's import spelling
    assert GradScaler is rg.cuda.amp.GradScaler and issubclass(GradScaler, rg.amp.GradScaler)
    assert issubclass(autocast, rg.amp.autocast)


def test_random_sampler_with_replacement_is_lazy():
    s = rg.utils.data.RandomSampler(range(7), replacement=True, num_samples=int(1e10))
    assert len(s) == int(1e10)
    it = iter(s)
    first = [next(it) for _ in range(100)]
    assert all(0 <= i < 7 for i in first)
    t = rg.utils.data.RandomSampler(range(7), replacement=True, num_samples=45)
    assert len(list(t)) == 45


def test_train_py_distributed_imports():
    """nanoGPT's train.py imports DDP and the process-group functions unconditionally and
    uses them only under torchrun; without a process group both libraries refuse alike."""
    from retrograd.distributed import destroy_process_group, init_process_group
    from retrograd.nn.parallel import DistributedDataParallel as DDP
    ddp = int(os.environ.get('RANK', -1)) != -1
    assert not ddp and rg.distributed.is_initialized() == _torch.distributed.is_initialized()
    with pytest.raises(ValueError, match="process group has not been initialized"):
        _torch.nn.parallel.DistributedDataParallel(_torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="process group has not been initialized"):
        DDP(rg.nn.Linear(2, 2))
    with pytest.raises(AssertionError):
        _torch.distributed.destroy_process_group()
    with pytest.raises(AssertionError):
        destroy_process_group()
    with pytest.raises(NotImplementedError, match="rg.distributed.init"):
        init_process_group(backend='nccl')


def test_collectives_without_a_process_group_refuse_as_torch():
    """Utility code (`reduce_tensor`, `get_rank() == 0`) calls the collectives; without a
    process group torch raises ValueError before touching the tensor, and so do we."""
    for T in (_torch, rg):
        d, x = T.distributed, T.ones(2)
        assert d.ReduceOp.SUM != d.ReduceOp.MAX
        calls = [(d.get_rank, ()), (d.get_world_size, ()), (d.broadcast, (x, 0)),
                 (d.all_reduce, (x, d.ReduceOp.SUM)), (d.all_gather, ([x, x], x)),
                 (d.reduce, (x, 0))]
        for fn, args in calls:
            with pytest.raises(ValueError, match="process group has not been initialized"):
                fn(*args)
        assert x.tolist() == [1.0, 1.0]


def test_topk_bad_k_raises_as_torch():
    """generate's torch.topk(logits, top_k) with top_k above the vocabulary: torch raises
    RuntimeError (minGPT and makemore do not clamp k as nanoGPT does)."""
    for T in (_torch, rg):
        with pytest.raises(RuntimeError, match="out of range"):
            T.topk(T.tensor([[1.0, 3.0, 2.0]]), 4)
        with pytest.raises(RuntimeError, match="out of range"):
            T.topk(T.tensor([1.0, 2.0]), -1)
        with pytest.raises(TypeError):
            T.topk(T.tensor([1.0, 2.0]), 1.5)
        with pytest.raises(TypeError):
            T.topk(T.tensor([1.0, 2.0]), True)


def test_amp_custom_fwd_bwd_without_autocast():
    """A custom Function decorated with amp.custom_fwd/custom_bwd runs as written when no
    autocast is active (always, in retrograd): value and gradient as torch's."""
    def make(T):
        class Square(T.autograd.Function):
            @staticmethod
            @T.amp.custom_fwd(device_type='cpu', cast_inputs=T.float16)
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @T.amp.custom_bwd(device_type='cpu')
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return 2 * x * g
        return Square

    w = np.array([1.5, -2.0], dtype=np.float32)
    tx, rx = _torch.tensor(w, requires_grad=True), rg.tensor(w, requires_grad=True)
    ty, ry = make(_torch).apply(tx), make(rg).apply(rx)
    assert ry.dtype == rg.float32 and ty.dtype == _torch.float32
    ty.sum().backward()
    ry.sum().backward()
    close(ry, ty, rtol=0)
    close(rx.grad, tx.grad, rtol=0)
    with pytest.raises(TypeError):
        rg.amp.custom_fwd(lambda x: x)

