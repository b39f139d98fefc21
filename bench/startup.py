"""Start-up time of the ``wop`` command: ``--help`` and the read-only commands.

Usage::

    python3 bench/startup.py [--repeat N] [--warmup W] [--target-ms 150] [--json]

Each command runs as a real subprocess of the same interpreter, exactly as the ``wop`` entry
point starts (``from wopdsl.cli import main; sys.exit(main())``) with this tree first on
``PYTHONPATH``, against a SQLite store holding one completed run of
``councils/release-team.toml`` (made once, not timed). The commands are timed round-robin (so
a busy minute on a shared machine weighs on all of them alike): ``W`` warm-up rounds, then
``N`` timed ones; the figure is the median wall time. The floor, ``python -c "import sys"``
with the same interpreter, is measured in the same rounds: it is what any Python command costs
on this machine at this minute, and ``over floor`` is what wopdsl adds. ``cpu`` (the child's
user + system time) is printed too: on a busy machine it moves less than the wall time.

A command whose median is under the target prints PASS, else OVER (exit 1 when any is over).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COUNCIL = ROOT / "councils" / "release-team.toml"
ENTRY = "import sys; from wopdsl.cli import main; sys.argv[0] = 'wop'; sys.exit(main())"
RUN_ID = "bench-startup"

COMMANDS: dict[str, list[str]] = {
    "wop --help": ["--help"],
    "wop runs": ["runs", "--store", "runs.db"],
    "wop events RUN": ["events", RUN_ID, "--store", "runs.db"],
    "wop transcript RUN": ["transcript", RUN_ID, "--store", "runs.db"],
}
"""The commands timed, by label: each one's arguments after ``wop``."""

FLOOR = "python -c 'import sys'"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    return env


def _argv(label: str) -> list[str]:
    if label == FLOOR:
        return [sys.executable, "-c", "import sys"]
    return [sys.executable, "-c", ENTRY, *COMMANDS[label]]


def _prepare(folder: Path, env: dict[str, str]) -> None:
    """Write the store the read-only commands read, and check this tree is the one timed."""
    made = subprocess.run(
        [sys.executable, "-c", ENTRY, "run", str(COUNCIL), "--store", "runs.db",
         "--run-id", RUN_ID], cwd=folder, env=env, capture_output=True, text=True, check=False)
    if made.returncode != 0:
        raise SystemExit(f"could not make the store: {made.stdout}{made.stderr}")
    where = subprocess.run(
        [sys.executable, "-c", "import wopdsl; print(wopdsl.__file__)"], cwd=folder, env=env,
        capture_output=True, text=True, check=True).stdout.strip()
    if not Path(where).resolve().is_relative_to(ROOT):
        raise SystemExit(f"wopdsl imports from {where}, not from {ROOT}")


def _time_once(label: str, folder: Path, env: dict[str, str]) -> tuple[float, float]:
    """One run: its wall time and its CPU time (user + system), in ms."""
    start = time.perf_counter()
    child = subprocess.Popen(_argv(label), cwd=folder, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = (time.perf_counter() - start) * 1000
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{label} exited {child.returncode} (run it by hand to see why)")
    return elapsed, (usage.ru_utime + usage.ru_stime) * 1000


Times = dict[str, list[tuple[float, float]]]


def measure(repeat: int, warmup: int) -> Times:
    """(wall, CPU) ms of the floor and each command, ``repeat`` rounds after ``warmup``."""
    env = _env()
    labels = [FLOOR, *COMMANDS]
    times: Times = {label: [] for label in labels}
    with tempfile.TemporaryDirectory(prefix="wop-startup-") as tmp:
        folder = Path(tmp)
        _prepare(folder, env)
        for round_ in range(warmup + repeat):
            for label in labels:
                sample = _time_once(label, folder, env)
                if round_ >= warmup:
                    times[label].append(sample)
    return times


def report(times: Times, target_ms: float) -> dict[str, Any]:
    """The figures: per command its median wall (and CPU) time, over the floor, PASS or OVER."""
    floor = statistics.median(wall for wall, _ in times[FLOOR])
    rows = []
    for label, samples in times.items():
        values = [wall for wall, _ in samples]
        median = statistics.median(values)
        row: dict[str, Any] = {"command": label, "median_ms": round(median, 1),
                               "min_ms": round(min(values), 1),
                               "max_ms": round(max(values), 1),
                               "cpu_ms": round(statistics.median(cpu for _, cpu in samples), 1),
                               "over_floor_ms": round(median - floor, 1)}
        if label != FLOOR:
            row["status"] = "PASS" if median < target_ms else "OVER"
        rows.append(row)
    return {"python": sys.executable, "version": sys.version.split()[0],
            "repeat": len(times[FLOOR]), "target_ms": target_ms, "floor_ms": round(floor, 1),
            "load_average": list(os.getloadavg()), "results": rows}


def print_table(data: dict[str, Any]) -> None:
    """Print the figures as a table."""
    print(f"wop start-up, median of {data['repeat']} runs (python {data['version']}, load "
          f"average {data['load_average'][0]:.2f}); target {data['target_ms']:g} ms")
    head = (f"{'command':<22} {'median':>8} {'min':>8} {'max':>8} {'cpu':>8} "
            f"{'over floor':>11}  status")
    print(head)
    print("-" * len(head))
    for row in data["results"]:
        print(f"{row['command']:<22} {row['median_ms']:>6.1f}ms {row['min_ms']:>6.1f}ms "
              f"{row['max_ms']:>6.1f}ms {row['cpu_ms']:>6.1f}ms {row['over_floor_ms']:>9.1f}ms  "
              f"{row.get('status', 'floor')}")


def main(argv: list[str] | None = None) -> int:
    """Measure, print the table (or JSON); exit 1 when a command is over the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="timed rounds (default 15)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed rounds (default 2)")
    parser.add_argument("--target-ms", type=float, default=150.0,
                        help="the start-up target (default 150 ms)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.warmup < 0:
        parser.error("--repeat must be >= 1 and --warmup >= 0")
    data = report(measure(args.repeat, args.warmup), args.target_ms)
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print_table(data)
    return 1 if any(r.get("status") == "OVER" for r in data["results"]) else 0


if __name__ == "__main__":
    raise SystemExit(main())
