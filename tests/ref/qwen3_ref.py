#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Independent float64 reference of the Qwen3 / Qwen3-MoE forward pass.

Reads a Hugging Face checkpoint directory itself (config.json, safetensors,
engy's INT4 and Qwen's block FP8 layouts; specs/checkpoints.md) with numpy
only, runs the whole sequence at once with a causal mask (no KV cache), and
compares the final hidden states (after the final norm) and logits that
`engyctl ref` dumped for the same ids.

usage:
  qwen3_ref.py check --checkpoint DIR --ids "ID ..." --hidden FILE
                     [--logits FILE] [--tol-hidden X] [--tol-logits Y]
                     [--greedy "ID ..."]
  qwen3_ref.py diff A.f32 B.f32 --hidden-size H [--rows N]
check: prints the errors and exits 1 when over tolerance.  The tolerances
are relative: max |engine - ref| / max |ref| over all rows.  --greedy gives
the generated ids: each must be the reference's argmax wherever the
reference's top-2 margin exceeds the logit tolerance.
diff: the relative difference of two hidden-state dumps (e.g. INT4 vs BF16).
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

DTYPES = {"F32": (4, "<f4"), "F16": (2, "<f2"), "F64": (8, "<f8"),
          "BF16": (2, "<u2"), "F8_E4M3": (1, "u1"), "U8": (1, "u1")}


def e4m3_table():
    t = np.zeros(256)
    for b in range(256):
        s, e, m = b >> 7, (b >> 3) & 15, b & 7
        if e == 15 and m == 7:
            v = np.nan
        elif e == 0:
            v = m / 8.0 * 2.0 ** -6
        else:
            v = (1 + m / 8.0) * 2.0 ** (e - 7)
        t[b] = -v if s else v
    return t


E4M3 = e4m3_table()


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt = info["dtype"]
        size, npdt = DTYPES[dt]
        b, e = info["data_offsets"]
        shape = info["shape"]
        raw = np.frombuffer(data, dtype=npdt, count=(e - b) // size,
                            offset=base + b)
        if dt == "BF16":
            arr = (raw.astype(np.uint32) << 16).view(np.float32)
        else:
            arr = raw
        out[name] = (dt, arr.reshape(shape))
    return out


def load(dirpath):
    with open(os.path.join(dirpath, "config.json")) as f:
        cfg = json.load(f)
    idx = os.path.join(dirpath, "model.safetensors.index.json")
    tensors = {}
    if os.path.exists(idx):
        with open(idx) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    for fn in files:
        tensors.update(read_safetensors(os.path.join(dirpath, fn)))
    return cfg, tensors


def f64(t):
    dt, a = t
    if dt == "F8_E4M3":
        return E4M3[a]
    return a.astype(np.float64)


def linear(T, prefix, cfg):
    """A Linear weight [out, in] in float64, dequantized as needed."""
    if prefix + ".qweight" in T:
        q = T[prefix + ".qweight"][1].astype(np.int64)
        s = f64(T[prefix + ".scales"])
        rows, half = q.shape
        cols = 2 * half
        group = cols // s.shape[1]
        w = np.empty((rows, cols))
        w[:, 0::2] = (q & 15) - 8
        w[:, 1::2] = (q >> 4) - 8
        return w * np.repeat(s, group, axis=1)
    dt, a = T[prefix + ".weight"]
    w = f64((dt, a))
    if dt == "F8_E4M3":
        blk = cfg.get("quantization_config", {}).get(
            "weight_block_size", [128, 128])[0]
        s = f64(T[prefix + ".weight_scale_inv"])
        s = np.repeat(np.repeat(s, blk, axis=0), blk, axis=1)
        w = w * s[:w.shape[0], :w.shape[1]]
    return w


def rmsnorm(x, w, eps):
    return w * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def silu(x):
    return x / (1 + np.exp(-x))


def mlp(T, p, x, cfg):
    g = x @ linear(T, p + ".gate_proj", cfg).T
    u = x @ linear(T, p + ".up_proj", cfg).T
    return (silu(g) * u) @ linear(T, p + ".down_proj", cfg).T


def moe(T, p, x, cfg):
    E, K = cfg["num_experts"], cfg["num_experts_per_tok"]
    logits = x @ linear(T, p + ".gate", cfg).T
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    prob = z / z.sum(axis=1, keepdims=True)
    y = np.zeros_like(x)
    for r in range(x.shape[0]):
        top = np.argsort(-prob[r], kind="stable")[:K]
        w = prob[r, top]
        if cfg.get("norm_topk_prob", False):
            w = w / w.sum()
        for e, we in sorted(zip(top, w)):
            y[r] += we * mlp(T, "%s.experts.%d" % (p, e), x[r:r + 1], cfg)[0]
    if cfg.get("shared_expert_intermediate_size", 0):
        gate = x @ linear(T, p + ".shared_expert_gate", cfg).T
        y += (1 / (1 + np.exp(-gate))) * mlp(T, p + ".shared_expert", x, cfg)
    return y


def rope_tables(n, hd, theta):
    # The model defines the angle as a float32 product (transformers).
    half = hd // 2
    inv = (1.0 / (theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd)))
    inv = inv.astype(np.float32)
    ang = (np.arange(n, dtype=np.float32)[:, None] * inv[None, :])
    ang = ang.astype(np.float64)
    return np.cos(ang), np.sin(ang), half


def rope(x, cos, sin, half):
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)


