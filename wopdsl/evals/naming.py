"""Run ids, tags and metadata of an eval's runs: deterministic, so a rerun finds them.

A run's id is readable and unique: ``<eval>.<arm>.<case>.<repeat>-<digest>``, the digest
covering those four and the council's digest (its task for the case included). The same eval
file run again finds the same ids — finished runs are reused, unfinished ones resumed — and
a changed council (or case task) gets new runs instead of mixing old answers in. A judge's
run is named after the run it judges and its check.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

__all__ = ["MAX_ID", "judge_run_id", "run_id", "run_metadata", "run_tags"]

MAX_ID: Final = 64
"""Longest run id (the identifier rule)."""
_DIGEST: Final = 8


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:_DIGEST]


def _named(head: str, digest: str) -> str:
    head = head[: MAX_ID - _DIGEST - 1].rstrip(".-")
    return f"{head}-{digest}"


def run_id(eval_id: str, arm: str, case: str, repeat: int, council_digest: str) -> str:
    """The id of the ``repeat``-th run of ``arm`` on ``case`` (see the module docs)."""
    return _named(f"{eval_id}.{arm}.{case}.{repeat}",
                  _digest("run", eval_id, arm, case, str(repeat), council_digest))


def judge_run_id(judged: str, check: str, council_digest: str) -> str:
    """The id of the judge run of ``check`` on the run ``judged``."""
    return _named(f"{judged.rsplit('-', 1)[0]}.{check}",
                  _digest("judge", judged, check, council_digest))


def run_tags(eval_id: str, arm: str, case: str, repeat: int,
             judge: str | None = None) -> list[str]:
    """``eval=…``, ``arm=…``, ``case=…``, ``repeat=…`` (and ``judge=CHECK`` for a judge)."""
    tags = [f"eval={eval_id}", f"arm={arm}", f"case={case}", f"repeat={repeat}"]
    return [*tags, f"judge={judge}"] if judge is not None else tags


def run_metadata(eval_id: str, arm: str, case: str, repeat: int, source: str,
                 judges: str | None = None) -> dict[str, Any]:
    """What ``run.started`` keeps about the eval (``metadata.request.eval``)."""
    doc: dict[str, Any] = {"id": eval_id, "arm": arm, "case": case, "repeat": repeat,
                           "file": source}
    if judges is not None:
        doc["judges"] = judges
    return {"eval": doc}
