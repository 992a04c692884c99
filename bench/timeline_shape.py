#!/usr/bin/env python3
"""bench/timeline_shape.py: where a stub spends its time inside a region
(issue 27 item 3, issue 31). bench/system's hash host is recorded with
`--function hash_component --repeat 3 --reference 3`: its reference runs time
the component and read the clock every so many of its allocator calls
(reference.region_curve). Two stubs are made from that one trace: with the
curve (each row placed at the reference's time of its calls) and without it
(the curve's line taken out: the recorder's cost taken out evenly per call).
Then the real host and both stubs alternate REPEATS times. The real
component's phases (its table built, looked up, torn down) are timed by the
host (three clock reads, `metric component_*_ms`); a stub's by its own
replay (`--measure`: the point of the heap's peak, the first point after it
with less heap, its last point).

  bench/timeline_shape.py --build BUILD [--repeats 5] [--nodes 400000]

BUILD/bench-system/hosts/hash_host_real must exist (bench/system/run builds
it). Writes bench/results/timeline-shape.md (--out FILE elsewhere)."""
import argparse
import csv
import datetime
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit("%s: exit %d\n%s" % (" ".join(cmd), r.returncode, r.stderr[-2000:]))
    return r


def stub_phases(path):
    """A replay's phases (ms) from its measure file: build to the heap's peak,
    lookups to the first point after it with less heap, teardown to the end."""
    with open(path) as f:
        rows = list(csv.reader(l for l in f if not l.startswith("#")))
    h, rows = rows[0], rows[1:]
    ti, hi = h.index("time_ns"), h.index("heap_bytes")
    t = [int(r[ti]) for r in rows]
    heap = [int(r[hi]) for r in rows]
    peak = heap.index(max(heap))
    drop = next(i for i in range(peak, len(heap)) if heap[i] < heap[peak])
    return [(t[peak] - t[0]) / 1e6, (t[drop - 1] - t[peak]) / 1e6, (t[-1] - t[drop - 1]) / 1e6]


def real_phases(err):
    m = dict(re.findall(r"^metric (component_\w+_ms) ([0-9.]+)$", err, re.M))
    return [float(m["component_%s_ms" % k]) for k in ("build", "lookup", "teardown")]


def fmt(v):
    return "%.1f [%.1f-%.1f]" % (statistics.median(v), min(v), max(v))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--nodes", type=int, default=400000)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "results", "timeline-shape.md"))
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    memstub = os.path.join(b, "memstub")
    host = os.path.join(b, "bench-system", "hosts", "hash_host_real")
    for p in (memstub, host):
        if not os.path.exists(p):
            sys.exit("missing %s: build first (cmake --build %s; bench/system/run builds the hosts)"
                     % (p, a.build))
    args = ["--nodes", str(a.nodes), "--value-bytes", "40", "--beside-mib", "1",
            "--beside-passes", "1"]
    tmp = tempfile.mkdtemp()
    start = time.time()
    load0 = os.getloadavg()[0]
    try:
        rec = ["record", "-q", "--function", "hash_component", "--repeat", "3", "--reference", "3"]
        print("recording: memstub %s -- hash_host_real %s" % (" ".join(rec), " ".join(args)),
              file=sys.stderr)
        sh([memstub] + rec + ["-o", "h.csv", "--", host] + args, cwd=tmp)
        with open(os.path.join(tmp, "h.csv")) as f:
            text = f.read()
        curve = re.search(r"^# reference\.region_curve: (\d+) (\d+) (\d+) (.*)$", text, re.M)
        if not curve:
            sys.exit("the trace has no reference.region_curve: the recorder did not time the calls")
        with open(os.path.join(tmp, "even.csv"), "w") as f:
            f.write(re.sub(r"^# reference\.region_curve: .*\n", "", text, flags=re.M))
        os.rename(os.path.join(tmp, "h.csv"), os.path.join(tmp, "curve.csv"))
        lines = {}
        for k in ("curve", "even"):
            g = sh([memstub, "gen", k + ".csv", "-o", k + ".h"], cwd=tmp)
            lines[k] = next((l for l in g.stderr.splitlines() if "timeline:" in l), "")
            sh([memstub, "build", k + ".h", "-o", k + "_stub"], cwd=tmp)
        res = {"real": [], "curve": [], "even": []}
        for r in range(a.repeats):
            for who in ("real", "curve", "even"):
                print("repeat %d/%d: %s" % (r + 1, a.repeats, who), file=sys.stderr)
                if who == "real":
                    res[who].append(real_phases(sh([host] + args, cwd=tmp).stderr))
                else:
                    m = os.path.join(tmp, "m.csv")
                    sh([os.path.join(tmp, who + "_stub"), "--measure", m], cwd=tmp)
                    res[who].append(stub_phases(m))
        vals = curve.group(4).split()
        calls, span, stride = int(curve.group(1)), int(curve.group(2)), int(curve.group(3))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = []
    out.append("# Where a stub spends its time inside a region (issues 27, 31)\n")
    out.append("Written by `bench/timeline_shape.py --build %s --repeats %d --nodes %d` (%.0f s) on "
               "%s, %d CPUs, %s; 1-minute load average %.2f at the start, %.2f at the end.\n"
               % (a.build, a.repeats, a.nodes, time.time() - start, platform.platform(),
                  os.cpu_count(), when, load0, os.getloadavg()[0]))
    out.append(__doc__.split("\n\n")[0].replace("bench/timeline_shape.py: ", "").replace("\n", " ")
               + "\n")
    out.append("The kept recording's reference curve: %d calls, a span of %.1f ms, the clock read "
               "every %d calls (%d points).\n" % (calls, span / 1e6, stride, len(vals)))
    out.append("| phase (ms) | real component | stub, rows placed by the curve | ratio | stub, "
               "cost out evenly per call | ratio |")
    out.append("|---|---|---|---:|---|---:|")
    for i, name in enumerate(("build (400k mallocs)", "lookups (no call)",
                              "teardown (400k frees, then the buckets)", "in all")):
        def col(who):
            if i < 3:
                return [x[i] for x in res[who]]
            return [sum(x) for x in res[who]]
        rm = statistics.median(col("real"))
        out.append("| %s | %s | %s | %.2f | %s | %.2f |" % (
            name, fmt(col("real")), fmt(col("curve")), statistics.median(col("curve")) / rm,
            fmt(col("even")), statistics.median(col("even")) / rm))
    out.append("\nMedian [min-max] over the repeats; ratio: the stub's median over the real "
               "component's. What gen said of each timeline:\n")
    out.append("```\ncurve: %s\neven:  %s\n```" % (lines["curve"], lines["even"]))
    with open(a.out, "w") as f:
        f.write("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
