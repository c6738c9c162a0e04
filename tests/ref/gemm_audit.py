#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An independent recomputation of the GEMM audit's hashing ("engy-ga1")
from specs/gemm-audit.md alone (Python standard library only): the tags,
a leaf, the sparse token trees, the sub tree, the gemm, trace and seed
roots, the PRNG and the challenge's expansion.  Prints the known-answer
vectors tests/unit/check_gemm.c holds."""
import hashlib
import struct


def tag(s):
    return s.encode().ljust(16, b"\0")


def H(*parts):
    return hashlib.sha256(b"".join(parts)).digest()


def u16(v): return struct.pack("<H", v)
def u32(v): return struct.pack("<I", v)
def u64(v): return struct.pack("<Q", v)


EMPTY = H(tag("engy/ga1/empty"))


def node(l, r):
    return H(tag("engy/ga1/node"), l, r)


def depth(n):
    d = 0
    while (1 << d) < max(n, 1):
        d += 1
    return d


def key_bytes(k):
    layer, mm, expert, role = k
    return u16(layer) + bytes([mm]) + u16(expert) + bytes([role])


def leaf(k, pos, row):
    return H(tag("engy/ga1/leaf"), key_bytes(k), u32(pos), u32(len(row)),
             struct.pack("<%df" % len(row), *row))


def tree(leaves, n):
    """leaves: {index: hash}; a padded tree of depth(n)."""
    level = [leaves.get(i, EMPTY) for i in range(1 << depth(n))]
    while len(level) > 1:
        level = [node(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


def gemm_root(trace, spec, ids_hash, n_prompt, n_tokens, sampling):
    subs = []
    for k in sorted(trace, key=lambda k: (k[0], k[1], k[2], k[3])):
        troot = tree({p: leaf(k, p, row) for p, row in trace[k].items()},
                     n_tokens)
        subs.append(H(tag("engy/ga1/sub"), key_bytes(k), troot))
    sroot = tree(dict(enumerate(subs)), len(subs))
    return H(tag("engy/ga1/gemm"), spec, ids_hash, u32(n_prompt),
             u32(n_tokens), sampling, u32(len(subs)), sroot)


def ids_hash(ids):
    return H(tag("engy/ga1/ids"), u32(len(ids)), b"".join(u32(i) for i in ids))


def sampling_hash(temp, top_p, top_k, seed, has_seed, max_new):
    return H(struct.pack("<ddiQBI", temp, top_p, top_k, seed if has_seed else 0,
                         1 if has_seed else 0, max_new))


def toploc_hash(proofs):
    if proofs is None:
        return bytes(32)
    return H(b"".join(u32(len(p)) + p.encode() for p in proofs))


class Prng:
    def __init__(self, seed):
        self.seed, self.block, self.buf = seed, 0, []

    def u64(self):
        if not self.buf:
            b = H(tag("engy/ga1/prng"), self.seed, u64(self.block))
            self.block += 1
            self.buf = list(struct.unpack("<4Q", b))
        return self.buf.pop(0)

    def below(self, n):
        if n <= 1:
            return 0
        lim = (1 << 64) - 1 - ((1 << 64) % n)
        while True:
            x = self.u64()
            if x <= lim:
                return x % n


def challenge(seed, n_layers, n_prompt, n_tokens, layers, tokens):
    if n_tokens < 2 or not layers or not tokens:
        return []
    cand = list(range(n_layers))
    if 1 <= n_prompt < n_tokens:
        cand.append(0xFFFF)
    g = Prng(seed)
    out = []
    for i in range(min(layers, len(cand))):
        t = i + g.below(len(cand) - i)
        cand[i], cand[t] = cand[t], cand[i]
        lo = n_prompt - 1 if cand[i] == 0xFFFF else 0
        hi = n_tokens - 1
        got = []
        while len(got) < min(tokens, hi - lo):
            p = lo + g.below(hi - lo)
            if p not in got:
                got.append(p)
        out += [(cand[i], p) for p in got]
    return out


if __name__ == "__main__":
    print("empty", EMPTY.hex())
    k = (3, 6, 0xFFFF, 1)
    print("leaf", leaf(k, 17, [1.0, -2.5, 0.125]).hex())
    spec = bytes(range(32))
    ids = ids_hash([1, 2, 3, 4])
    print("ids", ids.hex())
    samp = sampling_hash(0.7, 0.95, 20, 42, True, 64)
    print("sampling", samp.hex())
    trace = {
        (0, 0, 0xFFFF, 0): {0: [1.0, 2.0], 1: [3.0, 4.0], 2: [0.5, -0.5]},
        (0, 0, 0xFFFF, 1): {0: [5.0], 2: [-1.0]},
        (1, 9, 3, 1): {1: [0.25, 0.75, 1.5]},
        (0xFFFF, 15, 0xFFFF, 1): {2: [9.0, 8.0, 7.0, 6.0]},
    }
    g = gemm_root(trace, spec, ids, 2, 4, samp)
    print("gemm", g.hex())
    tl = toploc_hash(["/9kAAwABAAA=", "AAAA"])
    print("toploc", tl.hex())
    tr = H(tag("engy/ga1/trace"), g, tl)
    print("trace", tr.hex())
    rid = b"req-1"
    nonce = bytes([0xA5] * 32)
    seed = H(tag("engy/ga1/chal"), spec, tr, u16(len(rid)), rid, nonce)
    print("seed", seed.hex())
    p = Prng(seed)
    print("prng", " ".join("%016x" % p.u64() for _ in range(5)))
    print("below", " ".join(str(p.below(n)) for n in (7, 1000, 3)))
    print("cells", challenge(seed, 6, 5, 40, 3, 4))
