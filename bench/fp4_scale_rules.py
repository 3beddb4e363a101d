#!/usr/bin/env python3
"""What the MX floor rule costs FP4 E2M1 (and E1M2), against two other ways to pick a scale.

The extended contract's MX rule (OCP MX v1.0, contract.md §ext-fp4-quantizers) is
    shared_exp = floor(log2(amax)) - emax      emax 2 (E2M1, max 6), 0 (E1M2, max 1.75)
so a block of 32 whose amax lies in (max, 2^(emax+1)) * 2^k -- (6, 8) * 2^k for E2M1,
(1.75, 2) * 2^k for E1M2 -- clips its largest elements to max * 2^k. This script measures,
on the activations of `qcoll demo` (tools/activations.cpp, written by `qcoll generate`), how
often that happens and what it adds to the error of the reduce-scatter's sum, and compares:

  mx-floor   the contract's rule (E8M0 scale per 32; 0.5 + 1/32 bytes per element)
  mx-ceil    the smallest power of two with amax / scale <= max: shared_exp one higher
             exactly where floor saturates (E8M0 per 32, the same bytes; never clips)
  fp32/32    scale = fp32(amax / max) per 32, as KG does per 128 (fp32 per 32: 0.625 B/el.)
  kg/128     the contract's KG rule, scale = fp32(amax / max) per 128 (0.5 + 4/128 B/el.)

Only mx-floor and kg/128 are qcoll modes (mx-e2m1 / kg-e2m1); the others are computed here for
the docs (docs/numerics.md). The numpy model of mx-floor and kg/128 is checked bit for bit
against `qcoll quantize` first (--check), so the rows are the library's.

Error columns as in `qcoll demo`: the sum over ranks of fp32(decode(q)) * fp32(scale), in fp32
in rank order, cast to bf16 (the demo's default output), against the exact fp64 sum of the
unquantized tensors: rel RMS = sqrt(sum (y - e)^2 / sum e^2), max = max |y - e| / max |e|.

  bench/fp4_scale_rules.py [--qcoll build/tools/qcoll] [--ranks 8] [--bs 1024] [--hidden 4096]
                           [--seed 1] [--check]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np

FORMATS = {"e2m1": (6.0, 2), "e1m2": (1.75, 0)}  # max finite, emax


def encode(v, fmt):
    """Saturating round-to-nearest-even onto the format's values (v: fp32, already scaled)."""
    if fmt == "e2m1":  # ml_dtypes' float4_e2m1fn conversion (saturating RNE), as the contract says
        return v.astype(ml_dtypes.float4_e2m1fn).astype(np.float32)
    # E1M2: the values are the multiples of 0.25 up to 1.75 (subnormals 0..0.75, normals 1..1.75)
    return np.clip(np.rint(v * np.float32(4)) / np.float32(4), -1.75, 1.75).astype(np.float32)


def floor_log2(a):
    """floor(log2(a)) of positive fp32 values, from their bits (normal values; the demo's are)."""
    return ((a.view(np.uint32) >> 23).astype(np.int32) & 0xFF) - 127


def scales(x, fmt, rule):
    """Per-group scales (fp32) broadcast over the group's elements, and the group size."""
    mx, emax = FORMATS[fmt]
    g = 128 if rule == "kg/128" else 32
    xg = x.reshape(x.shape[0], -1, g)
    amax = np.abs(xg).max(axis=2)
    if rule in ("kg/128", "fp32/32"):
        s = (amax / np.float32(mx)).astype(np.float32)
    else:
        e = np.clip(floor_log2(amax) - emax, -127, 127)
        if rule == "mx-ceil":
            e = e + (amax > np.float32(mx) * np.exp2(e).astype(np.float32))
        s = np.exp2(e.astype(np.float64)).astype(np.float32)
    return s, g


def quantize(x, fmt, rule):
    """Dequantized values fp32(decode(q)) * fp32(scale), and the mask of clipped elements."""
    mx, _ = FORMATS[fmt]
    s, g = scales(x, fmt, rule)
    sb = np.repeat(s, g, axis=1)
    safe = np.where(sb == 0, np.float32(1), sb)
    if rule == "kg/128" or rule == "fp32/32":
        v = np.where(sb == 0, np.float32(0), x / safe).astype(np.float32)  # one fp32 division
    else:
        v = (x * (np.float32(1) / safe)).astype(np.float32)  # times 2^-shared_exp: exact
    clipped = np.abs(v) > np.float32(mx * (1 + 2**-10))  # above max * scale (not by a rounding)
    return (encode(v, fmt) * sb).astype(np.float32), clipped, s


def errors(acts, deq, exact):
    acc = np.zeros_like(acts[0], dtype=np.float32)
    for d in deq:  # fp32 sum in rank order 0..n-1
        acc = (acc + d).astype(np.float32)
    y = acc.astype(ml_dtypes.bfloat16).astype(np.float64)
    rel = np.sqrt(((y - exact) ** 2).sum() / (exact**2).sum())
    return rel, np.abs(y - exact).max() / np.abs(exact).max()


