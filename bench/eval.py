"""What ``wop eval`` adds to the runs it makes, next to a floor measured in the same run.

The workload: R runs of a script council (a writer asks a reviewer, who answers; three
turns, three messages), each on its own case (its own task), with a ``contains`` check on the
answer — the harness's whole path: ids, tags, reuse lookup, the council per case, the run,
reading it back, the deliberation metrics, the check, the record. Each measurement uses a
fresh SQLite file (WAL), in this process:

* floor: the same R runs back to back, ``await council.arun(store, run_id)`` one after
  another (the council with each case's task prepared beforehand): the runs' own time;
* eval, jobs = 1: :class:`~wopdsl.evals.runner.EvalRunner` over the same cases; the harness's
  own cost per run = (its wall time − the floor's) / R;
* eval, jobs = J: the same with J runs at once on the one event loop; ``× floor`` = its wall
  time / the floor's.

Targets (docs/performance.md): harness cost ≤ 5 ms per run, jobs = 8 within 1.3 × the floor.

Usage: ``python bench/eval.py [--runs 1000] [--jobs 8] [--repeat 1] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from wopdsl import Council, SqliteStore
from wopdsl.evals import load_eval
from wopdsl.evals.runner import EvalRunner

TARGET_HARNESS_MS = 5.0
"""Most the harness may add per run."""
TARGET_PARALLEL = 1.3
"""Most ``jobs = 8`` may take, as a multiple of the runs back to back."""

COUNCIL = """\
[council]
id = "pair"
task = "placeholder"
max_turns_per_member = 2

[[rooms]]
id = "review"
members = ["writer", "reviewer"]

[[members]]
id = "writer"
role = "writer"
engine = "script"

[[members.script]]
summary = "Asked."
posts = [{ room = "review", text = "Check: {{ task }}", mentions = ["reviewer"] }]

[[members.script]]
summary = "Done: {{ triggers[0].text }}"

[[members]]
id = "reviewer"
role = "reviewer"
engine = "script"
initial_turn = false

[[members.script]]
summary = "Checked."
posts = [{ room = "review", text = "ok {{ task }}", mentions = ["writer"] }]
"""

EVAL = """\
[eval]
id = "bench"
cases = "cases.jsonl"
jobs = {jobs}

[[arms]]
id = "pair"
council = "pair.toml"

[[checks]]
id = "answered"
kind = "contains"
value = "ok {{{{ case.task }}}}"
"""


def _prepare(folder: Path, runs: int, jobs: int) -> Path:
    (folder / "pair.toml").write_text(COUNCIL, encoding="utf-8")
    (folder / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "task": f"note {i}"}) + "\n" for i in range(runs)))
    path = folder / f"eval-{jobs}.toml"
    path.write_text(textwrap.dedent(EVAL.format(jobs=jobs)), encoding="utf-8")
    return path


async def _floor(folder: Path, runs: int, db: Path) -> float:
    """The runs back to back, each council prepared beforehand: the runs' own time."""
    base = Council.from_spec(load_eval(_prepare(folder, runs, 1)).arms[0].council.spec)
    councils = []
    for i in range(runs):
        spec = base.spec.model_copy(update={"council": base.spec.council.model_copy(
            update={"task": f"note {i}"})})
        councils.append(Council.from_spec(spec))
    store = SqliteStore(db)
    try:
        began = time.perf_counter()
        for i, council in enumerate(councils):
            await council.arun(store, f"floor-{i}")
        return time.perf_counter() - began
    finally:
        store.close()


async def _eval(folder: Path, runs: int, jobs: int, db: Path) -> float:
    evaluation = load_eval(_prepare(folder, runs, jobs))
    store = SqliteStore(db)
    try:
        began = time.perf_counter()
        outcome = await EvalRunner(evaluation, store).arun()
        seconds = time.perf_counter() - began
    finally:
        store.close()
    assert outcome.complete and all(r.checks["answered"].passed for r in outcome.records)
    return seconds


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the median is shown")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    rounds: list[dict[str, float]] = []
    for round_ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            floor = asyncio.run(_floor(folder, args.runs, folder / "floor.db"))
            one = asyncio.run(_eval(folder, args.runs, 1, folder / "one.db"))
            many = asyncio.run(_eval(folder, args.runs, args.jobs, folder / "many.db"))
        rounds.append({"floor_s": floor, "jobs1_s": one, "jobsN_s": many})
        print(f"round {round_ + 1}: floor {floor:.2f} s, jobs = 1 {one:.2f} s, "
              f"jobs = {args.jobs} {many:.2f} s", file=sys.stderr)
    figures = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    harness_ms = 1000 * (figures["jobs1_s"] - figures["floor_s"]) / args.runs
    ratio = figures["jobsN_s"] / figures["floor_s"]
    print(f"wop eval: {args.runs:,} runs of a script council (3 turns each), median of "
          f"{args.repeat}")
    print(f"{'':<30}{'wall s':>9}{'ms/run':>9}")
    for label, key in (("floor (back to back)", "floor_s"), ("eval, jobs = 1", "jobs1_s"),
                       (f"eval, jobs = {args.jobs}", "jobsN_s")):
        print(f"{label:<30}{figures[key]:>9.2f}{1000 * figures[key] / args.runs:>9.2f}")
    ok_harness = harness_ms <= TARGET_HARNESS_MS
    ok_ratio = ratio <= TARGET_PARALLEL
    print(f"harness cost per run: {harness_ms:.2f} ms (target <= {TARGET_HARNESS_MS:g}) "
          f"{'ok' if ok_harness else 'MISSED'}")
    print(f"jobs = {args.jobs} / floor: {ratio:.2f} x (target <= {TARGET_PARALLEL:g}) "
          f"{'ok' if ok_ratio else 'MISSED'}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "runs": args.runs, "jobs": args.jobs, "rounds": rounds, **figures,
            "harness_ms": harness_ms, "ratio": ratio}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
