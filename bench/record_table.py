#!/usr/bin/env python3
"""bench/record_table.py: the recorder's exactness and its cost per
allocator call at a large live set (issue 27), measured from outside.

    python3 bench/record_table.py BUILD_DIR [--repeats 5] [--exact 20]
        [--base-lib OTHER/libmemstub_record.so] [--out FILE]

1. Exactness: `record_table 1340000 1 parse` (a parser's hash table of
   1.34 M entries with their keys as blocks of their own, 16 MiB of buckets,
   then sorted through a 10 MiB buffer), recorded --exact times in a row;
   each trace's record.peak_heap_bytes against the exact peak the program
   computes itself, and the unmatched frees and stale blocks the recorder
   reports; with --base-lib the other recorder's as many recordings too.
2. Cost: record_table 400000 4 (400k live nodes, 3.2 M allocator calls),
   natively and recorded with defaults, with --function component (every
   call a region: generations on) and with --thread all, repeats
   alternating; per recording the median wall and CPU (wait4), the added
   time per allocator call ((recorded - native) / calls, wall and CPU), the
   recorder's own figure (record.cost_ns_per_event) and its tables' bytes
   per live block at the peak (record.table_bytes_max / live nodes).
   --base-lib also records with another build's recorder (the library
   before a change), through MEMSTUB_LIBDIR.

Writes bench/results/record-table.md (--out elsewhere)."""
import argparse, os, re, shutil, statistics, subprocess, sys, tempfile, time

def run_wait4(cmd, env=None):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    err = p.stderr.read().decode()
    p.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, err, code

def meta(path, key):
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                break
            m = re.match(r"# %s: (\S+)" % re.escape(key), line)
            if m:
                return m.group(1)
    return None

