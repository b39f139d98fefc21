"""Private: the plain answer to a Python file given where a council file (TOML) is expected.

A decorator council lives in a Python module and runs as ``MODULE:ATTR`` (``wop run
mycouncil:council``); given the ``.py`` file itself, the loader says so and names the
reference to use, the variable read from the module's source (never imported here).
"""

from __future__ import annotations

import ast
import os
import shlex
from pathlib import Path

from wopdsl.errors import Problem

__all__ = ["python_file_problem"]


def python_file_problem(source: str, text: str) -> Problem:
    """The problem for the Python file ``source`` (its ``text``), with the reference to use."""
    path = Path(source)
    reference = f"{path.stem}:{council_variable(text) or 'council'}"
    command = f"wop run {reference}"
    if path.parent.resolve() != Path(os.getcwd()).resolve():
        command = f"cd {shlex.quote(str(path.parent))} && {command}"
    return Problem(
        "this is a Python file, not a council file (TOML)", source=source,
        hint=f"give a decorator council as MODULE:ATTR, from the folder that holds the module "
             f"(it is put on sys.path): `{command}`; in Python, import the module")


def council_variable(text: str) -> str | None:
    """The first module-level name bound to ``Council(...)`` in ``text``, if any."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Call):
            func = node.value.func
            called = func.id if isinstance(func, ast.Name) else \
                func.attr if isinstance(func, ast.Attribute) else ""
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if called == "Council" and len(targets) == 1 and isinstance(targets[0], ast.Name):
                return targets[0].id
    return None
