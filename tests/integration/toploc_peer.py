# SPDX-License-Identifier: MIT
# TOPLOC against the reference library (PyPI toploc, pinned in
# tests/peers/requirements.txt), both ways, on a matrix of shapes.
#
#   python toploc_peer.py ENGYCTL TMPDIR
#
# For every case the rows are made here (numpy, a fixed seed per case, cast
# to bfloat16 by torch, round to nearest even), then:
#   1. toploc.build_proofs_bytes and `engyctl toploc prove` give the same
#      proof bytes, proof for proof;
#   2. `engyctl toploc verify` passes toploc's proofs with 0 exponent
#      mismatches and a mantissa error of 0 in every chunk;
#   3. toploc.verify_proofs_bytes passes engy's proofs the same way.
# Each case runs on rows whose chunks have no tie at the k-th magnitude,
# where all of it must hold exactly, and on Gaussian rows with outliers,
# where a chunk with such a tie (torch leaves the order of equal values
# open; engy takes the lower index, specs/toploc.md 2.1) may differ, at
# most one exponent mismatch per tied value.
# The expected values come from the independent implementation (toploc),
# never from engy.  Prints one line per failed check and the plain
# "N passed, M failed" line; exits 1 on any failure.
import base64
import os
import subprocess
import sys

import numpy as np
import torch
import toploc

engyctl, tmp = sys.argv[1], sys.argv[2]
n_pass = 0
n_fail = 0


def check(cond, what):
    global n_pass, n_fail
    if cond:
        n_pass += 1
    else:
        n_fail += 1
        print("FAIL: " + what, flush=True)


def make_rows(seed, n, hidden, scale, heavy):
    rng = np.random.default_rng(seed)
    if heavy:  # magnitudes spread over many binades: few equal bf16 keys
        x = np.exp(rng.standard_normal((n, hidden)) * 3.0)
        x *= np.where(rng.random((n, hidden)) < 0.5, -1.0, 1.0)
    else:  # Gaussian with a few large outliers, as hidden states are
        x = rng.standard_normal((n, hidden))
        x[rng.random((n, hidden)) < 0.002] *= 40.0
    return torch.from_numpy((x * scale).astype(np.float32)).to(torch.bfloat16)


def chunks_of(acts, b, skip):
    """The flat chunks toploc proves (its batch_activations)."""
    out = [] if skip else [acts[0].reshape(-1)]
    for i in range(0 if skip else 1, len(acts), b):
        out.append(torch.cat([a.reshape(-1) for a in acts[i:i + b]]))
    return out


def boundary_ties(chunk, k):
    """Values in the top k whose |x| equals the k-th largest, when one
    outside the top k equals it too (torch leaves their order open and
    engy takes the lower index: specs/toploc.md 2.1); else 0."""
    key = chunk.view(torch.int16).numpy().astype(np.int64) & 0x7FFF
    if key.size <= k:
        return 0
    srt = np.sort(key)[::-1]
    if srt[k - 1] != srt[k]:
        return 0
    return int(np.count_nonzero(srt[:k] == srt[k - 1]))


# (hidden, rows, prefill, topk, dbs, skip_prefill)
CASES = []
for hidden in (64, 256, 1024, 2048):
    for n in (1, 31, 32, 33, 70, 129):
        for k, b in ((128, 32), (16, 32), (64, 8)):
            # every chunk, the last one too, holds at least k values (with
            # fewer toploc emits null proofs and engy refuses: toploc.md)
            if ((n - 1) % b + 1) * hidden < k:
                continue
            CASES.append((hidden, n, 0, k, b, True))
# prefill rows, skipped (the public miner: skip_prefill, B=32, k=128) and not
for hidden, n, pf in ((256, 40, 8), (1024, 100, 37), (64, 70, 3)):
    CASES.append((hidden, n, pf, 128, 32, True))
    CASES.append((hidden, n, pf, 128, 32, False))
# Qwen3's hidden sizes, as the miner proves them
CASES.append((4096, 65, 1, 128, 32, True))
CASES.append((5120, 33, 1, 128, 32, True))


