"""Profile one benchmark workload under cProfile, to guide optimisation.

Usage::

    python3 bench/profile.py [--engine script|python] [--members 3] [--turns 2000]
                             [--sort cumulative,tottime] [--top 25] [--out prof.out]

Runs W(N, T) (``bench/workload.py``) once to warm up, then once under cProfile on a fresh
SQLite file, and prints the top functions by each sort key. Timings under the profiler are
inflated (roughly 2x); read them as shares, not as absolute costs.
"""

from __future__ import annotations

import sys
from pathlib import Path

# This file is named like the stdlib's ``profile`` module, which cProfile imports: take this
# folder off the front of sys.path first, then put it back at the end (for ``workload``).
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

import argparse  # noqa: E402
import cProfile  # noqa: E402
import io  # noqa: E402
import pstats  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

sys.path.append(str(HERE))

from workload import build_council, run_once  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", default="script", choices=["script", "python"])
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--sort", default="cumulative,tottime",
                        help="pstats sort keys, comma separated")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--out", type=Path, help="also dump the raw profile here")
    args = parser.parse_args(argv)

    council = build_council(args.engine, args.members, args.turns)
    with tempfile.TemporaryDirectory(prefix="wop-profile-") as tmp:
        run_once(council, str(Path(tmp) / "warm.db"))
        profiler = cProfile.Profile()
        wall0 = time.perf_counter()
        profiler.enable()
        timing = run_once(council, str(Path(tmp) / "profiled.db"))
        profiler.disable()
        wall = time.perf_counter() - wall0
    print(f"W(N={args.members}, T={args.turns}) {args.engine}: {timing.status}, "
          f"{timing.events} events; {wall / args.turns * 1e6:.1f} µs/turn under the profiler "
          f"({timing.cpu / args.turns * 1e6:.1f} µs CPU)")
    if args.out:
        profiler.dump_stats(args.out)
    for key in args.sort.split(","):
        buffer = io.StringIO()
        stats = pstats.Stats(profiler, stream=buffer).strip_dirs().sort_stats(key.strip())
        stats.print_stats(args.top)
        text = buffer.getvalue()
        body = text[text.find("   ncalls"):] if "   ncalls" in text else text
        print(f"\n== top {args.top} by {key.strip()} ==\n{body.rstrip()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
