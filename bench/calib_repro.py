#!/usr/bin/env python3
"""bench/calib_repro.py: how reproducible `memstub calibrate` is
(docs/calibration.md, "Reproducibility"; bench/results/calibration-repro.md).

    bench/calib_repro.py BUILD_DIR [--rounds N] [--modes quick,full] [--keep DIR]
                         [--trace CSV] [--out FILE.md] [--label TEXT]
    bench/calib_repro.py --table [--trace CSV --memstub EXE] [--out FILE.md] PROFILE ...

Each round runs `memstub calibrate [--quick] -o P` once per mode, alternating
(quick, full, quick, full, ...), so that drift on the shared host falls on
both alike; the wall time and the load average before each run are kept.
Then, per figure (every time figure of the profile, the allocator calls'
figures), over the runs of a mode: the median and the spread, (max - min) /
|median|; and the median of quick against full. A figure is marked "used"
when compensation or the replay reads it (generator/compensate.c,
generator/work.c, the runtime's call costs), else "descr." (descriptive).
Also, per profile, the work `memstub gen TRACE -c P` predicts for TRACE
(default traces/samples/synthetic-4.8s.csv) in deadline timing (mostly the
cold figures) and usleep timing (the hot ones): the spread of what the
replay actually takes out of the delays. --table makes the tables from
profiles already measured (named quick-* and full-*). Standard library only.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

# Figures compensation or the replay reads (the rest are descriptive).
COST_FIELDS = [
    "basic", "heap_alloc_nofault", "heap_alloc_fault", "heap_use_base", "heap_use_per_fault",
    "heap_shrink", "heap_mmap_alloc_nofault", "heap_mmap_alloc_fault", "heap_mmap_use_base",
    "heap_mmap_use_per_fault", "heap_mmap_shrink_base", "heap_mmap_shrink_per_page",
    "heap_mmap_shrink_inpage", "heap_to_mmap_base", "heap_to_mmap_per_page", "heap_from_mmap",
    "stack_alloc_nofault", "stack_alloc_fault", "stack_use_base", "stack_use_per_fault",
    "stack_pop",
]
USED = set()
for f in COST_FIELDS:
    USED.add("time_%s_ns" % f)
    USED.add("time_cold_%s_ns" % f)
USED |= {"time_wait_late_ns", "time_measure_trace_ns", "time_sleep_overshoot_base_ns",
         "time_sleep_overshoot_per_ms_ns"}


def used(key):
    return key in USED or key.startswith("call_")


def read_profile(path):
    v = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            k, x = (s.strip() for s in line.split("=", 1))
            try:
                v[k] = float(x)
            except ValueError:
                v[k] = x
    return v


def figure_keys(p):
    """The figures compared: time figures in ns, the calls, the spin rate."""
    keys = []
    for k, x in p.items():
        if not isinstance(x, float):
            continue
        if k in ("cold_delay_ns", "cold_min_delay_ns", "cycles_per_ns") or k.endswith("_ci95_ns"):
            continue
        if k.endswith("_ns") or k == "spin_steps_per_ns":
            keys.append(k)
    return keys


def predicted(memstub, trace, profile, timing):
    """The work `memstub gen` predicts for trace with profile (ns), from
    the header's compensation line."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "s.h")
        r = subprocess.run([memstub, "gen", trace, "-c", profile, "--timing", timing, "-o", out],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            sys.exit("memstub gen failed: " + r.stderr)
        with open(out) as f:
            m = re.search(r"(-?\d+) ns of predicted work", f.read())
        return float(m.group(1)) if m else float("nan")


def ci_key(k):
    """The key of figure k's 95 % half-width (profiles since issue 28)."""
    return k[:-3] + "_ci95_ns" if k.endswith("_ns") else k + "_ci95"


def spread(v):
    med = statistics.median(v)
    return med, (max(v) - min(v)) / abs(med) if med else (0.0 if max(v) == min(v) else float("inf"))


def fmt(x):
    if x != x:
        return "-"
    a = abs(x)
    if a >= 100:
        return "%.0f" % x
    if a >= 10:
        return "%.1f" % x
    return "%.2f" % x


def pct(x):
    return "-" if x != x else ("inf" if x == float("inf") else "%.1f %%" % (100 * x))


# A figure is reproducible when its runs lie within 5 % of its median, or
# within 25 ns (below a counter read and a basic point: figures near 0).
WITHIN_REL, WITHIN_NS = 0.05, 25.0


def summary(rows, mode, which):
    """Median and p90 over the figures of their spread in mode, and how many
    are reproducible (within 5 % or 25 ns)."""
    sel = [r for r in rows if r[mode] and which(r)]
    v = sorted(r[mode][1] for r in sel)
    if not v:
        return "-", "-", 0, "-"
    ok = sum(1 for r in sel if r[mode][1] <= WITHIN_REL or
             (r["key"].endswith("_ns") and r[mode][1] * abs(r[mode][0]) <= WITHIN_NS))
    return (pct(statistics.median(v)), pct(v[int(0.9 * (len(v) - 1) + 0.5)]), len(v),
            "%d of %d" % (ok, len(sel)))


def table(runs, trace, memstub, out, label, command):
    modes = [m for m in ("quick", "full") if any(r["mode"] == m for r in runs)]
    profs = {m: [read_profile(r["path"]) for r in runs if r["mode"] == m] for m in modes}
    keys = figure_keys(profs[modes[0]][0])
    rows = []
    for k in keys:
        row = {"key": k}
        for m in modes:
            v = [p[k] for p in profs[m] if k in p]
            row[m] = spread(v) if v else None
            ci = [p[ci_key(k)] / abs(p[k]) for p in profs[m]
                  if ci_key(k) in p and p[ci_key(k)] >= 0 and p[k]]
            row[m + "_ci"] = statistics.median(ci) if ci else float("nan")
        rows.append(row)
    w = []
    w.append("## %s\n" % label)
    if command:
        w.append("`%s`\n" % command)
    if all(r["wall"] == r["wall"] for r in runs):  # measured here, not --table
        w.append("| run | mode | wall s | load before |")
        w.append("|---|---|---:|---:|")
        for i, r in enumerate(runs):
            w.append("| %d | %s | %.1f | %.2f |" % (i + 1, r["mode"], r["wall"], r["load"]))
        w.append("")
    else:
        w.append("%d quick and %d full profiles.\n" % (
            sum(r["mode"] == "quick" for r in runs), sum(r["mode"] == "full" for r in runs)))
    w.append("Spread: (max - min) / |median| over the runs of a mode; median over the figures "
             "(and p90).\n")
    w.append("| figures | n | " +
             " | ".join("%s median | %s p90 | %s within 5 %% or 25 ns" % (m, m, m) for m in modes)
             + " |")
    w.append("|---|---:|" + "---:|---:|---:|" * len(modes))
    for name, which in (("used by the replay", lambda r: used(r["key"])),
                        ("descriptive", lambda r: not used(r["key"])),
                        ("all", lambda r: True)):
        cells = []
        n = 0
        for m in modes:
            a, b, n, ok = summary(rows, m, which)
            cells += [a, b, ok]
        w.append("| %s | %d | %s |" % (name, n, " | ".join(cells)))
    w.append("")
    # As the issue measured it: two runs of a mode differ by |a - b| / mean at
    # the median over the figures; the median over every pair of runs.
    for m in modes:
        ps = profs[m]
        for name, which in (("the used figures", used), ("all figures", lambda k: True)):
            per_pair = []
            for i in range(len(ps)):
                for j in range(i + 1, len(ps)):
                    d = [abs(ps[i][k] - ps[j][k]) / abs((ps[i][k] + ps[j][k]) / 2)
                         for k in keys if which(k) and k in ps[i] and k in ps[j] and
                         ps[i][k] + ps[j][k] != 0]
                    per_pair.append(statistics.median(d))
            if per_pair:
                w.append("Two %s runs differ by %s at the median over %s (median over "
                         "%d pairs; range %s to %s).\n" % (
                             m, pct(statistics.median(per_pair)), name, len(per_pair),
                             pct(min(per_pair)), pct(max(per_pair))))
    if len(modes) == 2:
        pairs = [statistics.median([abs(q[k] - f[k]) / abs((q[k] + f[k]) / 2) for k in keys
                                    if used(k) and k in q and k in f and q[k] + f[k] != 0])
                 for q in profs["quick"] for f in profs["full"]]
        w.append("A quick and a full run differ by %s at the median over the used figures "
                 "(median over %d pairs).\n" % (pct(statistics.median(pairs)), len(pairs)))
    if memstub and trace:
        w.append("Work `memstub gen %s -c P` predicts (ms), per run:\n" % os.path.relpath(trace))
        w.append("| timing | " + " | ".join("%s median | %s spread" % (m, m) for m in modes) +
                 " | quick / full |")
        w.append("|---|" + "---:|---:|" * len(modes) + "---:|")
        for timing in ("deadline", "usleep"):
            cells, med = [], {}
            for m in modes:
                v = [predicted(memstub, trace, r["path"], timing) / 1e6 for r in runs
                     if r["mode"] == m]
                med[m], s = spread(v)
                cells += ["%.2f (%s)" % (med[m], ", ".join("%.2f" % x for x in v)), pct(s)]
            ratio = "%.3f" % (med["quick"] / med["full"]) if len(modes) == 2 else "-"
            w.append("| %s | %s | %s |" % (timing, " | ".join(cells), ratio))
        w.append("")
    w.append("Per figure: the median over the runs, their spread, and the median of the "
             "profiles' own 95 % half-widths (NAME_ci95_ns over the figure; - where the "
             "profile has none).\n")
    w.append("| figure | use | " +
             " | ".join("%s median | %s spread | %s ±ci" % (m, m, m) for m in modes) +
             (" | quick / full |" if len(modes) == 2 else " |"))
    w.append("|---|---|" + "---:|---:|---:|" * len(modes) + ("---:|" if len(modes) == 2 else ""))
    for r in rows:
        cells = []
        for m in modes:
            cells += ([fmt(r[m][0]), pct(r[m][1]), pct(r[m + "_ci"])] if r[m]
                      else ["-", "-", "-"])
        ratio = ""
        if len(modes) == 2 and r["quick"] and r["full"]:
            ratio = " | " + (fmt(r["quick"][0] / r["full"][0]) if r["full"][0] else "-")
        w.append("| %s | %s | %s%s |" % (r["key"], "used" if used(r["key"]) else "descr.",
                                         " | ".join(cells), ratio))
    text = "\n".join(w) + "\n"
    if out:
        with open(out, "a") as f:
            f.write(text + "\n")
    sys.stdout.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", nargs="?")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--modes", default="quick,full")
    ap.add_argument("--keep")
    ap.add_argument("--trace")
    ap.add_argument("--out")
    ap.add_argument("--label", default="calibration reproducibility")
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--memstub")
    ap.add_argument("profiles", nargs="*")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    trace = a.trace or os.path.join(here, "..", "traces", "samples", "synthetic-4.8s.csv")
    if a.table:
        paths = ([a.build] if a.build else []) + a.profiles  # no BUILD_DIR with --table
        runs = [{"mode": "quick" if os.path.basename(p).startswith("quick") else "full",
                 "path": p, "wall": float("nan"), "load": float("nan")} for p in paths]
        table(runs, trace if a.memstub else None, a.memstub, a.out, a.label, None)
        return
    if not a.build:
        ap.error("BUILD_DIR or --table PROFILE...")
    memstub = os.path.join(a.build, "memstub")
    keep = a.keep or tempfile.mkdtemp(prefix="calib-repro-")
    os.makedirs(keep, exist_ok=True)
    runs = []
    for i in range(a.rounds):
        for m in a.modes.split(","):
            path = os.path.join(keep, "%s-%d.profile" % (m, i + 1))
            load = os.getloadavg()[0]
            t0 = time.monotonic()
            cmd = [memstub, "calibrate", "-o", path] + (["--quick"] if m == "quick" else [])
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, MEMSTUB_QUIET="1"))
            if r.returncode != 0:
                sys.exit("memstub calibrate failed: " + r.stderr)
            runs.append({"mode": m, "path": path, "wall": time.monotonic() - t0, "load": load})
            sys.stderr.write("%s %d: %.1f s\n" % (m, i + 1, runs[-1]["wall"]))
    command = "python3 bench/calib_repro.py %s --rounds %d --modes %s" % (a.build, a.rounds,
                                                                           a.modes)
    table(runs, trace, memstub, a.out, a.label, command)
    sys.stderr.write("profiles in %s\n" % keep)


if __name__ == "__main__":
    main()
