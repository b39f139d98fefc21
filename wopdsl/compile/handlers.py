"""Import ``handler = "module:function"`` with each council folder its own namespace.

A handler module found in the council file's folder is imported as a submodule of a
package private to that folder (``_wopdsl_councils.f<digest>.agents``), so two councils
whose folders both hold an ``agents.py`` never share a module (DESIGN.md §6). The folder is
never put in front of ``sys.path`` (a ``json.py`` beside a council file must not shadow the
standard library for the whole process): while the handler module is imported, the folder
is appended to ``sys.path`` so its own absolute imports of sibling modules resolve, after
the standard library and installed packages. Modules not in the folder (installed
packages) import as usual. The way back: :func:`handler_reference` names a bound handler as
such a reference, and :func:`spec_with_references` writes them into a spec (``to_toml``).
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import hashlib
import importlib
import importlib.machinery
import importlib.util
import re
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from wopdsl.agents.python import Handler
from wopdsl.errors import DeclarationError, Problem
from wopdsl.model.spec import CouncilSpec, MemberSpec

__all__ = ["NAMESPACE", "did_you_mean", "handler_reference", "import_handler",
           "public_module_name", "public_text", "qualified_name", "spec_with_references"]

NAMESPACE: Final = "_wopdsl_councils"
"""The package under which each council folder's handler modules are imported."""
_LOCK = threading.Lock()
_REFERENCE: Final = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_PRIVATE: Final = re.compile(re.escape(NAMESPACE) + r"\.f[0-9a-f]+(?:\.|\b)")


def handler_reference(handler: object) -> str:
    """Return the ``module:function`` a council file names ``handler`` by.

    Raises:
        ValueError: the handler cannot be named in a file (a lambda, a nested function, a
            partial, a callable object, or a function of a script run as ``__main__``),
            with the reason.
    """
    if isinstance(handler, functools.partial):
        raise ValueError("it is a functools.partial; wrap the call in a module-level function")
    module = getattr(handler, "__module__", None)
    qualname = getattr(handler, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        raise ValueError(f"a {type(handler).__name__} object has no module-level name; "
                         "use a module-level function")
    if "<" in qualname:
        raise ValueError(f"{qualname} is a lambda or a nested function; define it at the top "
                         "level of a module")
    if module == "__main__":
        raise ValueError(f"{qualname} is defined in a script run as __main__; move it into a "
                         "module the council file can import")
    target: Any = sys.modules.get(module)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    if target is not handler:
        raise ValueError(f"{module}:{qualname} does not lead back to this handler")
    reference = f"{public_module_name(module)}:{qualname}"
    if not _REFERENCE.match(reference):
        raise ValueError(f"{reference!r} is not a module:function reference")
    return reference


def spec_with_references(spec: CouncilSpec, handlers: Mapping[str, Handler],
                         tools: Mapping[str, Any] | None = None) -> CouncilSpec:
    """Return ``spec`` with each bound python handler written as ``"module:function"``.

    A tool registered under its function's name (``@council.tool``) is written the same way
    (the model sees the same name); one registered under another name keeps it.

    What ``Council.to_toml()`` exports, so the file runs with ``wop run``.

    Raises:
        DeclarationError: a handler cannot be named in a file (a lambda, a nested
            function ...), or a python member has no handler.
    """
    members = []
    problems = []
    for index, member in enumerate(spec.members):
        handler = handlers.get(member.id)
        where = f"members[{index}] ({member.id})"
        if member.engine != "python":
            members.append(_with_tool_references(member, tools or {}))
        elif handler is not None:
            reference: str | None
            try:
                reference = handler_reference(handler)
            except ValueError as exc:
                problems.append(Problem(f"the handler of '{member.id}' cannot be named in "
                                        f"a council file: {exc}", path=f"{where}.handler",
                                        hint="define the handler as a module-level "
                                             "function"))
                reference = member.handler
            members.append(member.model_copy(update={"handler": reference}))
        elif member.handler is None:
            problems.append(Problem(f"python member '{member.id}' has no handler",
                                    path=where, hint="bind one with @council.member or "
                                    "@council.bind before exporting"))
            members.append(member)
        else:
            members.append(member)
    if problems:
        raise DeclarationError(problems)
    return spec.model_copy(update={"members": members})


def _with_tool_references(member: MemberSpec, tools: Mapping[str, Any]) -> MemberSpec:
    if not member.tools:
        return member
    refs = []
    for ref in member.tools:
        fn = tools.get(ref)
        if fn is not None and getattr(fn, "__name__", None) == ref:
            with contextlib.suppress(ValueError):
                ref = handler_reference(fn)
        refs.append(ref)
    return member.model_copy(update={"tools": refs})


def import_handler(reference: str, base_dir: str | Path | None) -> Handler:
    """Import ``module:function`` from the council folder ``base_dir`` (or installed).

    Raises:
        Exception: whatever importing the module raises; ``AttributeError`` for a missing
            function; ``TypeError`` when the target is not callable.
    """
    module_name, _, attr = reference.partition(":")
    folder = Path(base_dir).resolve() if base_dir is not None else None
    try:
        module = _import(module_name, folder)
    except ModuleNotFoundError as exc:
        if exc.name != module_name.split(".", 1)[0]:
            raise  # A module the handler's module imports is missing: its own message says so.
        where = f"in the council's folder ({folder}) nor " if folder is not None else ""
        siblings = sorted(p.stem for p in folder.glob("*.py")) if folder is not None else []
        raise ModuleNotFoundError(f"no module '{exc.name}' {where}installed"
                                  f"{did_you_mean(exc.name, siblings)}",
                                  name=exc.name) from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            names = [n for n in dir(target) if not n.startswith("_")]
            raise AttributeError(f"module '{module_name}' has no attribute '{part}'"
                                 f"{did_you_mean(part, names)}")
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"{reference} is not callable")
    handler: Handler = target
    return handler


