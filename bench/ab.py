"""A/B: the per-turn cost of this tree next to an older revision's, measured alternately.

Usage::

    python3 bench/ab.py --base REV [--new REV] [--rounds R] [--repeat K] [--members 3]
                        [--turns 2000] [--engines script,python] [--json out.json]

``--base`` (and ``--new``, default: this working tree) is checked out into a temporary git
worktree. Each round runs, for each engine, one
child process per tree (order alternating round by round), each importing ``wopdsl`` and
``bench/workload.py`` from its own tree and timing ``council.arun()`` of W(N, T) on a fresh
SQLite file K times after a warm-up. Alternating the trees gives both the same machine
conditions, so the ratio new / base is about the code, not the minute it ran in. The result
is the median over rounds of each tree's median µs per turn; ``ratio`` above 1 is slower.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = r"""
import json, statistics, sys, tempfile
from pathlib import Path
tree, engine = sys.argv[1], sys.argv[2]
n, turns, repeat = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
sys.path[:0] = [tree, tree + "/bench"]
import wopdsl
assert Path(wopdsl.__file__).resolve().is_relative_to(Path(tree).resolve()), wopdsl.__file__
from workload import build_council, run_once
council = build_council(engine, n, turns)
walls = []
with tempfile.TemporaryDirectory(prefix="wop-ab-") as tmp:
    run_once(council, str(Path(tmp) / "warm.db"))
    for k in range(repeat):
        timing = run_once(council, str(Path(tmp) / f"run{k}.db"))
        assert timing.status == "completed", timing.status
        walls.append(timing.wall / turns * 1e6)
print(json.dumps({"us": statistics.median(walls), "all": walls}))
"""


def _measure(tree: Path, engine: str, args: argparse.Namespace) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(tree), engine, str(args.members), str(args.turns),
         str(args.repeat)],
        check=True, capture_output=True, text=True, env=env, cwd=tree,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1])["us"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="the older revision (any git rev)")
    parser.add_argument("--new", help="the newer revision (default: this working tree)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per child")
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--engines", default="script,python")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    engines = [e for e in args.engines.split(",") if e]
    with tempfile.TemporaryDirectory(prefix="wop-ab-base-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base),
                        args.base], check=True, capture_output=True)
        new = ROOT
        if args.new:
            new = Path(tmp) / "new"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(new),
                            args.new], check=True, capture_output=True)
        try:
            results: dict[str, dict[str, list[float]]] = {
                e: {"base": [], "new": []} for e in engines}
            for r in range(args.rounds):
                for engine in engines:
                    order = [("base", base), ("new", new)]
                    if r % 2:
                        order.reverse()
                    for name, tree in order:
                        results[engine][name].append(_measure(tree, engine, args))
                print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
        finally:
            for tree in {base, new} - {ROOT}:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(tree)], check=False, capture_output=True)
    report: dict[str, Any] = {"base": args.base, "new": args.new or "working tree",
                              "members": args.members, "turns": args.turns,
                              "rounds": args.rounds, "repeat": args.repeat, "engines": {}}
    print(f"W({args.members}, {args.turns}), {args.rounds} alternating rounds × {args.repeat}"
          f" runs; base = {args.base}, new = {args.new or 'working tree'}")
    print(f"{'engine':<10} {'base µs/turn':>13} {'new µs/turn':>12} {'new/base':>9}")
    for engine, runs in results.items():
        b, n = statistics.median(runs["base"]), statistics.median(runs["new"])
        pairs = [nn / bb for bb, nn in zip(runs["base"], runs["new"], strict=True)]
        report["engines"][engine] = {"base_us": b, "new_us": n, "ratio": n / b,
                                     "round_ratios": pairs, **runs}
        print(f"{engine:<10} {b:>13.1f} {n:>12.1f} {n / b:>9.3f}"
              f"   (per round: {', '.join(f'{p:.3f}' for p in pairs)})")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
