"""Private checks of ``a2a`` members (run by ``check_spec``)."""

from __future__ import annotations

import importlib.util

from wopdsl.errors import Problem
from wopdsl.model.spec import MemberSpec

__all__ = ["A2A_ONLY_KEYS", "a2a_extra_installed", "check_a2a_member"]

A2A_ONLY_KEYS = ("url", "headers")
"""Member keys that only ``engine = "a2a"`` takes."""


def a2a_extra_installed() -> bool:
    """Whether the official ``a2a-sdk`` (the ``wopdsl[a2a]`` extra) can be imported.

    Looks the package up without importing it: ``import wopdsl`` and ``compile()`` stay light.
    """
    try:
        return importlib.util.find_spec("a2a.client") is not None
    except (ImportError, ValueError):  # a broken or blocked install counts as missing
        return False


def check_a2a_member(member: MemberSpec, where: str) -> list[Problem]:
    """Return the problems of one member's ``a2a`` keys (or of those keys on another engine)."""
    if member.engine != "a2a":
        return [Problem(f"{key} is only for engine 'a2a' (this member's engine is "
                        f"'{member.engine}')", path=f"{where}.{key}",
                        hint=f'set engine = "a2a", or remove {key}')
                for key in A2A_ONLY_KEYS if getattr(member, key) is not None]
    problems: list[Problem] = []
    if member.url is None:
        problems.append(Problem(
            "engine 'a2a' needs url = \"http://…\", the remote agent's base URL (its card is "
            "at /.well-known/agent-card.json under it)", path=f"{where}.engine",
            hint='add url = "http://127.0.0.1:9999"'))
    if not a2a_extra_installed():
        problems.append(Problem("engine 'a2a' needs the a2a-sdk package, which is not installed",
                                path=f"{where}.engine", hint="pip install 'wopdsl[a2a]'"))
    return problems
