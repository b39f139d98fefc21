"""``wop validate`` on large council files: linear time, next to the TOML parser's own floor.

Usage::

    python3 bench/validate.py [--mb 4] [--repeat 3] [--json]

Three generated files of ``--mb`` megabytes each are checked the way ``wop validate`` checks
a file (``loads_declaration``, in this process):

* ``one long header``: one table header of dotted parts (``[a.a.a…]``) — refused before parsing
  (more than 32 parts), since Python's TOML parser is quadratic in them;
* ``nested headers``: thousands of headers ``[x.k0.k1….n<i>]`` 1 to 30 levels deep — parsed,
  mapped (the source map) and refused for nesting;
* ``flat keys``: the floor, ``tomllib.loads`` alone on a file of as many plain ``key = 1``
  lines: what reading that many bytes of TOML costs on this machine at this minute.

Reported: the median wall time of each, and ``x floor``. A shape whose time is over
``--limit`` × the floor prints OVER (exit 1): quadratic work on a few megabytes is minutes,
a hundred or a thousand times the floor, not a small multiple.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HEAD = '[council]\nid = "big"\ntask = "t"\n'


def one_long_header(size: int) -> str:
    """One header of ``size / 2`` dotted parts."""
    return HEAD + "[" + ".".join(["a"] * (size // 2)) + "]\nv = 1\n"


def nested_headers(size: int) -> str:
    """Headers 1 to 30 levels deep until ``size`` bytes."""
    lines = [HEAD]
    total, index = 0, 0
    while total < size:
        depth = 1 + index % 30
        line = "[x." + ".".join(f"k{j}" for j in range(depth)) + f".n{index}]\nv = 1\n"
        lines.append(line)
        total += len(line)
        index += 1
    return "".join(lines)


def flat_keys(size: int) -> str:
    """Plain ``k<i> = 1`` lines until ``size`` bytes (the floor's input)."""
    lines = ["[x]\n"]
    total, index = 0, 0
    while total < size:
        line = f"k{index} = 1\n"
        lines.append(line)
        total += len(line)
        index += 1
    return "".join(lines)


def _validate(text: str) -> None:
    from wopdsl import DeclarationError
    from wopdsl.declare.toml import loads_declaration

    with contextlib.suppress(DeclarationError):
        loads_declaration(text, "big.toml")


def _median_s(work: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mb", type=float, default=4.0, help="size of each file (MB)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each")
    parser.add_argument("--limit", type=float, default=10.0, help="OVER beyond this x floor")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    size = int(args.mb * 1_000_000)
    floor_text = flat_keys(size)
    _validate(HEAD)  # Imports, outside the timing.
    floor = _median_s(lambda: tomllib.loads(floor_text), args.repeat)
    rows: list[dict[str, Any]] = [{"shape": "flat keys (tomllib floor)", "bytes": len(floor_text),
                                   "median_s": floor, "x_floor": 1.0}]
    for label, make in (("one long header", one_long_header),
                        ("nested headers", nested_headers)):
        text = make(size)
        took = _median_s(lambda text=text: _validate(text), args.repeat)  # type: ignore[misc]
        rows.append({"shape": label, "bytes": len(text), "median_s": took,
                     "x_floor": took / floor, "status": "PASS" if took / floor <= args.limit
                     else "OVER"})
    over = any(row.get("status") == "OVER" for row in rows)
    if args.json:
        print(json.dumps({"mb": args.mb, "limit": args.limit, "results": rows}, indent=2))
    else:
        print(f"wop validate on {args.mb:g} MB files (median of {args.repeat}; "
              f"target ≤ {args.limit:g} x floor)")
        for row in rows:
            print(f"  {row['shape']:<28} {row['bytes']:>9} B  {row['median_s'] * 1000:9.1f} ms"
                  f"  {row['x_floor']:6.2f} x floor  {row.get('status', '')}")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
