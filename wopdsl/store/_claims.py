"""Private: cross-process run claims for a SQLite store (POSIX record locks)."""

from __future__ import annotations

import errno
import hashlib
import os
import struct
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from wopdsl.errors import StoreError
from wopdsl.store.base import busy

__all__ = ["claim_held", "lock_run"]

try:  # POSIX record locks: released by the OS when their process ends, however it ends.
    import fcntl
except ImportError:  # pragma: no cover - Windows: claims hold within the process only.
    fcntl = None  # type: ignore[assignment]

_CLAIM_FILES: dict[str, int] = {}
"""One descriptor per claims file, kept open for the process: closing any descriptor of a
file drops all of the process's POSIX locks on it."""
_CLAIM_FILES_LOCK = threading.Lock()
_READ_ONLY_FILES: dict[str, int] = {}
"""Descriptors of claims files this process may only read (never closed, for the same
reason): enough to ask who holds a lock."""

_BSD = sys.platform == "darwin" or "bsd" in sys.platform
_FLOCK = struct.Struct("@qqihh" if _BSD else "@hhqqi")
"""``struct flock``: ``l_start, l_len, l_pid, l_type, l_whence`` on the BSDs and macOS,
``l_type, l_whence, l_start, l_len, l_pid`` on Linux and the others."""


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
    offset = _offset(run_id)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
    except OSError:
        raise busy(run_id, "another process") from None
    return lambda: fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)


def claim_held(db: Path, run_id: str) -> bool | None:
    """Whether another process locks ``run_id``'s byte of ``<db>-claims`` (``None``: can't tell).

    Asks the OS who holds the byte (``F_GETLK``) without taking it, so a driver claiming the
    run at that moment is never refused; the caller's own locks are not reported (its
    in-process claims are known without asking).
    """
    if fcntl is None:  # pragma: no cover
        return None
    path = f"{db}-claims"
    with _CLAIM_FILES_LOCK:
        fd = _CLAIM_FILES.get(path) or _READ_ONLY_FILES.get(path)
        if fd is None:
            try:
                fd = _CLAIM_FILES[path] = os.open(path, os.O_RDWR)
            except FileNotFoundError:
                return False  # No process ever claimed a run of this store.
            except OSError as exc:
                if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                    return None
                try:
                    fd = _READ_ONLY_FILES[path] = os.open(path, os.O_RDONLY)
                except OSError:
                    return None
    offset = _offset(run_id)
    fields = (offset, 1, 0, fcntl.F_WRLCK, os.SEEK_SET) if _BSD else \
        (fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0)
    try:  # Room to spare: the kernel's struct may be padded beyond the Python layout.
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, _FLOCK.pack(*fields) + bytes(16))
    except OSError:
        return None
    kind = _FLOCK.unpack(answer[:_FLOCK.size])[3 if _BSD else 0]
    return bool(kind != fcntl.F_UNLCK)


def _offset(run_id: str) -> int:
    """The byte of the claims file that stands for ``run_id``."""
    return int.from_bytes(hashlib.blake2b(run_id.encode(), digest_size=7).digest(), "big")