def med(xs):
    return statistics.median(xs) if xs else float("nan")

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--exact", type=int, default=20)
    ap.add_argument("--base-lib")
    ap.add_argument("--base-label", help="what the base library is (for the results)")
    ap.add_argument("--out")
    a = ap.parse_args()
    B = os.path.abspath(a.build)
    memstub = os.path.join(B, "memstub")
    prog = os.path.join(B, "bench", "record_table")
    for f in (memstub, prog):
        if not os.path.exists(f):
            sys.exit(f"missing {f}: build first (cmake --build {a.build})")
    here = os.path.dirname(os.path.abspath(__file__))
    out = a.out or os.path.join(here, "results", "record-table.md")
    tmp = tempfile.mkdtemp()
    lines = []
    try:
        # 1. exactness
        def exactness(libdir):
            rows, want = [], None
            for k in range(a.exact):
                tr = os.path.join(tmp, "x.csv")
                env = dict(os.environ)
                if libdir:
                    env["MEMSTUB_LIBDIR"] = libdir
                p = subprocess.run([memstub, "record", "-q", "-o", tr, "--", prog, "1340000", "1", "parse"],
                                   capture_output=True, text=True, env=env)
                m = re.search(r"peak (\d+)", p.stdout)
                if p.returncode != 0 or not m:
                    rows.append((k + 1, "failed: " + p.stderr.strip()[:60], "", "", ""))
                    continue
                want = int(m.group(1))
                got = int(meta(tr, "record.peak_heap_bytes") or -1)
                rows.append((k + 1, got - want, meta(tr, "record.unknown_frees") or "0",
                             meta(tr, "record.table_overflow") or meta(tr, "record.stale_blocks") or "0",
                             meta(tr, "record.table_bytes_max") or "-"))
            return rows, want
        rows, want = exactness(None)
        exact = sum(1 for r in rows if r[1] == 0)
        lines.append("## Exactness: a 1.34 M-entry hash table, recorded again and again\n")
        lines.append(f"`record_table 1340000 1 parse`: the program's own exact peak of requested bytes is "
                     f"{want} B; {exact} of {len(rows)} traces of this recorder have exactly that peak.\n")
        if a.base_lib:
            brows, _ = exactness(os.path.dirname(os.path.abspath(a.base_lib)))
            bexact = sum(1 for r in brows if r[1] == 0)
            label = a.base_label or a.base_lib
            lines.append(f"The base library ({label}): {bexact} of {len(brows)} exact; "
                         f"the others: " + (", ".join(f"{r[1]:+d} B ({r[3]} blocks the table could not hold)"
                                               for r in brows if r[1] != 0 and isinstance(r[1], int)) or "none") + ".\n")
        lines.append("| recording | peak heap - exact (B) | unmatched frees | stale blocks | table bytes at most |")
        lines.append("|---:|---:|---:|---:|---:|")
        for r in rows:
            lines.append("| %s | %s | %s | %s | %s |" % r)
        # 2. cost
        n, rounds = 400000, 4
        calls = rounds * (2 * n + 2)
        kinds = [("native", None, []), ("defaults", None, []),
                 ("--function component", None, ["--function", "component"]),
                 ("--thread all", None, ["--thread", "all"])]
        if a.base_lib:
            kinds.append((f"defaults, base library ({a.base_label or 'base'})",
                          os.path.dirname(os.path.abspath(a.base_lib)), []))
        W = {k[0]: [] for k in kinds}
        C = {k[0]: [] for k in kinds}
        M = {k[0]: [] for k in kinds}
        T = {k[0]: [] for k in kinds}
        for r in range(a.repeats):
            for name, libdir, opts in kinds:
                env = dict(os.environ)
                if libdir:
                    env["MEMSTUB_LIBDIR"] = libdir
                tr = os.path.join(tmp, "c.csv")
                cmd = [prog, str(n), str(rounds)] if name == "native" else \
                      [memstub, "record", "-q", "-o", tr] + opts + ["--", prog, str(n), str(rounds)]
                wall, cpu, err, code = run_wait4(cmd, env)
                if code != 0:
                    sys.exit(f"{name}: exit {code}: {err}")
                W[name].append(wall)
                C[name].append(cpu)
                if name != "native":
                    v = meta(tr, "record.cost_ns_per_event")
                    if v:
                        M[name].append(float(v))
                    tb = meta(tr, "record.table_bytes_max")
                    if tb:
                        T[name].append(int(tb))
        nw, nc = med(W["native"]), med(C["native"])
        lines.append("\n## Cost per allocator call with 400k live blocks\n")
        lines.append(f"`record_table {n} {rounds}`: {calls:,} allocator calls, {n:,} blocks live at "
                     f"the peak; medians of {a.repeats} alternating runs, wall and CPU (user + sys, "
                     f"wait4) of `memstub record` with its child, as a user runs it.\n")
        lines.append("| recording | wall s [min-max] | CPU s | added per call, wall | added per call, CPU "
                     "| recorder's own figure (ns/event) | tables, bytes per live block |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|")
        for name, _, _ in kinds:
            w = sorted(W[name])
            add_w = (med(W[name]) - nw) / calls * 1e9
            add_c = (med(C[name]) - nc) / calls * 1e9
            own = "%.1f" % med(M[name]) if M[name] else "-"
            tb = "%.1f" % (med(T[name]) / n) if T[name] else "-"
            lines.append(f"| {name} | {med(W[name]):.3f} [{w[0]:.3f}-{w[-1]:.3f}] | {med(C[name]):.3f} | "
                         + ("-" if name == "native" else f"{add_w:.0f} ns") + " | "
                         + ("-" if name == "native" else f"{add_c:.0f} ns") + f" | {own} | {tb} |")
        load = os.getloadavg()
        head = [f"# The recorder's exactness and cost at a large live set (issue 27)\n",
                f"`python3 bench/record_table.py {a.build} --repeats {a.repeats} --exact {a.exact}"
                + (f" --base-lib {a.base_lib}" if a.base_lib else "")
                + (f" --base-label '{a.base_label}'" if a.base_label else "") + "`, "
                f"{time.strftime('%Y-%m-%d %H:%M')}, load average {load[0]:.2f} at the end, "
                f"{os.cpu_count()} CPUs.\n"]
        text = "\n".join(head + lines) + "\n"
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            f.write(text)
        print(text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

if __name__ == "__main__":
    main()
