#!/usr/bin/env python3
"""bench/timeline_shape.py: where a stub spends its time (issue 27 item 3,
issue 31). bench/system's hash host is recorded with `--function
hash_component --repeat 3 --reference 3` (its reference runs time the
component and read the clock every so many of its allocator calls:
reference.curve), and again whole with `--repeat 3 --reference 3` (after
each reference run, one run more reads the clock at the main thread's
calls). Two stubs are made from each trace: with the curve (each row placed at the reference's time of its
calls) and without it (the curve's line taken out: the recorder's cost taken
out evenly per call). Then the real host and both stubs alternate REPEATS
times. The real component's phases (its table built, looked up, torn down)
are timed by the host (three clock reads, `metric component_*_ms`); a stub's
by its own replay (`--measure`: the point of the heap's peak, the first
point after it with less heap, its last point).

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


def stub_phases(path, whole=False):
    """A replay's phases (ms) from its measure file, as replayed and as gen
    targeted them (target_time_ns): to the heap's peak (the build), the
    lookups to the last point before the first with less heap, then to the
    end (the teardown; a whole host's: from its first point to its end)."""
    with open(path) as f:
        rows = list(csv.reader(l for l in f if not l.startswith("#")))
    h, rows = rows[0], rows[1:]
    hi = h.index("heap_bytes")
    heap = [int(r[hi]) for r in rows]
    peak = heap.index(max(heap))
    drop = next(i for i in range(peak, len(heap)) if heap[i] < heap[peak])
    out = []
    for col in ("time_ns", "target_time_ns"):
        t = [int(r[h.index(col)]) for r in rows]
        last = (t[-1] - t[0]) / 1e6 if whole else (t[-1] - t[drop - 1]) / 1e6
        out.append([(t[peak] - t[0]) / 1e6, (t[drop - 1] - t[peak]) / 1e6, last])
    return out


def real_phases(err, whole):
    m = {k: float(v) for k, v in re.findall(r"^metric (\w+) ([0-9.]+)$", err, re.M)}
    p = [m["component_%s_ms" % k] for k in ("build", "lookup", "teardown")]
    if whole:  # from main's start: the host's before phase and the build, the lookups, all
        return [m["before_ms"] + p[0], p[1], m["total_ms"]]
    return p


def fmt(v):
    return "%.1f [%.1f-%.1f]" % (statistics.median(v), min(v), max(v))


def run_case(memstub, host, args, repeats, tmp, whole):
    """One recording of the hash host (the component with --function, or the
    whole host), its two stubs, and the alternation: phases per run."""
    rec = ["record", "-q", "--repeat", "3", "--reference", "3"]
    if not whole:
        rec[2:2] = ["--function", "hash_component"]
    print("recording: memstub %s -- hash_host_real %s" % (" ".join(rec), " ".join(args)),
          file=sys.stderr)
    sh([memstub] + rec + ["-o", "h.csv", "--", host] + args, cwd=tmp)
    with open(os.path.join(tmp, "h.csv")) as f:
        text = f.read()
    curve = re.search(r"^# reference\.curve: (\d+) (\d+) (\d+) (.*)$", text, re.M)
    if not curve:
        sys.exit("the trace has no reference.curve: the recorder did not read the clock at the calls")
    with open(os.path.join(tmp, "even.csv"), "w") as f:
        f.write(re.sub(r"^# reference\.curve: .*\n", "", text, flags=re.M))
    os.rename(os.path.join(tmp, "h.csv"), os.path.join(tmp, "curve.csv"))
    lines = {}
    for k in ("curve", "even"):
        g = sh([memstub, "gen", k + ".csv", "-o", k + ".h"], cwd=tmp)
        lines[k] = next((l for l in g.stderr.splitlines() if "timeline:" in l), "")
        sh([memstub, "build", k + ".h", "-o", k + "_stub"], cwd=tmp)
    res = {"real": [], "curve": [], "even": [], "curve_target": [], "even_target": []}
    for r in range(repeats):
        for who in ("real", "curve", "even"):
            print("%s: repeat %d/%d: %s" % ("whole" if whole else "region", r + 1, repeats, who),
                  file=sys.stderr)
            if who == "real":
                res[who].append(real_phases(sh([host] + args, cwd=tmp).stderr, whole))
            else:
                m = os.path.join(tmp, "m.csv")
                sh([os.path.join(tmp, who + "_stub"), "--measure", m], cwd=tmp)
                got, target = stub_phases(m, whole)
                res[who].append(got)
                res[who + "_target"].append(target)
    c = curve.groups()
    return res, lines, (int(c[0]), int(c[1]), int(c[2]), len(c[3].split()))


def table(res, names, total):
    out = ["| phase (ms) | real | stub, rows placed by the clock at the calls (gen's target) | "
           "ratio | stub, cost out evenly per call (gen's target) | ratio |",
           "|---|---|---|---:|---|---:|"]
    for i, name in enumerate(names):
        def col(who):
            return [sum(x) for x in res[who]] if total and i == len(names) - 1 else \
                [x[i] for x in res[who]]
        rm = statistics.median(col("real"))
        cells = []
        for who in ("curve", "even"):
            cells.append("%s (%.1f)" % (fmt(col(who)), statistics.median(col(who + "_target"))))
            cells.append("%.2f" % (statistics.median(col(who)) / rm))
        out.append("| %s | %s | %s |" % (name, fmt(col("real")), " | ".join(cells)))
    # Each phase's share of the whole: the shape, whatever the machine's speed at the moment.
    n = len(names) - 1
    out.append("\n| share of the whole (medians) | real | stub, clock at the calls | its target | "
               "stub, even cost | its target |")
    out.append("|---|---:|---:|---:|---:|---:|")
    for i, name in enumerate(names[:n]):
        row = []
        for who in ("real", "curve", "curve_target", "even", "even_target"):
            whole = [sum(x) if total else x[n] for x in res[who]]
            row.append("%.1f %%" % (100 * statistics.median(
                [x[i] / w for x, w in zip(res[who], whole)])))
        out.append("| %s | %s |" % (name, " | ".join(row)))
    return out


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
    # No beside thread: a whole run's clock at the calls is of a process of one thread.
    args = ["--nodes", str(a.nodes), "--value-bytes", "40", "--beside-mib", "0"]
    start = time.time()
    load0 = os.getloadavg()[0]
    cases = []
    for whole in (False, True):
        tmp = tempfile.mkdtemp()
        try:
            cases.append(run_case(memstub, host, args, a.repeats, tmp, whole))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = ["# Where a stub spends its time (issues 27, 31)\n"]
    out.append("Written by `bench/timeline_shape.py --build %s --repeats %d --nodes %d` (%.0f s) on "
               "%s, %d CPUs, %s; 1-minute load average %.2f at the start, %.2f at the end.\n"
               % (a.build, a.repeats, a.nodes, time.time() - start, platform.platform(),
                  os.cpu_count(), when, load0, os.getloadavg()[0]))
    out.append(__doc__.split("\n\n")[0].replace("bench/timeline_shape.py: w", "W")
               .replace("\n", " ") + "\n")
    (res, lines, c), (wres, wlines, wc) = cases
    out.append("## The component, recorded with --function\n")
    out.append("The kept recording's clock at the calls: %d calls, a span of %.1f ms, read every "
               "%d calls (%d points).\n" % (c[0], c[1] / 1e6, c[2], c[3]))
    out += table(res, ("build (400k mallocs)", "lookups (no call)",
                       "teardown (400k frees, then the buckets)", "in all"), True)
    out.append("\n```\ncurve: %s\neven:  %s\n```\n" % (lines["curve"], lines["even"]))
    out.append("## The whole host, recorded with the defaults\n")
    out.append("The same host recorded whole (`memstub record --repeat 3 --reference 3`: after "
               "each reference run one run more reads the clock at the main thread's calls): %d "
               "calls, a span of %.1f ms, read every %d calls (%d points). The real host's phases from main's start (its before "
               "phase and the build, as the host times them; `total_ms` for all); a stub's from its "
               "first point.\n" % (wc[0], wc[1] / 1e6, wc[2], wc[3]))
    out += table(wres, ("to the heap's peak (the host's before phase and the build)",
                        "lookups (no call)", "in all"), False)
    out.append("\n```\ncurve: %s\neven:  %s\n```\n" % (wlines["curve"], wlines["even"]))
    out.append("Median [min-max] over the repeats; ratio: the stub's median over the real one's.")
    with open(a.out, "w") as f:
        f.write("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
