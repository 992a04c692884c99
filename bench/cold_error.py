#!/usr/bin/env python3
"""bench/cold_error.py: per-row signed time error of deadline-mode replays of a
trace, without and with calibration profiles (docs/calibration.md, "Cold
costs").

    bench/cold_error.py BUILD_DIR [--repeat N] [--trace CSV] [--timing MODE]
                        [--calibrate] [--with LABEL=MEMSTUB[:PROFILE]] [--out FILE.md]
                        [PROFILE ...]

Each round replays TRACE (default traces/samples/synthetic-4.8s.csv) once
without a profile and once with each PROFILE, interleaved, each as a fresh
`memstub replay TRACE [--calibration P] --timing MODE --measure OUT` process.
--calibrate runs `memstub calibrate -o` first and adds that profile. --with
adds a configuration run by another memstub executable (an older build, say),
with or without a profile; repeatable. For every
replay: the signed error of every row (replayed time_ns - original time_ns of
the same row; negative = early), its p1/p10/p50/p90/p99, the p99 of |error|
and the total duration error (the last row's error); rows are also split by
where the trace's heap block is (>= 128 KiB above the heap base: glibc serves
it from mmap). Per configuration, the median of each figure over the runs
goes to stdout (or --out) as a Markdown table. Standard library only.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile


def read_csv(path):
    rows = []
    with open(path) as f:
        header = None
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            if header is None:
                header = line.strip().split(",")
                continue
            rows.append(dict(zip(header, (int(v) for v in line.strip().split(",")))))
    return rows


def pct(v, q):
    if not v:
        return float("nan")
    s = sorted(v)
    return s[int(q * (len(s) - 1) + 0.5)]


def figures(orig, rep):
    hmin = min(r["heap_bytes"] for r in orig)
    err, arena, mmap = [], [], []
    for r in rep:
        p = r["point"]
        e = r["time_ns"] - orig[p]["time_ns"]
        err.append(e)
        (mmap if orig[p]["heap_bytes"] - hmin >= 131072 else arena).append(e)
    last = rep[-1]
    f = {q: pct(err, q / 100) for q in (1, 10, 50, 90, 99)}
    f["abs99"] = pct([abs(e) for e in err], 0.99)
    f["total"] = last["time_ns"] - orig[last["point"]]["time_ns"]
    for name, v in (("arena", arena), ("mmap", mmap)):
        for q in (50, 90, 99):
            f[f"{name}{q}"] = pct(v, q / 100)
    return f


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("profiles", nargs="*")
    ap.add_argument("--repeat", type=int, default=5)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--trace", default=os.path.join(here, "..", "traces", "samples",
                                                    "synthetic-4.8s.csv"))
    ap.add_argument("--timing", default="deadline")
    ap.add_argument("--calibrate", action="store_true")
    ap.add_argument("--with", dest="extra", action="append", default=[])
    ap.add_argument("--out", default="-")
    a = ap.parse_intermixed_args()
    memstub = os.path.join(a.build, "memstub")
    orig = read_csv(a.trace)
    with tempfile.TemporaryDirectory() as tmp:
        profiles = list(a.profiles)
        if a.calibrate or not profiles:
            p = os.path.join(tmp, "fresh.profile")
            print("cold_error: calibrating", file=sys.stderr)
            subprocess.run([memstub, "calibrate", "-o", p], check=True, stdout=subprocess.DEVNULL)
            profiles.append(p)
        # (label, executable, profile)
        confs = [("no profile", memstub, None)]
        confs += [(os.path.basename(p), memstub, p) for p in profiles]
        for e in a.extra:
            label, _, rest = e.partition("=")
            exe, _, prof = rest.partition(":")
            confs.append((label, exe, prof or None))
        runs = {k: [] for k in range(len(confs))}
        out = os.path.join(tmp, "out.csv")
        for r in range(a.repeat):
            for k, (label, exe, p) in enumerate(confs):
                cmd = [exe, "replay", a.trace, "--timing", a.timing, "--measure", out]
                if p:
                    cmd += ["--calibration", p]
                subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
                f = figures(orig, read_csv(out))
                runs[k].append(f)
                print(f"cold_error: run {r + 1}/{a.repeat} {label}: "
                      + " ".join(f"{n}={v / 1000:.1f}" for n, v in f.items()), file=sys.stderr)
    us = lambda v: f"{v / 1000:+.1f}"
    lines = [f"Signed error per row (replayed - original time_ns) in us, {a.timing} timing, "
             f"median over {a.repeat} runs of each run's figure; total: the last row's error.",
             "",
             "| configuration | p1 | p10 | p50 | p90 | p99 | abs p99 | total "
             "| arena rows p50 / p90 / p99 | mmap rows p50 / p90 / p99 |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for k, (name, _, _) in enumerate(confs):
        m = {n: statistics.median(f[n] for f in runs[k]) for n in runs[k][0]}
        lines.append(
            f"| {name} | {us(m[1])} | {us(m[10])} | {us(m[50])} | {us(m[90])} | {us(m[99])} "
            f"| {m['abs99'] / 1000:.1f} | {us(m['total'])} "
            f"| {us(m['arena50'])} / {us(m['arena90'])} / {us(m['arena99'])} "
            f"| {us(m['mmap50'])} / {us(m['mmap90'])} / {us(m['mmap99'])} |")
    text = "\n".join(lines) + "\n"
    if a.out == "-":
        sys.stdout.write(text)
    else:
        with open(a.out + ".tmp", "w") as f:
            f.write(text)
        os.replace(a.out + ".tmp", a.out)

if __name__ == "__main__":
    main()
