"""Private: what loads on first use: PEP 562 lazy exports, and entry points."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports", "load_entry_point"]


def lazy_exports(package: str, names: Mapping[str, str], namespace: dict[str, Any]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return a package's ``__getattr__`` and ``__dir__`` for ``names`` (name → module).

    A name is imported from its module on first use and kept in ``namespace`` (the
    package's ``globals()``), so later uses are plain lookups.
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *names})

    return __getattr__, __dir__


def load_entry_point(group: str, missing: str) -> Any:
    """Load the first entry point (by name) of ``group``.

    Raises:
        ImportError: none is installed (``missing`` says what to install).
    """
    from importlib.metadata import entry_points

    found = sorted(entry_points(group=group), key=lambda point: point.name)
    if not found:
        raise ImportError(f"{missing} (no entry point is registered under {group!r})")
    return found[0].load()
