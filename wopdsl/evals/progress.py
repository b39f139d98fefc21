"""``wop eval``'s live view: a progress bar with ETA and a small live table per arm.

On a terminal the block is redrawn in place after each run; elsewhere (CI logs, a pipe) one
line is printed per finished run. The ETA counts only runs made now (runs reused from an
earlier ``wop eval`` finish at once and would make it lie).
"""

from __future__ import annotations

import time
from typing import TextIO

from wopdsl.evals.load import Evaluation
from wopdsl.evals.record import RunRecord

__all__ = ["Progress"]

_WIDTH = 24


def _clock(seconds: float) -> str:
    whole = max(0, round(seconds))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


class Progress:
    """Prints progress to ``out`` (see the module docs)."""

    def __init__(self, evaluation: Evaluation, out: TextIO, *, live: bool | None = None) -> None:
        self.evaluation = evaluation
        self.out = out
        self.live = out.isatty() if live is None else live
        self.began = time.perf_counter()
        self.made = 0
        self.lines = 0
        self.tally: dict[str, dict[str, list[float]]] = {
            a.id: {c.id: [0, 0] for c in evaluation.checks} for a in evaluation.arms}

    def __call__(self, record: RunRecord, done: int, total: int) -> None:
        """Hear of one finished run."""
        if record.how != "reused":
            self.made += 1
        for check_id, result in record.checks.items():
            cell = self.tally[record.arm][check_id]
            if result.error is None:
                cell[0] += 1 if result.passed else (result.score or 0.0)
                cell[1] += 1
        if self.live:
            self._redraw(done, total)
        else:
            verdicts = " ".join(f"{k} {v.label}" for k, v in record.checks.items())
            print(f"[{done}/{total}] {record.arm} {record.case} #{record.repeat} "
                  f"{record.status} ({record.how}, {record.wall_s:.2f} s): {verdicts}  "
                  f"{record.run_id}", file=self.out, flush=True)

    def eta(self, done: int, total: int) -> str:
        """The time left, from the pace of the runs made now."""
        if not self.made or done >= total:
            return "-:--:--" if done < total else _clock(0)
        pace = (time.perf_counter() - self.began) / self.made
        return _clock(pace * (total - done))

    def _redraw(self, done: int, total: int) -> None:
        filled = _WIDTH * done // max(total, 1)
        lines = [f"[{'#' * filled}{'.' * (_WIDTH - filled)}] {done}/{total} runs  "
                 f"elapsed {_clock(time.perf_counter() - self.began)}  "
                 f"ETA {self.eta(done, total)}"]
        for arm, checks in self.tally.items():
            cells = []
            for check in self.evaluation.checks:
                got, n = checks[check.id]
                cells.append(f"{check.id} " + ("-" if not n else f"{got / n:.2f}"
                                               if check.spec.scored else f"{int(got)}/{int(n)}"))
            lines.append(f"  {arm}: " + "  ".join(cells))
        if self.lines:
            self.out.write(f"\x1b[{self.lines}F\x1b[J")
        self.out.write("\n".join(lines) + "\n")
        self.out.flush()
        self.lines = len(lines)

    def clear(self) -> None:
        """Remove the live block (before the report is printed)."""
        if self.live and self.lines:
            self.out.write(f"\x1b[{self.lines}F\x1b[J")
            self.out.flush()
            self.lines = 0