def check_against_qcoll(args, tmp, acts):
    """mx-floor and kg/128 of the model against the codes `qcoll quantize` writes (rank 0)."""
    env = dict(os.environ, QCOLL_CONTRACT="extended")
    for fmt in FORMATS:
        for rule, sdt in (("mx-floor", "float8_e8m0"), ("kg/128", "float")):
            xp, sp = os.path.join(tmp, "x{rank}.npy"), os.path.join(tmp, "s{rank}.npy")
            subprocess.run([args.qcoll, "quantize", "--ranks", str(args.ranks), "--in",
                            os.path.join(tmp, "act{rank}.npy"), "--x-dtype", fmt, "--scales-dtype", sdt,
                            "--x", xp, "--scales", sp], check=True, env=env, stdout=subprocess.DEVNULL)
            for r in (0, args.ranks - 1):
                packed = np.load(xp.format(rank=r))
                codes = np.stack([packed & 0xF, packed >> 4], axis=-1).reshape(acts[r].shape)
                mag = codes & 7
                table = ({"e2m1": [0, .5, 1, 1.5, 2, 3, 4, 6], "e1m2": [0, .25, .5, .75, 1, 1.25, 1.5, 1.75]})[fmt]
                val = np.where(codes & 8, -1, 1) * np.asarray(table, np.float32)[mag]
                s = np.load(sp.format(rank=r))
                if sdt == "float8_e8m0":
                    s = np.exp2(s.reshape(s.shape[0], -1).astype(np.float64) - 127).astype(np.float32)
                g = 32 if sdt == "float8_e8m0" else 128
                lib = (val.astype(np.float32) * np.repeat(s.astype(np.float32), g, axis=1)).astype(np.float32)
                mine, _, _ = quantize(acts[r], fmt, rule)
                if not np.array_equal(lib.view(np.uint32) & 0x7FFFFFFF, mine.view(np.uint32) & 0x7FFFFFFF) \
                        or not np.array_equal(np.signbit(lib) & (lib != 0), np.signbit(mine) & (mine != 0)):
                    sys.exit(f"fp4_scale_rules: the model of {rule} {fmt} differs from qcoll quantize (rank {r})")
    print("check: the model's mx-floor and kg/128 (e2m1, e1m2) dequantize to qcoll quantize's values, ranks 0 and n-1")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qcoll", default="build/tools/qcoll")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--bs", type=int, default=1024)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--check", action="store_true", help="compare the model with qcoll quantize first")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([args.qcoll, "generate", "--ranks", str(args.ranks), "--bs", str(args.bs), "--hidden",
                        str(args.hidden), "--seed", str(args.seed), "--out", os.path.join(tmp, "act{rank}.npy")],
                       check=True, stdout=subprocess.DEVNULL)
        acts = [np.load(os.path.join(tmp, f"act{r}.npy")) for r in range(args.ranks)]
        if args.check:
            check_against_qcoll(args, tmp, acts)
    exact = sum(a.astype(np.float64) for a in acts)
    print(f"{args.ranks} ranks, x ({args.bs}, {args.hidden}) per rank, seed {args.seed}; "
          "error of the bf16 sum against the exact fp64 sum")
    print(f"{'fmt':<5} {'rule':<9} {'bytes/el':>8} {'groups clipping':>16} {'elems clipped':>14} "
          f"{'clip share of sq.err':>21} {'rel RMS err':>12} {'max abs err':>12} {'rel RMS w/o clip':>17}")
    for fmt in FORMATS:
        for rule, bpe in (("mx-floor", 0.5 + 1 / 32), ("mx-ceil", 0.5 + 1 / 32), ("fp32/32", 0.5 + 4 / 32),
                          ("kg/128", 0.5 + 4 / 128)):
            deq, groups, elems, clip_sq, all_sq, noclip = [], 0, 0, 0.0, 0.0, []
            for a in acts:
                d, clipped, s = quantize(a, fmt, rule)
                deq.append(d)
                g = a.shape[1] // (s.shape[1])
                groups += clipped.reshape(a.shape[0], -1, g).any(axis=2).sum()
                elems += clipped.sum()
                err = (d.astype(np.float64) - a) ** 2
                clip_sq += err[clipped].sum()
                all_sq += err.sum()
                noclip.append(np.where(clipped, a, d).astype(np.float32))  # clipped elements exact
            rel, mx = errors(acts, deq, exact)
            rel_nc, _ = errors(acts, noclip, exact)
            nelems = len(acts) * acts[0].size
            ngroups = nelems // (128 if rule == "kg/128" else 32)
            print(f"{fmt:<5} {rule:<9} {bpe:>8.4f} {groups / ngroups:>16.2e} {elems / nelems:>14.2e} "
                  f"{clip_sq / all_sq:>21.3f} {rel:>12.3e} {mx:>12.3e} {rel_nc:>17.3e}")
    print("groups clipping: fraction of groups with an element beyond max * scale (clipped to it);"
          " clip share: their part of the summed squared quantization error over all ranks;"
          " rel RMS w/o clip: the same sum with the clipped elements taken exactly")


if __name__ == "__main__":
    main()
