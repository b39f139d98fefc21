"""Write cases.jsonl: the arithmetic task of Du et al. (2023), generated deterministically.

"What is the result of a+b*c+d-e*f?" with six whole numbers from 0 to 30 (a fixed seed, so
the same file every time); the expected answer is the exact integer. Run it again to check
the committed file: ``python make_cases.py --check``.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

CASES = 100
SEED = 2023
FILE = Path(__file__).with_name("cases.jsonl")


def cases(count: int = CASES, seed: int = SEED) -> list[dict[str, object]]:
    """The cases: ``{id, task, expected, expression}``."""
    rng = random.Random(seed)
    out = []
    for index in range(count):
        a, b, c, d, e, f = (rng.randint(0, 30) for _ in range(6))
        expression = f"{a}+{b}*{c}+{d}-{e}*{f}"
        out.append({"id": f"q{index:03d}",
                    "task": f"What is the result of {expression}? Make sure to state your "
                            "answer at the end of the response.",
                    "expected": a + b * c + d - e * f, "expression": expression})
    return out


def text() -> str:
    """The file's content."""
    return "".join(json.dumps(case) + "\n" for case in cases())


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        sys.exit(0 if FILE.read_text(encoding="utf-8") == text() else 1)
    FILE.write_text(text(), encoding="utf-8")