def public_text(text: str) -> str:
    """``text`` with the private package of council folders (``_wopdsl_councils.f…``) removed.

    Example:
        >>> public_text("module '_wopdsl_councils.f0123456789abcdef.agents' has no attribute")
        "module 'agents' has no attribute"
    """
    return _PRIVATE.sub("", text)


def did_you_mean(word: str, choices: list[str]) -> str:
    """``"; did you mean 'x'?"`` for the choice closest to ``word``, or ``""``."""
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def public_module_name(name: str) -> str:
    """The name a module has in a council file (``agents`` for a namespaced one)."""
    if name.startswith(NAMESPACE + "."):
        return name.split(".", 2)[2] if name.count(".") >= 2 else name
    return name


def _import(module_name: str, folder: Path | None) -> ModuleType:
    top = module_name.split(".", 1)[0]
    if folder is None or not ((folder / f"{top}.py").is_file() or (folder / top).is_dir()):
        return importlib.import_module(module_name)
    with _LOCK:
        package = _namespace(folder)
        entry = str(folder)
        added = entry not in sys.path
        if added:
            sys.path.append(entry)
        try:
            return importlib.import_module(f"{package}.{module_name}")
        finally:
            if added and entry in sys.path:
                sys.path.remove(entry)


def _namespace(folder: Path) -> str:
    if NAMESPACE not in sys.modules:
        root = importlib.util.module_from_spec(
            importlib.machinery.ModuleSpec(NAMESPACE, None, is_package=True))
        root.__path__ = []
        sys.modules[NAMESPACE] = root
    name = f"{NAMESPACE}.f{hashlib.sha256(str(folder).encode()).hexdigest()[:16]}"
    if name not in sys.modules:
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
        package = importlib.util.module_from_spec(spec)
        package.__path__ = [str(folder)]
        sys.modules[name] = package
    return name


def qualified_name(fn: object) -> str:
    """``module:qualname`` of a function, for run metadata (``?`` for what has none)."""
    module = getattr(fn, "__module__", None) or "?"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
    return f"{module}:{name}"
