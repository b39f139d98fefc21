"""Private: cross-process run claims for a SQLite store (POSIX record locks)."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

from wopdsl.errors import StoreError
from wopdsl.store.base import busy

__all__ = ["lock_run"]

try:  # POSIX record locks: released by the OS when their process ends, however it ends.
    import fcntl
except ImportError:  # pragma: no cover - Windows: claims hold within the process only.
    fcntl = None  # type: ignore[assignment]

_CLAIM_FILES: dict[str, int] = {}
"""One descriptor per claims file, kept open for the process: closing any descriptor of a
file drops all of the process's POSIX locks on it."""
_CLAIM_FILES_LOCK = threading.Lock()


def lock_run(db: Path, run_id: str) -> Callable[[], None]:
    """Lock ``run_id``'s byte of ``<db>-claims``; return the release function."""
    if fcntl is None:  # pragma: no cover
        return lambda: None
    path = f"{db}-claims"
    with _CLAIM_FILES_LOCK:
        fd = _CLAIM_FILES.get(path)
        if fd is None:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise StoreError(f"{path}: cannot open the run claims file: {exc}",
                                 hint="the store's folder must be writable") from exc
            _CLAIM_FILES[path] = fd
    offset = int.from_bytes(hashlib.blake2b(run_id.encode(), digest_size=7).digest(), "big")
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
    except OSError:
        raise busy(run_id, "another process") from None
    return lambda: fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)
