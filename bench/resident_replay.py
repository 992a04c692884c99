#!/usr/bin/env python3
"""bench/resident_replay.py: how a stub replays resident and mapped memory
(docs/memory-model.md), and how late its rows are by what they do.

    bench/resident_replay.py BUILD_DIR [--repeat N] [--trace CSV] [--profile P | --calibrate]
                             [--with LABEL=MEMSTUB[:PROFILE]] [--out FILE.md]

TRACE defaults to a synthetic trace written here (2 s, a row every 2 ms): the
heap grows to 64 MiB of which a quarter is written; the resident memory then
grows with nothing requested (lazy first touch) to 40 MiB; a 32 MiB mapping
appears and half of it is written; the resident memory falls to 8 MiB with
requested and mapped unchanged (release); then everything is freed.

Each round replays TRACE once per configuration, interleaved, each as a fresh
`memstub replay TRACE [--calibration P] --measure OUT` process, and compares
it with `memstub compare --json`. Configurations: no profile; the profile
(--profile, or --calibrate to run `memstub calibrate --quick` first); and any
--with (another memstub executable, an older build say, with or without a
profile). Figures per replay: rss |error| p90 as a share of the original's
peak, the peak error, mapped exact share, and the per-row time error (p50, p99
of |error|) of the rows that write pages (rss up), release pages (rss down)
and the others. The median over the rounds goes to stdout (or --out) as a
Markdown table. Standard library only. Timing figures on a loaded host are
noisy: rerun on a quiet one.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

MiB = 1 << 20


def synthetic(path):
    rows = ["time_ns,stack_bytes,heap_bytes,rss_bytes,mapped_bytes", "0,0,0,0,0"]
    t, heap, rss, mapped = 0, 0, 0, 0
    for i in range(1, 1001):
        t += 2000000
        if i <= 200:  # heap to 64 MiB, a quarter of it written
            heap = 64 * MiB * i // 200
            rss = heap // 4
        elif i <= 400:  # lazy first touch to 40 MiB
            rss = 16 * MiB + 24 * MiB * (i - 200) // 200
        elif i <= 600:  # a 32 MiB mapping, half written
            mapped = 32 * MiB
            rss = 40 * MiB + 16 * MiB * (i - 400) // 200
        elif i <= 900:  # release to 8 MiB
            rss = 56 * MiB - 48 * MiB * (i - 600) // 300
        else:  # freed
            heap, mapped, rss = 0, 0, 0
        rows.append("%d,%d,%d,%d,%d" % (t, (i % 5) * 256, heap, rss, mapped))
    with open(path, "w") as f:
        f.write("\n".join(rows) + "\n")


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


def row_kinds(orig):
    kinds = []
    for i, r in enumerate(orig):
        prev = orig[i - 1]["rss_bytes"] if i else 0
        kinds.append("write" if r["rss_bytes"] > prev else "release" if r["rss_bytes"] < prev
                     else "other")
    return kinds


def one(memstub, trace, profile, orig, kinds, tmp, tag):
    out = os.path.join(tmp, "r-%s.csv" % tag)
    cmd = [memstub, "replay", trace, "--measure", out]
    if profile:
        cmd += ["--calibration", profile]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    res = subprocess.run([memstub, "compare", trace, out, "--json"], check=True,
                         capture_output=True, text=True)
    j = json.loads(res.stdout)
    f = {}
    rss, mapped = j.get("rss", {}), j.get("mapped", {})
    if rss.get("known"):
        f["rss: p90 of abs. error, % of peak"] = 100 * (rss["p90_share_of_peak"] or 0)
        f["rss peak error %"] = 100 * (rss["replayed_peak_bytes"] - rss["original_peak_bytes"]) \
            / max(rss["original_peak_bytes"], 1)
    if mapped.get("known"):
        f["mapped exact %"] = 100 * mapped["exact_share"]
    rep = read_csv(out)
    err = {"write": [], "release": [], "other": []}
    for r in rep:
        p = r["point"]
        err[kinds[p]].append(abs(r["time_ns"] - orig[p]["time_ns"]))
    for k in ("write", "release", "other"):
        f["%s rows: p50 of abs. error, us" % k] = pct(err[k], 0.5) / 1000
        f["%s rows: p99 of abs. error, us" % k] = pct(err[k], 0.99) / 1000
    return f


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--trace")
    ap.add_argument("--profile")
    ap.add_argument("--calibrate", action="store_true")
    ap.add_argument("--with", dest="others", action="append", default=[])
    ap.add_argument("--out")
    a = ap.parse_args()
    memstub = os.path.join(a.build, "memstub")
    tmp = tempfile.mkdtemp(prefix="resident-bench.")
    trace = a.trace or os.path.join(tmp, "resident.csv")
    if not a.trace:
        synthetic(trace)
    profile = a.profile
    if a.calibrate:
        profile = os.path.join(tmp, "host.profile")
        subprocess.run([memstub, "calibrate", "--quick", "-o", profile], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    configs = [("no profile", memstub, None)]
    if profile:
        configs.append(("profile", memstub, profile))
    for w in a.others:
        label, _, rest = w.partition("=")
        exe, _, prof = rest.partition(":")
        configs.append((label, exe, prof or None))
    orig = read_csv(trace)
    kinds = row_kinds(orig)
    runs = {c[0]: [] for c in configs}
    for k in range(a.repeat):
        for label, exe, prof in configs:
            runs[label].append(one(exe, trace, prof, orig, kinds, tmp, "%d" % k))
    keys = []
    for label in runs:
        for f in runs[label]:
            keys += [x for x in f if x not in keys]
    load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else []
    lines = ["`bench/resident_replay.py %s` (load average at the end: %s; timing figures on a "
             "loaded host are noisy)" % (" ".join(sys.argv[1:]), " ".join(load) or "unknown"),
             "",
             "| figure (median of %d) | %s |" % (a.repeat, " | ".join(runs)),
             "|---|" + "---:|" * len(runs)]
    for key in keys:
        vals = []
        for label in runs:
            v = [f[key] for f in runs[label] if key in f]
            vals.append("%.2f" % statistics.median(v) if v else "-")
        lines.append("| %s | %s |" % (key, " | ".join(vals)))
    counts = {k: kinds.count(k) for k in ("write", "release", "other")}
    lines.append("")
    lines.append("Rows: %d write pages, %d release, %d other (trace %s)."
                 % (counts["write"], counts["release"], counts["other"],
                    a.trace or "synthetic, written by this script"))
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
