#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An independent implementation of engy's model commitment (engy-mc1),
written from specs/model-commitment.md alone.

  model_commitment.py spec CKPT          print the roots as JSON
  model_commitment.py check CKPT SPEC    compare with engyctl's spec file
  model_commitment.py opening OPENING ROOT   check a row opening
  model_commitment.py kat                print the known-answer vectors
"""
import hashlib
import json
import os
import struct
import sys

import numpy as np

DTYPES = {"BOOL": (1, 1), "U8": (2, 1), "I8": (3, 1), "F8_E4M3": (4, 1),
          "F8_E5M2": (5, 1), "I16": (6, 2), "U16": (7, 2), "F16": (8, 2),
          "BF16": (9, 2), "I32": (10, 4), "U32": (11, 4), "F32": (12, 4),
          "I64": (13, 8), "U64": (14, 8), "F64": (15, 8)}


def tag(t):
    b = t.encode()
    assert len(b) <= 16
    return b + b"\0" * (16 - len(b))


def H(*parts):
    return hashlib.sha256(b"".join(parts)).digest()


def u8(v): return struct.pack("<B", v)
def u16(v): return struct.pack("<H", v)
def u32(v): return struct.pack("<I", v)
def u64(v): return struct.pack("<Q", v)
def s(x):
    b = x.encode()
    return u16(len(b)) + b


EMPTY = H(tag("engy/mc1/empty"))


def node(a, b):
    return H(tag("engy/mc1/node"), a, b)


def depth(n):
    d = 0
    while (1 << d) < max(n, 1):
        d += 1
    return d


def tree(leaves, index=None):
    """Root (and the path of leaf `index`)."""
    n = len(leaves)
    if n == 0:
        return EMPTY, []
    lvl = list(leaves) + [EMPTY] * ((1 << depth(n)) - n)
    path = []
    while len(lvl) > 1:
        if index is not None:
            path.append(lvl[index ^ 1])
            index >>= 1
        lvl = [node(lvl[2 * k], lvl[2 * k + 1]) for k in range(len(lvl) // 2)]
    return lvl[0], path


def fold(leaf, i, path):
    cur = leaf
    for k, sib in enumerate(path):
        cur = node(sib, cur) if (i >> k) & 1 else node(cur, sib)
    return cur


def tid_of(name, dt, shape, n_rows, row_bytes, quant):
    parts = [tag("engy/mc1/tid"), s(name), u8(DTYPES[dt][0]), u8(len(shape))]
    parts += [u64(x) for x in shape]
    parts += [u64(n_rows), u64(row_bytes)]
    if quant is None:
        parts.append(u8(0))
    else:
        kind, param, sname, sdt, sshape = quant
        parts += [u8(kind), u32(param), s(sname), u8(DTYPES[sdt][0]),
                  u64(sshape[0]), u64(sshape[1])]
    return H(*parts)


def leaf_of(tid, i, row, aux):
    return H(tag("engy/mc1/row"), tid, u64(i), u64(len(row)), row,
             u64(len(aux)), aux)


def tensor_root(tid, n_rows, rr):
    return H(tag("engy/mc1/tensor"), tid, u64(n_rows), rr)


def tleaf(tr):
    return H(tag("engy/mc1/tleaf"), tr)


def group(tls):
    return H(tag("engy/mc1/group"), u32(len(tls)), tree(tls)[0])


def model(config_text, tls):
    return H(tag("engy/mc1/model"), H(config_text.encode()), u32(len(tls)),
             tree(tls)[0])


def read_safetensors(path):
    raw = np.fromfile(path, dtype=np.uint8)
    n = struct.unpack("<Q", raw[:8].tobytes())[0]
    hdr = json.loads(raw[8:8 + n].tobytes())
    hdr.pop("__metadata__", None)
    data = raw[8 + n:]
    out = {}
    for name, e in hdr.items():
        a, b = e["data_offsets"]
        out[name] = (e["dtype"], list(e["shape"]), data[a:b])
    return out


def canonical_config(c):
    heads = c["num_attention_heads"]
    cfg = {"arch": c["model_type"], "n_layers": c["num_hidden_layers"],
           "hidden": c["hidden_size"], "n_heads": heads,
           "n_kv_heads": c.get("num_key_value_heads") or heads,
           "head_dim": c.get("head_dim") or c["hidden_size"] // heads,
           "d_ff": c["intermediate_size"], "vocab": c["vocab_size"],
           "tie_word_embeddings": bool(c.get("tie_word_embeddings", False)),
           "quant": "none"}
    ne = c.get("num_experts") or 0
    if ne > 0:
        cfg.update(n_experts=ne, top_k=c.get("num_experts_per_tok") or 0,
                   moe_d_ff=c.get("moe_intermediate_size") or 0,
                   shared_d_ff=c.get("shared_expert_intermediate_size") or 0)
    q = c.get("quantization_config")
    if q:
        if q["quant_method"] == "fp8":
            cfg["quant"] = "fp8"
            cfg["fp8_block"] = (q.get("weight_block_size") or [128])[0]
        elif q["quant_method"] == "engy_int4":
            cfg["quant"] = "int4"
            cfg["int4_group"] = q["group_size"]
        else:
            raise SystemExit("unknown quant_method")
    return cfg, json.dumps(cfg, sort_keys=True, separators=(",", ":"))


def commit(ckpt):
    c = json.load(open(os.path.join(ckpt, "config.json")))
    cfg, text = canonical_config(c)
    idx = os.path.join(ckpt, "model.safetensors.index.json")
    files = (sorted(set(json.load(open(idx))["weight_map"].values()))
             if os.path.exists(idx) else ["model.safetensors"])
    tensors = {}
    for f in files:
        for k, v in read_safetensors(os.path.join(ckpt, f)).items():
            assert k not in tensors
            tensors[k] = v
    names = sorted(tensors, key=lambda x: x.encode())
    scale_of, bound = {}, set()
    for nm in names:
        dt, shape, _ = tensors[nm]
        if dt == "F8_E4M3" and len(shape) == 2 and nm.endswith(".weight") \
                and nm[:-6] + "weight_scale_inv" in tensors:
            scale_of[nm] = (1, nm[:-6] + "weight_scale_inv")
        elif dt == "U8" and len(shape) == 2 and nm.endswith(".qweight") \
                and nm[:-7] + "scales" in tensors:
            scale_of[nm] = (2, nm[:-7] + "scales")
        if nm in scale_of:
            bound.add(scale_of[nm][1])
    committed = [nm for nm in names if nm not in bound]
    roots = {}
    for nm in committed:
        dt, shape, data = tensors[nm]
        esz = DTYPES[dt][1]
        if len(shape) >= 2:
            n_rows, row_bytes = shape[0], esz * int(np.prod(shape[1:], dtype=np.uint64))
        else:
            n_rows, row_bytes = 1, len(data)
        quant, aux_rows = None, None
        if nm in scale_of:
            kind, sname = scale_of[nm]
            sdt, sshape, sdata = tensors[sname]
            param = cfg.get("fp8_block", 128) if kind == 1 else 2 * shape[1] // sshape[1]
            quant = (kind, param, sname, sdt, sshape)
            srow = sshape[1] * DTYPES[sdt][1]
            aux_rows = sdata.reshape(sshape[0], srow)
        tid = tid_of(nm, dt, shape, n_rows, row_bytes, quant)
        rows = data.reshape(n_rows, row_bytes) if n_rows else data.reshape(0, row_bytes)
        leaves = []
        for i in range(n_rows):
            aux = b""
            if quant is not None:
                aux = aux_rows[i // quant[1] if quant[0] == 1 else i].tobytes()
            leaves.append(leaf_of(tid, i, rows[i].tobytes(), aux))
        roots[nm] = tensor_root(tid, n_rows, tree(leaves)[0])

    def grp(pred):
        return group([tleaf(roots[n]) for n in committed if pred(n)]).hex()

    out = {"hashing": "engy-mc1", "config": cfg,
           "model_root": model(text, [tleaf(roots[n]) for n in committed]).hex()}
    lm = [n for n in committed if n.startswith("lm_head.")]
    out["lm_root"] = grp(lambda n: n.startswith("lm_head.")) if lm else \
        grp(lambda n: n.startswith("model.embed_tokens."))
    out["layer_roots"] = [grp(lambda n, i=i: n.startswith("model.layers.%d." % i))
                          for i in range(cfg["n_layers"])]
    ex = {}
    for i in range(cfg["n_layers"]):
        p = "model.layers.%d.mlp." % i
        if not any(n.startswith(p + "experts.") for n in committed):
            continue
        e = {}
        if any(n.startswith(p + "gate.") for n in committed):
            e["router"] = grp(lambda n: n.startswith(p + "gate."))
        sh = lambda n: n.startswith(p + "shared_expert.") or n.startswith(p + "shared_expert_gate.")
        if any(sh(n) for n in committed):
            e["shared"] = grp(sh)
        e["experts"] = [grp(lambda n, k=k: n.startswith(p + "experts.%d." % k))
                        for k in range(cfg.get("n_experts", 0))]
        ex[str(i)] = e
    out["expert_roots_by_layer"] = ex
    out["tensor_roots"] = {n: roots[n].hex() for n in committed}
    return out


def check_opening(o, root):
    t = o["tensor"]
    dt, shape = t["dtype"], t["shape"]
    esz = DTYPES[dt][1]
    n_rows = shape[0] if len(shape) >= 2 else 1
    row_bytes = esz * int(np.prod(shape[1:] if len(shape) >= 2 else shape, dtype=np.uint64))
    quant, aux_len = None, 0
    if t["quant"] is not None:
        q = t["quant"]
        kind = 1 if q["kind"] == "fp8-block" else 2
        param = q["block"] if kind == 1 else q["group"]
        sc = q["scale"]
        quant = (kind, param, sc["name"], sc["dtype"], sc["shape"])
        aux_len = sc["shape"][1] * DTYPES[sc["dtype"]][1]
    row, aux = bytes.fromhex(o["row_bytes"]), bytes.fromhex(o["aux_bytes"])
    i = o["row"]
    if i >= n_rows or len(row) != row_bytes or len(aux) != aux_len:
        return False
    rp = [bytes.fromhex(x) for x in o["row_path"]]
    tp = [bytes.fromhex(x) for x in o["tensor_path"]]
    if len(rp) != depth(n_rows) or len(tp) != depth(o["n_tensors"]):
        return False
    tid = tid_of(t["name"], dt, shape, n_rows, row_bytes, quant)
    rr = fold(leaf_of(tid, i, row, aux), i, rp)
    top = fold(tleaf(tensor_root(tid, n_rows, rr)), o["tensor_index"], tp)
    mr = H(tag("engy/mc1/model"), bytes.fromhex(o["config_sha256"]),
           u32(o["n_tensors"]), top)
    return mr.hex() == root


def kat():
    a, b, c = H(b"a"), H(b"b"), H(b"c")
    r3, p3 = tree([a, b, c], 2)
    assert p3 == [EMPTY, node(a, b)] and fold(c, 2, p3) == r3
    data = bytes(range(12))
    tid = tid_of("t", "BF16", [3, 2], 3, 4, None)
    leaves = [leaf_of(tid, i, data[4 * i:4 * i + 4], b"") for i in range(3)]
    tr = tensor_root(tid, 3, tree(leaves)[0])
    return {"KAT_EMPTY": EMPTY.hex(), "KAT_NODE_EE": node(EMPTY, EMPTY).hex(),
            "KAT_TREE3": r3.hex(), "KAT_TID": tid.hex(),
            "KAT_LEAF0": leaves[0].hex(), "KAT_TROOT": tr.hex(),
            "KAT_MODEL": model('{"arch":"x"}', [tleaf(tr)]).hex()}


def main():
    a = sys.argv[1:]
    if a[:1] == ["kat"]:
        for k, v in kat().items():
            print(k, v)
    elif a[:1] == ["spec"] and len(a) == 2:
        print(json.dumps(commit(a[1]), indent=1))
    elif a[:1] == ["check"] and len(a) == 3:
        mine, theirs = commit(a[1]), json.load(open(a[2]))
        for k in mine:
            if mine[k] != theirs.get(k):
                print("differs:", k)
                return 1
        print("python recomputation matches: model_root %s, %d tensors"
              % (mine["model_root"], len(mine["tensor_roots"])))
    elif a[:1] == ["opening"] and len(a) == 3:
        ok = check_opening(json.load(open(a[1])), a[2])
        print("opening", "ok" if ok else "REFUSED")
        return 0 if ok else 3
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
