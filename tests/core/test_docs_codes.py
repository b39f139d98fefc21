"""docs/errors.md lists every error code wopdsl can print, each with an example and a fix;
the TOML guide's Limits section lists every bound with its default."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "wopdsl"
_RAISERS = {"TurnError", "CommandError", "RunFailed"}
_CODE = re.compile(r"^[A-Z][A-Z_]+[A-Z]$|^validation_error$")
_NOT_PRINTED = {"WOP_ERROR"}
"""The abstract root's placeholder: every error wopdsl raises has its own code."""


def _codes_in(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        values: list[ast.expr] = []
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if name in _RAISERS and node.args:
                values.append(node.args[0])
            if name == "get" and len(node.args) == 2 and \
                    isinstance(node.args[0], ast.Constant) and node.args[0].value == "code":
                values.append(node.args[1])  # error.get("code", "RUN_FAILED")
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(getattr(t, "id", getattr(t, "attr", "")) == "code" for t in targets) \
                    and node.value is not None:
                values.append(node.value)  # code = "STORE_ERROR" (class attributes)
        elif isinstance(node, ast.Dict):
            values += [v for k, v in zip(node.keys, node.values, strict=True)
                       if isinstance(k, ast.Constant) and k.value == "code"]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.update(re.findall(r"error\[([A-Za-z_]+)\]", node.value))
        for value in values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str) and \
                    _CODE.match(value.value):
                found.add(value.value)
    return found


def package_codes() -> set[str]:
    """Every error code the package's source names (raised, recorded or printed)."""
    from wopdsl.errors import CODES

    codes = set(CODES)
    for path in PACKAGE.rglob("*.py"):
        if "server" in path.relative_to(PACKAGE).parts[:1]:
            continue  # The HTTP host's wire codes are documented in docs/guides/serve.md.
        codes |= _codes_in(ast.parse(path.read_text(encoding="utf-8")))
    return codes - _NOT_PRINTED - {"CODE"}


def _sections() -> dict[str, str]:
    text = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    parts = re.split(r"^#{2,3} (\S+)\n", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_scan_finds_codes_of_every_kind() -> None:
    codes = package_codes()
    # A class attribute, a TurnError, a CommandError, a printed literal, a default.
    assert {"STORE_ERROR", "SCRIPT_EXHAUSTED", "ROOMS_UNWRITABLE", "INTERNAL",
            "RUN_FAILED"} <= codes


def test_every_code_has_a_section_with_an_example_and_a_fix() -> None:
    sections = _sections()
    missing = sorted(package_codes() - set(sections))
    assert not missing, f"codes without a heading in docs/errors.md: {missing}"
    for code in package_codes():
        body = sections[code]
        assert "```" in body, f"docs/errors.md#{code.lower()} has no example"
        assert "**Fix:**" in body, f"docs/errors.md#{code.lower()} says no fix"


def test_store_error_documents_exit_2_and_its_hint() -> None:
    body = _sections()["STORE_ERROR"]
    assert "exit code 2" in body.lower()
    assert "hint:" in body and "is a folder, not a store file" in body
    assert "read-only" in body


def test_the_limits_section_lists_every_bound_with_its_default() -> None:
    from wopdsl.agents._sandbox import MAX_INT_BITS, TEMPLATE_CPU_SECONDS
    from wopdsl.agents.templates import MAX_TEMPLATE_CHARS
    from wopdsl.declare._bounds import _MAX_DIGITS, MAX_FILE_BYTES, MAX_NESTING
    from wopdsl.engine._turns import MAX_RETRY_DELAY_MS, MAX_TRACEBACK_CHARS
    from wopdsl.model.spec import CouncilSettings
    from wopdsl.protocol.capabilities import DEFAULT_MAX_PARTICIPANTS
    from wopdsl.protocol.conversation import MAX_DEPTH

    text = (ROOT / "docs" / "guides" / "toml.md").read_text(encoding="utf-8")
    limits = text.split("\n## Limits\n", 1)[1].split("\n## ", 1)[0]
    defaults = CouncilSettings.model_fields
    bounds = {
        "file size": MAX_FILE_BYTES, "nesting": MAX_NESTING, "digits": _MAX_DIGITS,
        "template length": MAX_TEMPLATE_CHARS, "cpu": TEMPLATE_CPU_SECONDS,
        "integer bits": MAX_INT_BITS, "payload depth": MAX_DEPTH,
        "participants": DEFAULT_MAX_PARTICIPANTS, "traceback": MAX_TRACEBACK_CHARS,
        "retry delay": MAX_RETRY_DELAY_MS,
        **{name: defaults[name].default for name in (
            "global_concurrency", "max_turns_per_member", "tail_messages", "max_input_bytes",
            "max_output_bytes")},
    }
    for what, value in bounds.items():
        shown = f"{value:g} s" if isinstance(value, float) else f"{value:,}"
        assert shown in limits, f"Limits section: {what} ({shown}) is missing"
    for name in ("global_concurrency", "max_turns_per_member", "tail_messages",
                 "max_input_bytes", "max_output_bytes", "retries", "retry_backoff_ms",
                 "turn_timeout_ms", "timeout_ms", "max_tokens", "max_cost_usd"):
        assert f"`{name}`" in limits, f"Limits section: {name} is missing"
