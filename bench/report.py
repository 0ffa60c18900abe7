"""Turns bench/results/*.json into docs/benchmarks.md and docs/benchmarks.png.

    python bench/report.py

The PNG shows one bar per measured ratio (pydelta time / reference time; below 1 is
faster) with the target, if the issue set one, as a tick.
"""

from __future__ import annotations

import glob
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(HERE, "..", "docs")


def load():
    runs = []
    for path in sorted(glob.glob(os.path.join(HERE, "results", "*.json"))):
        with open(path) as f:
            runs.append(json.load(f))
    return runs


def plot(rows, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in rows if isinstance(r.get("ratio"), (int, float)) and r.get("a_seconds") is not None]
    if not rows:
        return False
    labels = [f"[{r['mode']}] {r['label']}\n{r['a']} / {r['b']}" for r in rows]
    ratios = [r["ratio"] for r in rows]
    fig, ax = plt.subplots(figsize=(10, 0.55 * len(rows) + 1.2))
    colors = ["#2a9d8f" if (r.get("target") is None or r["ratio"] <= r["target"]) else "#e76f51" for r in rows]
    ax.barh(range(len(rows)), ratios, color=colors)
    for i, r in enumerate(rows):
        if r.get("target") is not None:
            ax.plot([r["target"]] * 2, [i - 0.4, i + 0.4], color="black", linewidth=2)
        ax.text(r["ratio"] + 0.02, i, f"{r['ratio']:.2f}", va="center", fontsize=8)
    ax.axvline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time ratio (lower is better; black tick = target)")
    ax.set_title("delta_pyds benchmark ratios (same run, alternated, median)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return True


def main():
    runs = load()
    os.makedirs(DOCS, exist_ok=True)
    rows = [r for run in runs for r in run["rows"]]
    lines = ["# Benchmarks", "",
             "Ratios of medians over alternated repetitions, measured side by side in one run "
             "(`python bench/run.py`; results in `bench/results/`, this page by `python bench/report.py`).", ""]
    for run in runs:
        m = run["machine"]
        lines.append(f"- `{run['command']}` at {run['when']} on {m['cpus']} cores / {m['memory_gb']} GB, "
                     f"Python {m['python']}, pyspark {m['pyspark']}, pyarrow {m['pyarrow']}, deltalake {m['deltalake']}")
    lines += ["", "| mode | measurement | contenders | ratio | times (s) | target |", "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if r.get("a_seconds") is None:
            extra = {k: v for k, v in r.items() if k not in ("mode", "label")}
            lines.append(f"| {r['mode']} | {r['label']} | | | {extra} | |")
            continue
        target = "" if r.get("target") is None else f"<= {r['target']}" + (" ✅" if r["ratio"] <= r["target"] else " ❌")
        lines.append(f"| {r['mode']} | {r['label']} | {r['a']} / {r['b']} | {r['ratio']:.2f} | "
                     f"{r['a_seconds']:.3f} / {r['b_seconds']:.3f} | {target} |")
    if plot(rows, os.path.join(DOCS, "benchmarks.png")):
        lines += ["", "![ratios](benchmarks.png)"]
    with open(os.path.join(DOCS, "benchmarks.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
