#!/usr/bin/env python3
"""Pools bench runs: per run, the median over rounds of the per-round ratio a/b (each pair of
segments from the same round and client count, as the report takes it); over the runs, the mean
of those medians with its standard error (sample standard deviation / sqrt(n)). This is how
bench/README.md pooled runs 22-30.

    python3 bench/scripts/pool.py RUN [RUN...]        # RUN: a results.json(.gz) or a directory holding one
    python3 bench/scripts/pool.py bench/results/claim-first-floor/run*.json.gz --goal 0.95

Prints, per comparison and client count, the pooled ratio, its SE, n, the per-run medians and
how many runs alone met --goal; then the round trips per call of each strategy (median over all
segments) and each run's start (time, load average).
"""
import argparse
import gzip
import json
import math
import os
import statistics
import sys

# (a, b, judged against the goal): each claim order against its own floor, then what is reported
COMPARISONS = [
    ("claim", "floor-claim-first", True),
    ("claim-work-first", "floor", True),
    ("claim-adaptive", "floor", True),
    ("claim", "floor", False),
    ("floor-claim-first", "floor", False),
    ("claim", "three-tx", False),
    ("floor", "bare", False),
    ("floor-claim-first", "bare", False),
    ("claim", "bare", False),
    ("claim-work-first", "bare", False),
    ("claim-adaptive", "bare", False),
    ("three-tx", "bare", False),
]


def load(path):
    if os.path.isdir(path):
        for name in ("results.json", "results.json.gz"):
            if os.path.exists(os.path.join(path, name)):
                path = os.path.join(path, name)
                break
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return path, json.load(f)


def per_round(run, phase="main"):
    """{(strategy, threads): {round: segment}} for one run's phase."""
    out = {}
    for s in run["segments"]:
        if s["phase"] == phase:
            out.setdefault((s["strategy"], s["threads"]), {})[s["round"]] = s
    return out


def run_median(groups, a, b, threads):
    ga, gb = groups.get((a, threads)), groups.get((b, threads))
    if not ga or not gb:
        return None
    ratios = [ga[r]["ops_per_s"] / gb[r]["ops_per_s"] for r in ga if r in gb and gb[r]["ops_per_s"] > 0]
    return statistics.median(ratios) if ratios else None


ORDER = ["bare", "floor", "floor-claim-first", "claim", "claim-work-first", "claim-adaptive", "three-tx"]


def names_in(groups):
    return sorted({s for g in groups for (s, _) in g}, key=lambda s: (ORDER.index(s) if s in ORDER else 99, s))


def pooled(values):
    n = len(values)
    mean = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(n) if n > 1 else float("nan")
    return mean, se, n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--goal", type=float, default=0.95, help="the goal of the judged comparisons (default 0.95)")
    args = ap.parse_args()
    runs = [load(p) for p in args.runs]
    groups = [per_round(r) for _, r in runs]
    threads = sorted({t for g in groups for (_, t) in g})
    print(f"{len(runs)} runs; per run the median of per-round ratios, pooled: mean of the runs' medians, "
          f"SE = sd / sqrt(n)\n")
    print("| comparison | clients | pooled | SE | n | (pooled - goal) / SE | runs >= goal | per-run medians |")
    print("|---|---|---|---|---|---|---|---|")
    for a, b, judged in COMPARISONS:
        for t in threads:
            meds = [m for m in (run_median(g, a, b, t) for g in groups) if m is not None]
            if not meds:
                continue
            mean, se, n = pooled(meds)
            z = (mean - args.goal) / se if judged and se > 0 else None
            met = sum(1 for m in meds if m >= args.goal) if judged else None
            print(f"| {a}/{b} | {t} | {mean:.3f} | {se:.3f} | {n} | "
                  f"{'' if z is None else f'{z:+.1f}'} | {'' if met is None else f'{met}/{n}'} | "
                  f"{', '.join(f'{m:.2f}' for m in meds)} |")
    print("\none table: pooled ratios at " + " / ".join(str(t) for t in threads)
          + " clients (SE in brackets), round trips per call\n")
    bases = ["bare", "floor", "floor-claim-first"]
    print("| strategy | round trips | " + " | ".join(f"x {b}" for b in bases) + " |")
    print("|---|---|" + "---|" * len(bases))
    for s in names_in(groups):
        rts = [seg["round_trips_per_call"] for g in groups for (n, _), segs in g.items() if n == s
               for seg in segs.values()]
        cells = []
        for b in bases:
            if b == s:
                cells.append("1")
                continue
            vals = []
            for t in threads:
                meds = [m for m in (run_median(g, s, b, t) for g in groups) if m is not None]
                if not meds:
                    break
                mean, se, _ = pooled(meds)
                vals.append(f"{mean:.3f} ({se:.3f})")
            cells.append(" / ".join(vals) if len(vals) == len(threads) else "-")
        print(f"| {s} | {statistics.median(rts):.2f} | " + " | ".join(cells) + " |")

    print("\nround trips per call (median over every segment of every run)\n")
    print("| strategy | " + " | ".join(f"{t} client{'s' if t > 1 else ''}" for t in threads) + " |")
    print("|---|" + "---|" * len(threads))
    names = names_in(groups)
    for s in names:
        cells = []
        for t in threads:
            v = [seg["round_trips_per_call"] for g in groups for seg in g.get((s, t), {}).values()]
            cells.append(f"{statistics.median(v):.2f}" if v else "-")
        print(f"| {s} | " + " | ".join(cells) + " |")
    print("\nruns (p99: claim against floor-claim-first at 8 clients, merged histograms, goal <= 1.10;"
          " CPU: claim minus floor-claim-first per call at 8 clients, client / server)\n")
    for path, r in runs:
        env = r["environment"]
        p99 = next((g["value"] for g in r.get("goals", []) if g["goal"].startswith("claim p99 /")), None)
        rows = {(x["strategy"], x["threads"]): x for x in r.get("summary", []) if x["phase"] == "main"}
        a, b = rows.get(("claim", 8)), rows.get(("floor-claim-first", 8))
        cpu = "-"
        if a and b and a.get("client_cpu_us_per_call") is not None and b.get("client_cpu_us_per_call") is not None:
            cpu = (f"{a['client_cpu_us_per_call'] - b['client_cpu_us_per_call']:+.0f} / "
                   f"{(a.get('server_cpu_us_per_call') or 0) - (b.get('server_cpu_us_per_call') or 0):+.0f} us")
        print(f"- {path}: started {env.get('started_at', '')[:19]}Z, load average {env.get('load_average_start'):.2f}"
              f" at start, {env.get('total_seconds', 0):.0f} s, {r['options'].get('rounds')} rounds;"
              f" p99 {'-' if p99 is None else f'{p99:.2f}'}; CPU {cpu}")


if __name__ == "__main__":
    sys.exit(main())
