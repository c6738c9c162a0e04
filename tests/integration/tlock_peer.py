# SPDX-License-Identifier: MIT
"""engy's timelock ciphertexts against bittensor-drand (PyPI, the Rust
library the bittensor SDK commits with): bittensor-drand decrypts what engy
encrypted, engy decrypts what bittensor-drand encrypted, and the two
layouts agree field by field.  Expected values: drand quicknet's published
pulses (tests/data/drand/quicknet.txt, an independent source) and
bittensor-drand itself.

It also checks the reveal round bittensor-drand 2.0 computes for a CRv4
commit (get_encrypted_commit_v2: the runtime's stateful epoch schedule)
against engy's (chain_tool reveal), bracketing bittensor-drand's clock
between two of engy's, and the layout of the commit bytes it returns.

usage: tlock_peer.py TLOCK_TOOL QUICKNET_TXT CHAIN_TOOL
"""
import os
import random
import struct
import time
import subprocess
import sys

import bittensor_drand as bd

tool, data, chain_tool = sys.argv[1], sys.argv[2], sys.argv[3]
proc = subprocess.Popen([tool], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
n_ok = 0


def ask(line):
    proc.stdin.write(line + "\n")
    proc.stdin.flush()
    return proc.stdout.readline().strip()


def ok(what):
    global n_ok
    n_ok += 1
    print("ok %d - %s" % (n_ok, what))


def compact(n):
    if n < 1 << 6:
        return bytes([n << 2])
    if n < 1 << 14:
        return struct.pack("<H", n << 2 | 1)
    return struct.pack("<I", n << 2 | 2)


def user_data(ct, rnd):
    # bittensor-drand's own wrapper: SCALE (Vec<u8>, u64).
    return compact(len(ct)) + ct + struct.pack("<Q", rnd)


def un_user_data(b):
    mode = b[0] & 3
    if mode == 0:
        n, off = b[0] >> 2, 1
    elif mode == 1:
        n, off = struct.unpack("<H", b[:2])[0] >> 2, 2
    else:
        n, off = struct.unpack("<I", b[:4])[0] >> 2, 4
    assert len(b) == off + n + 8, "UserData length"
    return b[off:off + n], struct.unpack("<Q", b[off + n:])[0]


def layout(ct, msg_len):
    """The fields of a tle ciphertext (arkworks compressed), checked."""
    f = {}
    p = 0
    f["U"] = ct[p:p + 96]; p += 96
    assert f["U"][0] & 0x80, "U is not a compressed point"
    for name in ("V", "W"):
        (n,) = struct.unpack("<Q", ct[p:p + 8]); p += 8
        assert n == 32, "%s length %d" % (name, n)
        f[name] = ct[p:p + n]; p += n
    (body,) = struct.unpack("<Q", ct[p:p + 8]); p += 8
    b = ct[p:p + body]; p += body
    (cn,) = struct.unpack("<Q", b[:8])
    assert cn == msg_len + 16, "GCM ciphertext %d for a %d-byte message" % (cn, msg_len)
    (nn,) = struct.unpack("<Q", b[8 + cn:16 + cn])
    assert nn == 12 and len(b) == 16 + cn + nn, "nonce"
    (sn,) = struct.unpack("<Q", ct[p:p + 8]); p += 8
    assert ct[p:p + sn] == b"AES_GCM_", "suite"
    p += sn
    assert p == len(ct), "%d bytes after the suite" % (len(ct) - p)
    return (96, 8, 32, 8, 32, 8, 8, cn, 8, nn, 8, sn)


pk, pulses = None, []
for line in open(data):
    w = line.split()
    if w and w[0] == "pk":
        pk = w[1]
    elif w and w[0] == "round":
        pulses.append((int(w[1]), w[2]))
assert pk and len(pulses) >= 2

# The published pulses verify in engy (the same hash-to-curve as drand's).
for rnd, sig in pulses:
    assert ask("verify %s %d %s" % (pk, rnd, sig)) == "ok", rnd
    assert ask("verify %s %d %s" % (pk, rnd + 1, sig)) == "bad", rnd
ok("quicknet's published pulses verify in engy, not for the next round")

# A CRv4 payload as SCALE: hotkey, uids, values, version_key.
hotkey = bytes(range(1, 33))
uids, vals = [0, 3, 7, 4095], [65535, 1, 30000, 12]
payload = (compact(32) + hotkey + compact(len(uids)) + b"".join(struct.pack("<H", u) for u in uids)
           + compact(len(vals)) + b"".join(struct.pack("<H", v) for v in vals) + struct.pack("<Q", 2003))

# 1. engy encrypts to quicknet's key; bittensor-drand decrypts with the
#    published pulse.
for rnd, sig in pulses:
    ct = bytes.fromhex(ask("encrypt %s %d %s" % (pk, rnd, payload.hex())))
    got = bd.decrypt_with_signature(user_data(ct, rnd), sig)
    assert got == payload, "round %d: bittensor-drand recovered %r" % (rnd, got)
    other = [s for r, s in pulses if r != rnd][0]
    try:
        bd.decrypt_with_signature(user_data(ct, rnd), other)
        raise AssertionError("another round's pulse opened it")
    except ValueError:
        pass
ok("bittensor-drand decrypts engy's ciphertexts with quicknet's pulses (and not with another round's)")

# 2. The same with a test beacon engy keys and signs.
sk = os.urandom(32).hex()
tpk = ask("keygen " + sk)
for rnd in (1, 5000000, 2**40 + 7):
    sig = ask("sign %s %d" % (sk, rnd))
    assert ask("verify %s %d %s" % (tpk, rnd, sig)) == "ok"
    for msg in (b"", payload, os.urandom(1000)):
        ct = bytes.fromhex(ask("encrypt %s %d %s" % (tpk, rnd, msg.hex() or "-")))
        assert bd.decrypt_with_signature(user_data(ct, rnd), sig) == msg
        assert bytes.fromhex(ask("decrypt %s %s" % (sig, ct.hex()))) == msg
ok("bittensor-drand and engy decrypt engy's ciphertexts to a test beacon")

# 3. bittensor-drand encrypts (to quicknet's key, its own pinned key);
#    engy decrypts with the published pulse, and the layouts agree.
for rnd, sig in pulses:
    for msg in (payload, b"x", os.urandom(333)):
        wrapped, r2 = bd.encrypt_at_round(msg, rnd)
        assert r2 == rnd
        theirs, r3 = un_user_data(wrapped)
        assert r3 == rnd
        got = ask("decrypt %s %s" % (sig, theirs.hex()))
        assert got == msg.hex(), "round %d: engy answered %s" % (rnd, got[:80])
        ours = bytes.fromhex(ask("encrypt %s %d %s" % (pk, rnd, msg.hex())))
        assert layout(theirs, len(msg)) == layout(ours, len(msg))
        assert len(theirs) == len(ours)
        other = [s for r, s in pulses if r != rnd][0]
        assert ask("decrypt %s %s" % (other, theirs.hex())).startswith("error: ")
ok("engy decrypts bittensor-drand's ciphertexts; the layouts agree field by field")


# 4. The reveal round of a CRv4 commit: bittensor-drand 2.0's
#    get_encrypted_commit_v2 against engy's schedule, over random states.
def engy_reveal(st, period, now):
    out = subprocess.run([chain_tool, "reveal", "block=%d" % st["block"], "period=%d" % period,
                          "block_time=12", "now=%.6f" % now, "tempo=%d" % st["tempo"],
                          "last=%d" % st["last"], "pending=%d" % st["pending"],
                          "index=%d" % st["index"], "since=%d" % st["since"]],
                         capture_output=True, text=True).stdout
    kv = dict(l.split(" ", 1) for l in out.strip().split("\n"))
    return kv


rng = random.Random(int.from_bytes(os.urandom(8), "little"))
cases = 0
for _ in range(300):
    tempo = rng.choice([1, 2, 10, 99, 360, rng.randint(1, 1000)])
    block = rng.randint(10_000, 8_000_000)
    last = block - rng.randint(0, 2 * tempo + 5)
    pending = rng.choice([0, 0, block + rng.randint(-3, 3 * tempo + 3)])
    st = dict(tempo=tempo, block=block, last=last, pending=max(pending, 0),
              index=rng.randint(0, 100_000), since=rng.choice([0, rng.randint(0, 60_000)]))
    period = rng.randint(0, 4)
    before = time.time()
    ct, rnd = bd.get_encrypted_commit_v2(uids, vals, 2003, st["last"], st["pending"], st["index"],
                                         st["tempo"], st["since"], st["block"], period, 12.0, hotkey)
    after = time.time()
    lo, hi = engy_reveal(st, period, before), engy_reveal(st, period, after)
    assert "round" in lo and "round" in hi, (st, period, lo, hi)
    assert lo["block"] == hi["block"]
    assert int(lo["round"]) <= rnd <= int(hi["round"]), (st, period, rnd, lo, hi)
    layout(ct, len(payload))  # the on-chain commit bytes: raw, no wrapper
    cases += 1
ok("%d random epoch states: bittensor-drand 2.0's reveal round lies within engy's for its clock; "
   "its commit bytes have the layout engy writes" % cases)
try:
    bd.get_encrypted_commit_v2(uids, vals, 1, 0, 0, 0, 0, 0, 100, 1, 12.0, hotkey)
    raise AssertionError("tempo 0 accepted")
except ValueError:
    pass
st = dict(tempo=0, block=100, last=0, pending=0, index=0, since=0)
assert "tempo 0" in engy_reveal(st, 1, time.time()).get("error", ""), "engy accepted tempo 0"
ok("tempo 0: both refuse")

proc.stdin.close()
proc.wait()
print("%d passed, 0 failed" % n_ok)
