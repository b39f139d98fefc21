"""Instructions per turn of ``wop run`` (transcript printed, or ``--json``), counted with valgrind.

Usage::

    python3 bench/wop_instructions.py [--json-too] [--base REV] [--members 3]

``wop run baton:council`` (``bench/baton.py``: W(N, T) with sync python members) runs in a
child under ``valgrind --tool=cachegrind`` with its stdout to a pipe, once with T = 200 and
once with T = 1,000; (I(1,000) − I(200)) / 800 is what one turn costs, start-up cancelled
out. ``--json-too`` counts ``wop run --json`` as well (no transcript: what the run itself
costs). As in ``bench/instructions.py``, sync handlers are kept in place under valgrind
(every call is ~50 × slower there). Note that the engine yields to the event loop every
millisecond of wall time, so under valgrind a live follower is woken about once per turn
(on a normal run, once per ten or so): its per-wake costs weigh more here than in µs. So
the child stretches the engine's wall-time windows 50 times (the 1 ms window of quick turns
committed together, and what counts as a quick handler), in both trees alike.
``--base REV`` counts an older revision too (a ``git archive`` of it in a temporary folder).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = (
    "import sys; sys.path[:0] = [sys.argv.pop(1)]\n"
    "import wopdsl.agents.python as python\n"
    "python.INLINE_THRESHOLD_S = 3600.0\n"
    "import wopdsl.engine._batches as batches\n"
    "python.QUICK_S = batches._YIELD_EVERY = 0.05\n"
    "from wopdsl.cli import main\n"
    "raise SystemExit(main())\n"
)
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def count(tree: Path, turns: int, members: int, extra: list[str]) -> int:
    """Instructions of one ``wop run`` of ``turns`` turns with ``tree``'s wopdsl."""
    env = {**os.environ, "WOP_BENCH_MEMBERS": str(members), "WOP_BENCH_TURNS": str(turns),
           "PYTHONPATH": str(tree / "bench")}
    with tempfile.TemporaryDirectory(prefix="wop-run-cg-") as tmp:
        proc = subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=no",
             f"--cachegrind-out-file={tmp}/out", sys.executable, "-c", CHILD, str(tree),
             "run", "baton:council", "--store", f"{tmp}/runs.db", *extra],
            capture_output=True, text=True, env=env, cwd=tree / "bench", check=False)
    match = _REFS.search(proc.stderr)
    if proc.returncode != 0 or match is None or "completed" not in proc.stdout:
        sys.stderr.write(proc.stdout[-2000:] + proc.stderr[-4000:])
        raise SystemExit(f"counting wop run {' '.join(extra)} failed (exit {proc.returncode})")
    return int(match.group(1).replace(",", ""))


def per_turn(tree: Path, members: int, extra: list[str]) -> float:
    """Instructions per turn: (T = 1,000 − T = 200) / 800."""
    return (count(tree, 1000, members, extra) - count(tree, 200, members, extra)) / 800


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--json-too", action="store_true", help="count `wop run --json` too")
    parser.add_argument("--base", help="also count this git revision")
    args = parser.parse_args(argv)
    modes = [("wop run (transcript printed)", [])]
    if args.json_too:
        modes.append(("wop run --json", ["--json"]))
    with tempfile.TemporaryDirectory(prefix="wop-run-base-") as tmp:
        trees = [("this tree", ROOT)]
        if args.base:
            base = Path(tmp) / "base"
            base.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.base],
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
            trees.append((args.base, base))
        for name, extra in modes:
            figures = {label: per_turn(tree, args.members, extra) for label, tree in trees}
            line = "  ".join(f"{label}: {value:,.0f}" for label, value in figures.items())
            if args.base:
                line += f"  (new / base {figures['this tree'] / figures[args.base]:.3f})"
            print(f"{name}: instructions per turn — {line}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
