#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_backend_ref's torch peer: a plain Qwen3-shaped transformer in torch.

The same shapes as the generated `small` checkpoints (passed as arguments
by bench/bench_backend_ref), random bf16 weights, the same work as the C
bench's measure(): a prompt of --prefill tokens in chunks of --chunk with
the last position's logits, then --decode greedy steps (one token each,
a KV cache, logits and argmax every step).  A throughput peer of the same
FLOPs, not a numerical reference: the weights are random, so its tokens
are not engy's.

Blocks: RMSNorm, q/k/v/o projections with grouped-query attention, per-head
q/k RMSNorm, rotary embeddings (rotate-half), causal softmax attention over
the cache, then a SwiGLU MLP, or for a MoE model a softmax router choosing
--top-k of --experts SwiGLU experts (weights renormalised over the chosen).

Protocol (so the C bench can interleave its runs with this one's): after
building and warming up it prints one line starting with "ready"; then for
every line "run" on stdin it prints "prefill <tok/s> decode <tok/s>".  With
--rounds N it runs N times on its own and prints the same lines.
--probe prints "torch <version> blas <name>" and exits (the bench's check
that torch imports and which BLAS its float32 matmuls use).
Bench-only: torch is never a dependency of engy.
"""
import argparse
import sys
import time

import torch
import torch.nn.functional as F

EPS = 1e-6


def rmsnorm(x, w):
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)
    return xf.to(x.dtype) * w


def rotate(x, cos, sin):
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Model:
    def __init__(self, a, dtype):
        g = torch.Generator().manual_seed(1)

        def w(*shape, scale=None):
            s = scale if scale is not None else shape[-1] ** -0.5
            return (torch.randn(*shape, generator=g) * s).to(dtype)

        H, hd = a.hidden, a.head_dim
        self.a, self.dtype = a, dtype
        self.embed = w(a.vocab, H, scale=1.0)
        self.lm_head = w(a.vocab, H)
        self.norm = torch.ones(H, dtype=dtype)
        self.layers = []
        for _ in range(a.layers):
            L = {
                "in_norm": torch.ones(H, dtype=dtype),
                "post_norm": torch.ones(H, dtype=dtype),
                "q": w(a.heads * hd, H),
                "k": w(a.kv * hd, H),
                "v": w(a.kv * hd, H),
                "o": w(H, a.heads * hd),
                "q_norm": torch.ones(hd, dtype=dtype),
                "k_norm": torch.ones(hd, dtype=dtype),
            }
            if a.experts:
                L["router"] = w(a.experts, H)
                L["gate"] = [w(a.moe_inter, H) for _ in range(a.experts)]
                L["up"] = [w(a.moe_inter, H) for _ in range(a.experts)]
                L["down"] = [w(H, a.moe_inter) for _ in range(a.experts)]
            else:
                L["gate"] = w(a.inter, H)
                L["up"] = w(a.inter, H)
                L["down"] = w(H, a.inter)
            self.layers.append(L)
        maxlen = a.prefill + a.decode + 1
        inv = 1.0 / (a.rope_theta ** (torch.arange(0, hd, 2).float() / hd))
        f = torch.outer(torch.arange(maxlen).float(), inv)
        f = torch.cat((f, f), dim=-1)
        self.cos, self.sin = f.cos().to(dtype), f.sin().to(dtype)
        self.maxlen = maxlen

    def new_cache(self):
        a = self.a
        return [(torch.zeros(a.kv, self.maxlen, a.head_dim, dtype=self.dtype),
                 torch.zeros(a.kv, self.maxlen, a.head_dim, dtype=self.dtype))
                for _ in range(a.layers)]

    def mlp(self, L, x):
        if not self.a.experts:
            return F.linear(F.silu(F.linear(x, L["gate"])) *
                            F.linear(x, L["up"]), L["down"])
        p = F.linear(x, L["router"]).float().softmax(-1)
        wt, ix = p.topk(self.a.top_k, dim=-1)
        wt = (wt / wt.sum(-1, keepdim=True)).to(x.dtype)
        out = torch.zeros_like(x)
        for e in ix.unique().tolist():
            rows, slot = (ix == e).nonzero(as_tuple=True)
            xe = x[rows]
            ye = F.linear(F.silu(F.linear(xe, L["gate"][e])) *
                          F.linear(xe, L["up"][e]), L["down"][e])
            out.index_add_(0, rows, ye * wt[rows, slot].unsqueeze(-1))
        return out

    def forward(self, toks, pos, cache):
        a, n = self.a, toks.shape[0]
        hd, grp = a.head_dim, a.heads // a.kv
        cos, sin = self.cos[pos:pos + n], self.sin[pos:pos + n]
        end = pos + n
        # causal mask over the cache: row i sees positions <= pos + i
        mask = (torch.arange(end).unsqueeze(0) >
                torch.arange(pos, end).unsqueeze(1))
        x = self.embed[toks]
        for L, (kc, vc) in zip(self.layers, cache):
            h = rmsnorm(x, L["in_norm"])
            q = F.linear(h, L["q"]).view(n, a.heads, hd).transpose(0, 1)
            k = F.linear(h, L["k"]).view(n, a.kv, hd).transpose(0, 1)
            v = F.linear(h, L["v"]).view(n, a.kv, hd).transpose(0, 1)
            q = rotate(rmsnorm(q, L["q_norm"]), cos, sin)
            k = rotate(rmsnorm(k, L["k_norm"]), cos, sin)
            kc[:, pos:end] = k
            vc[:, pos:end] = v
            q = q.reshape(a.kv, grp * n, hd)
            s = torch.bmm(q, kc[:, :end].transpose(1, 2)).float()
            s = s.view(a.kv, grp, n, end) * hd ** -0.5
            s = s.masked_fill(mask, float("-inf")).softmax(-1)
            o = torch.bmm(s.to(x.dtype).view(a.kv, grp * n, end), vc[:, :end])
            o = o.view(a.heads, n, hd).transpose(0, 1).reshape(n, a.heads * hd)
            x = x + F.linear(o, L["o"])
            x = x + self.mlp(L, rmsnorm(x, L["post_norm"]))
        return x

    def logits(self, x):
        return F.linear(rmsnorm(x, self.norm), self.lm_head)

    def measure(self, np_, nd):
        a, cache = self.a, self.new_cache()
        t = time.perf_counter()
        off = 0
        while off < np_:
            cnt = min(a.chunk, np_ - off)
            toks = torch.tensor([(i * 97) % 5000 % a.vocab
                                 for i in range(off, off + cnt)])
            h = self.forward(toks, off, cache)
            off += cnt
        tok = self.logits(h[-1:]).argmax(-1)
        pre = np_ / (time.perf_counter() - t)
        t = time.perf_counter()
        for k in range(nd):
            h = self.forward(tok, np_ + k, cache)
            tok = self.logits(h).argmax(-1)
        return pre, nd / (time.perf_counter() - t)


def mkldnn_bf16():
    """Does torch's bf16 matmul go to oneDNN here?  It needs AVX-512
    (bw, vl, dq); without it torch runs its generic bf16 gemm."""
    if not torch.backends.mkldnn.is_available():
        return "no (torch built without oneDNN)"
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        return "unknown"
    if not {"avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "no (no AVX-512 on this CPU: torch's generic bf16 gemm)"
    hw = [x for x in ("avx512_bf16", "amx_bf16") if x in flags]
    return "yes (%s)" % (", ".join(hw) if hw else "AVX-512, bf16 emulated")


def blas():
    """The BLAS torch's float32 matmuls go to: the library mapped in this
    process (Debian's torch links libblas.so.3, whichever provides it)."""
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if ".so" in line}
    except OSError:
        libs = set()
    for key in ("openblas", "mkl", "blis"):
        if any(key in lib for lib in libs):
            return key
    if any("libblas.so" in lib for lib in libs):
        return "reference"  # netlib's: correct, unoptimised
    cfg = torch.__config__.show()
    return "mkl" if "MKL" in cfg and "BLAS_INFO=mkl" in cfg else "builtin"


def main():
    p = argparse.ArgumentParser()
    for name, dflt in (("threads", 1), ("hidden", 512), ("layers", 6),
                       ("heads", 8), ("kv", 4), ("head-dim", 64),
                       ("inter", 1536), ("vocab", 6144), ("experts", 0),
                       ("top-k", 0), ("moe-inter", 0), ("prefill", 256),
                       ("chunk", 128), ("decode", 64), ("rounds", 0)):
        p.add_argument("--" + name, type=int, default=dflt)
    p.add_argument("--rope-theta", type=float, default=1e6)
    p.add_argument("--dtype", default="bf16", choices=("bf16", "f32"))
    p.add_argument("--probe", action="store_true",
                   help="print the torch version and its BLAS, then exit")
    a = p.parse_args()
    if a.probe:
        print("torch %s blas %s" % (torch.__version__, blas()))
        return
    torch.set_num_threads(a.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    with torch.inference_mode():
        m = Model(a, dtype)
        m.measure(16, 4)  # warm up: allocator, thread pool, kernels
        print("ready torch %s, %s, %d threads, BLAS %s, oneDNN bf16: %s" %
              (torch.__version__, a.dtype, torch.get_num_threads(), blas(),
               mkldnn_bf16()), flush=True)
        if a.rounds:
            for _ in range(a.rounds):
                print("prefill %.1f decode %.1f" %
                      m.measure(a.prefill, a.decode), flush=True)
            return
        for line in sys.stdin:
            if line.strip() != "run":
                break
            print("prefill %.1f decode %.1f" %
                  m.measure(a.prefill, a.decode), flush=True)


if __name__ == "__main__":
    main()