def forward(cfg, T, ids):
    H = cfg["hidden_size"]
    nh = cfg["num_attention_heads"]
    nkv = cfg.get("num_key_value_heads", nh)
    hd = cfg.get("head_dim", H // nh)
    eps = cfg.get("rms_norm_eps", 1e-6)
    L = cfg["num_hidden_layers"]
    n = len(ids)
    moe_model = cfg["model_type"] == "qwen3_moe"
    only = set(cfg.get("mlp_only_layers", []))
    step = cfg.get("decoder_sparse_step", 1)
    x = linear(T, "model.embed_tokens", cfg)[ids]
    cos, sin, half = rope_tables(n, hd, cfg.get("rope_theta", 1e6))
    cos, sin = cos[:, None, :], sin[:, None, :]
    mask = np.triu(np.full((n, n), -np.inf), k=1)
    for i in range(L):
        p = "model.layers.%d" % i
        xn = rmsnorm(x, f64(T[p + ".input_layernorm.weight"]), eps)
        q = (xn @ linear(T, p + ".self_attn.q_proj", cfg).T).reshape(n, nh, hd)
        k = (xn @ linear(T, p + ".self_attn.k_proj", cfg).T).reshape(n, nkv, hd)
        v = (xn @ linear(T, p + ".self_attn.v_proj", cfg).T).reshape(n, nkv, hd)
        q = rope(rmsnorm(q, f64(T[p + ".self_attn.q_norm.weight"]), eps),
                 cos, sin, half)
        k = rope(rmsnorm(k, f64(T[p + ".self_attn.k_norm.weight"]), eps),
                 cos, sin, half)
        rep = nh // nkv
        k = np.repeat(k, rep, axis=1)
        v = np.repeat(v, rep, axis=1)
        s = np.einsum("ihd,jhd->hij", q, k) / np.sqrt(hd) + mask
        s = np.exp(s - s.max(axis=2, keepdims=True))
        s = s / s.sum(axis=2, keepdims=True)
        att = np.einsum("hij,jhd->ihd", s, v).reshape(n, nh * hd)
        x = x + att @ linear(T, p + ".self_attn.o_proj", cfg).T
        xn = rmsnorm(x, f64(T[p + ".post_attention_layernorm.weight"]), eps)
        sparse = (moe_model and i not in only and cfg.get("num_experts", 0) > 0
                  and (i + 1) % step == 0)
        x = x + (moe(T, p + ".mlp", xn, cfg) if sparse
                 else mlp(T, p + ".mlp", xn, cfg))
    h = rmsnorm(x, f64(T["model.norm.weight"]), eps)
    head = ("model.embed_tokens" if cfg.get("tie_word_embeddings", False)
            else "lm_head")
    return h, h @ linear(T, head, cfg).T


def read_rows(path, width):
    a = np.fromfile(path, dtype="<f4").astype(np.float64)
    if a.size % width:
        sys.exit("%s: %d floats is not a whole number of %d-wide rows"
                 % (path, a.size, width))
    return a.reshape(-1, width)


def rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


def check(args):
    cfg, T = load(args.checkpoint)
    ids = [int(t) for t in args.ids.split()]
    h, logits = forward(cfg, T, ids)
    ok = True
    eh = read_rows(args.hidden, cfg["hidden_size"])
    if eh.shape[0] != len(ids):
        sys.exit("engine gave %d hidden rows for %d ids" % (eh.shape[0], len(ids)))
    err_h = rel(eh, h)
    print("hidden: %d rows x %d, max rel err %.3e (tol %.1e)"
          % (len(ids), h.shape[1], err_h, args.tol_hidden))
    ok &= err_h <= args.tol_hidden
    if args.logits:
        el = read_rows(args.logits, cfg["vocab_size"])
        err_l = rel(el, logits)
        print("logits: %d rows x %d, max rel err %.3e (tol %.1e)"
              % (el.shape[0], el.shape[1], err_l, args.tol_logits))
        ok &= err_l <= args.tol_logits and el.shape[0] == len(ids)
    if args.greedy is not None:
        gen = [int(t) for t in args.greedy.split()]
        start = len(ids) - len(gen) + 1
        scale = np.max(np.abs(logits))
        checked = 0
        for j, tok in enumerate(gen):
            row = logits[start - 1 + j]
            top = np.argsort(-row, kind="stable")[:2]
            if row[top[0]] - row[top[1]] <= 2 * args.tol_logits * scale:
                continue
            checked += 1
            if tok != top[0]:
                print("greedy token %d: engine %d, reference argmax %d"
                      % (j, tok, top[0]))
                ok = False
        print("greedy: %d of %d tokens are the reference argmax (%d too "
              "close to call)" % (checked, len(gen), len(gen) - checked))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def diff(args):
    a = read_rows(args.a, args.hidden_size)
    b = read_rows(args.b, args.hidden_size)
    n = min(a.shape[0], b.shape[0])
    if args.rows:
        n = min(n, args.rows)
    a, b = a[:n], b[:n]
    d = np.abs(a - b)
    print("rows %d: max rel diff %.4f, mean abs diff %.4f, mean |x| %.4f, "
          "rel rms diff %.4f" % (n, rel(a, b), d.mean(), np.abs(b).mean(),
                                 np.sqrt((d * d).mean() / (b * b).mean())))
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("--checkpoint", required=True)
    c.add_argument("--ids", required=True)
    c.add_argument("--hidden", required=True)
    c.add_argument("--logits")
    c.add_argument("--tol-hidden", type=float, default=1e-4)
    c.add_argument("--tol-logits", type=float, default=1e-4)
    c.add_argument("--greedy")
    d = sub.add_parser("diff")
    d.add_argument("a")
    d.add_argument("b")
    d.add_argument("--hidden-size", type=int, required=True)
    d.add_argument("--rows", type=int, default=0,
                   help="compare only the first ROWS rows (the prompt)")
    args = ap.parse_args()
    return check(args) if args.cmd == "check" else diff(args)


if __name__ == "__main__":
    sys.exit(main())
