"""What ``wop diff`` costs on long runs, next to a floor measured in the same run.

Generates runs of the chatty council (``workload.chatty_council``: one member saving
``--messages`` messages) in a fresh SQLite file: ``plain``, ``changed`` (the middle message
differs) and ``repetitive`` (only "yes" and "no": the worst case for an alignment). Then,
on events already read from the store:

* floor: folding both runs' events into ``CouncilState`` (what any reader of two runs pays);
* diff: ``diff_runs`` (the fold, the facts, the alignment, the result), for plain vs
  changed (a fork-like change) and plain vs repetitive (nothing aligns);
* peak: the memory ``diff_runs`` allocates (tracemalloc, a separate pass).

Usage: ``python bench/diff.py [--messages 10000] [--repeat 3] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import chatty_council

from wopdsl import CouncilState, SqliteStore
from wopdsl.projections.diff import diff_runs


def _best(work: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def _peak(work: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        store = SqliteStore(Path(folder) / "runs.db")
        try:
            for variant in ("plain", "changed", "repetitive"):
                chatty_council(args.messages, variant).run(store, variant)
            events = {v: store.read(v) for v in ("plain", "changed", "repetitive")}
        finally:
            store.close()
    plain = events["plain"]
    floor = _best(lambda: (CouncilState.fold(plain), CouncilState.fold(events["changed"])),
                  args.repeat)
    rows: list[dict[str, Any]] = []
    for other in ("changed", "repetitive"):
        pair = (plain, events[other])
        seconds = _best(lambda pair=pair: diff_runs(*pair), args.repeat)  # type: ignore[misc]
        peak = _peak(lambda pair=pair: diff_runs(*pair))  # type: ignore[misc]
        rows.append({"pair": f"plain vs {other}", "events": len(pair[0]) + len(pair[1]),
                     "diff_s": seconds, "floor_s": floor, "ratio": seconds / floor,
                     "peak_mib": peak / 2**20})
    print(f"wop diff on runs of {args.messages:,} messages (best of {args.repeat})")
    print(f"{'pair':<22}{'events':>8}{'diff s':>9}{'floor s':>9}{'× floor':>9}{'peak MiB':>10}")
    for row in rows:
        print(f"{row['pair']:<22}{row['events']:>8}{row['diff_s']:>9.3f}{row['floor_s']:>9.3f}"
              f"{row['ratio']:>9.2f}{row['peak_mib']:>10.1f}")
    print("floor: CouncilState.fold of both runs (what any reader of the two logs pays)")
    print(f"median × floor: {statistics.median(r['ratio'] for r in rows):.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"messages": args.messages, "rows": rows},
                                              indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
