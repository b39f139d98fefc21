"""Helpers for the hostile-input tests: `wop` subprocesses under CPU, memory and time bounds."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

MEMORY_LIMIT = 1 << 30
"""Address space a bounded child may use (1 GiB: Python, Jinja2 and SQLite need ~150 MB)."""
CPU_LIMIT_S = 30
"""CPU seconds a bounded child may use before the kernel stops it."""


def _limit() -> None:  # pragma: no cover - runs in the child, before exec.
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT_S, CPU_LIMIT_S))


def bounded_wop(*args: str, cwd: Path, timeout: float = 60,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `python -m wopdsl ARGS` in ``cwd`` with a memory, CPU and wall-clock guard.

    A child that hangs or allocates gigabytes fails the test (``TimeoutExpired``, or a
    ``MemoryError``/``SIGXCPU`` exit) instead of taking the machine down.
    """
    environment = dict(env or os.environ)
    environment.pop("WOP_STORE", None)
    environment["PYTHONIOENCODING"] = "utf-8"
    return subprocess.run(
        [sys.executable, "-m", "wopdsl", *args], cwd=cwd, env=environment,
        capture_output=True, text=True, encoding="utf-8", timeout=timeout, check=False,
        preexec_fn=_limit,
    )