def run_case(name, rows, acts, pf, k, b, skip, hidden, ties):
    ref = toploc.build_proofs_bytes(acts, decode_batching_size=b, topk=k,
                                    skip_prefill=skip)
    path = os.path.join(tmp, "rows.bf16")
    with open(path, "wb") as f:
        f.write(rows.view(torch.int16).numpy().astype("<i2").tobytes())
    args = ["--topk", str(k), "--dbs", str(b), "--hidden", str(hidden),
            "--prefill", str(pf)]
    if not skip:
        args.append("--no-skip-prefill")
    p = subprocess.run([engyctl, "toploc", "prove"] + args + [path],
                       capture_output=True, text=True)
    check(p.returncode == 0, name + ": engyctl prove exit %d: %s" %
          (p.returncode, p.stderr.strip()))
    if p.returncode != 0:
        return
    mine = [base64.b64decode(line) for line in p.stdout.split()]
    check(len(mine) == len(ref) == len(ties), name + ": %d proofs from "
          "engy, %d from toploc, %d chunks" % (len(mine), len(ref),
                                                len(ties)))
    for i, (a, r) in enumerate(zip(mine, ref)):
        check(a == r or ties[i] > 0, name + ": proof %d differs (engy %s, "
              "toploc %s)" % (i, a[:16].hex(), r[:16].hex()))

    # engy verifies toploc's proofs
    pfile = os.path.join(tmp, "proofs")
    with open(pfile, "w") as f:
        f.write("".join(base64.b64encode(r).decode() + "\n" for r in ref))
    v = subprocess.run([engyctl, "toploc", "verify"] + args +
                       ["--max-mismatches", "0", "--min-pass", "1",
                        "--max-mant-mean", "0", "--max-mant-median", "0",
                        "--proofs", pfile, path],
                       capture_output=True, text=True)
    check(v.returncode in (0, 3), name + ": engyctl verify exit %d: %s" %
          (v.returncode, v.stderr.strip()))
    chunks = [ln for ln in v.stdout.splitlines() if ln.startswith("chunk=")]
    check(len(chunks) == len(ref), name + ": engy printed %d chunk lines "
          "for %d proofs" % (len(chunks), len(ref)))
    for i, ln in enumerate(chunks[:len(ties)]):
        f = dict(kv.split("=") for kv in ln.split())
        # a tied value of the other sign may also show as a mantissa error
        check(int(f["exp_mismatches"]) <= ties[i] and
              (ties[i] or f["mant_mean"] == f["mant_median"] == "0"),
              name + ": engy on toploc's proof (%d tied): %s" % (ties[i], ln))
    check(v.returncode == 0 or any(ties), name + ": engy's verdict on "
          "toploc's proofs: " + v.stdout.strip().splitlines()[-1])

    # toploc verifies engy's proofs.  With skip_prefill on one tensor of
    # rows toploc's C++ verifier runs (what a validator calls); its Python
    # path over a list of tensors evaluates the polynomial at the raw
    # index, not modulo the proof's modulus, so it fails its own proofs of
    # chunks over 65,497 values whose modulus is not 65497.
    res = toploc.verify_proofs_bytes(torch.cat(acts) if skip else acts,
                                     mine, decode_batching_size=b, topk=k,
                                     skip_prefill=skip)
    check(len(res) == len(mine), name + ": toploc gave %d results" %
          len(res))
    for i, r in enumerate(res[:len(ties)]):
        check(r.exp_mismatches <= ties[i] and
              (ties[i] or r.mant_err_mean == r.mant_err_median == 0),
              name + ": toploc on engy's proof %d (%d tied): %r" %
              (i, ties[i], r))


n_tie_free = 0
n_tied_chunks = 0
n_chunks = 0
for ci, (hidden, n, pf, k, b, skip) in enumerate(CASES):
    name = "H=%d rows=%d prefill=%d k=%d B=%d skip_prefill=%s" % (
        hidden, n, pf, k, b, skip)
    # Every case twice: rows with no tie at any chunk's k-th magnitude (a
    # seed is drawn until none has one), where proofs must be identical
    # and verify with no mismatch either way; and Gaussian rows with
    # outliers as they come, where a chunk with a tie at the boundary may
    # differ and cost at most as many mismatches as tied values.
    for heavy in (True, False):
        for seed in range(64):
            rows = make_rows(1000 * ci + seed, n, hidden, 0.5 + ci % 5,
                             heavy)
            acts = [] if skip else [rows[:pf]]
            acts += [rows[i:i + 1] for i in range(pf, n)]
            ties = [boundary_ties(c, k) for c in chunks_of(acts, b, skip)]
            if not heavy or not any(ties):
                break
        check(not heavy or not any(ties),
              name + ": no tie-free rows in 64 seeds")
        n_tie_free += heavy and not any(ties)
        n_tied_chunks += sum(1 for t in ties if t)
        n_chunks += len(ties)
        run_case(name + (" spread" if heavy else " gaussian"), rows, acts,
                 pf, k, b, skip, hidden, ties)

print("toploc %s, torch %s: %d cases, %d of them also on tie-free rows; "
      "%d of %d chunks had a tie at the k-th magnitude" %
      (toploc.__version__, torch.__version__, len(CASES), n_tie_free,
       n_tied_chunks, n_chunks))
print("%d passed, %d failed" % (n_pass, n_fail))
sys.exit(1 if n_fail else 0)
