"""Private map from a field path to where its key sits in a TOML text.

The loader validates the parsed data, so errors arrive as paths like
``("members", 1, "script", 0, "posts", 0, "room")``. This module scans the text once (it
has already parsed, so the scanner may be lenient) and records the offset of every key,
table header and array element, following ``[table]`` and ``[[array.of.tables]]`` headers,
dotted keys, inline tables and nested arrays. A path that is not in the map falls back to
the nearest enclosing one that is.

The scan is linear in the text: paths are recorded down to :data:`MAX_DEPTH` levels only
(the loader refuses anything nested much less deeply, so no problem is ever placed deeper),
so building a path copies at most that many items: a 4 MB header of two million dotted keys
costs a few million steps, not the 2·10¹² tuple items of copying every prefix.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import re
from typing import Any, Final

from wopdsl._ids import is_ident

Path = tuple[str | int, ...]

MAX_DEPTH: Final = 64
"""Deepest path the map records (twice the loader's nesting bound, ``MAX_NESTING``)."""

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}
_SCALAR_END = frozenset(",]}#\n\r")
_PATH_TOKEN = re.compile(
    r"""\s*\((?P<label>[^)]*)\)|\[(?P<index>\d+)\]|\.?"(?P<quoted>(?:[^"\\]|\\.)*)"|\.?(?P<bare>[^.\[\s("]+)"""
)


class SourceMap:
    """Line and column of every key of a TOML document, by path."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        scanner = _Scanner(text)
        # The text already parsed; should the lenient scan still trip, keep what it found.
        with contextlib.suppress(IndexError, ValueError):
            scanner.run()
        self._offsets = scanner.offsets
        self.duplicates: list[tuple[Path, tuple[int, int]]] = [
            (path, self._line_col(offset)) for path, offset in scanner.duplicates
        ]
        """Keys set a second time in one table (a TOML error), with their positions."""

    def position(self, path: Path) -> tuple[int, int] | None:
        """Return the 1-based ``(line, column)`` of exactly ``path``, if recorded."""
        offset = self._offsets.get(tuple(path))
        return None if offset is None else self._line_col(offset)

    def locate(self, path: Path) -> tuple[int, int] | None:
        """Return the position of ``path`` or of its nearest recorded ancestor."""
        for size in range(len(path), 0, -1):
            found = self.position(path[:size])
            if found is not None:
                return found
        return None

    def _line_col(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1


def format_path(loc: Path, data: Any = None) -> str:
    """Render a tuple path for people: ``members[1] (reviewer).script[0].posts[0].room``.

    Items of the top-level ``rooms`` and ``members`` arrays are labelled with their id when
    ``data`` holds a valid one; keys that are not bare TOML keys are quoted.
    """
    out = ""
    node: Any = data
    for depth, part in enumerate(loc):
        node = _child(node, part)
        if isinstance(part, int):
            out += f"[{part}]"
            if depth == 1 and loc[0] in ("rooms", "members") and isinstance(node, dict):
                ident = node.get("id")
                if isinstance(ident, str) and is_ident(ident):
                    out += f" ({ident})"
            continue
        key = part if _BARE_KEY.fullmatch(part) else json.dumps(part, ensure_ascii=False)
        out += f".{key}" if out else key
    return out


def parse_path(path: str, data: Any = None) -> Path:
    """Turn a rendered field path back into a tuple path.

    Understands ``members[1] (reviewer).script[0].posts[0].room``, quoted keys
    (``data."a b"``) and a label without an index (``rooms (review).turn_schema``), which is
    resolved by id against ``data`` when given.
    """
    parts: list[str | int] = []
    node: Any = data
    for match in _PATH_TOKEN.finditer(path):
        label, index, quoted, bare = match.group("label", "index", "quoted", "bare")
        if label is not None:
            if parts and isinstance(parts[-1], int):
                continue
            found = _index_by_id(node, label)
            if found is None:
                continue
            parts.append(found)
            node = node[found]
            continue
        part: str | int
        if index is not None:
            part = int(index)
        elif quoted is not None:
            try:
                part = str(json.loads(f'"{quoted}"'))
            except ValueError:
                part = quoted
        else:
            part = bare
        parts.append(part)
        node = _child(node, part)
    return tuple(parts)


def _index_by_id(node: Any, ident: str) -> int | None:
    if not isinstance(node, list):
        return None
    for index, item in enumerate(node):
        if isinstance(item, dict) and item.get("id") == ident:
            return index
    return None


def _child(node: Any, part: str | int) -> Any:
    if isinstance(part, int):
        return node[part] if isinstance(node, list) and 0 <= part < len(node) else None
    return node.get(part) if isinstance(node, dict) else None


class _Scanner:
    """A lenient single-pass TOML scanner that records key offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.offsets: dict[Path, int] = {}
        self.aot_counts: dict[Path, int] = {}
        self.duplicates: list[tuple[Path, int]] = []

    def run(self) -> None:
        table: Path = ()
        text = self.text
        while True:
            self.skip_blank(newlines=True)
            if self.i >= len(text):
                return
            start = self.i
            if text[self.i] == "[":
                table = self.header()
            else:
                self.keyval(table)
            self.skip_line()
            if self.i == start:  # pragma: no cover - never loop without progress.
                self.i += 1

    # -- layout -------------------------------------------------------------------------

    def skip_blank(self, *, newlines: bool) -> None:
        text = self.text
        while self.i < len(text):
            char = text[self.i]
            if char in " \t" or (newlines and char in "\r\n"):
                self.i += 1
            elif char == "#":
                while self.i < len(text) and text[self.i] != "\n":
                    self.i += 1
            else:
                return

    def skip_line(self) -> None:
        end = self.text.find("\n", self.i)
        self.i = len(self.text) if end < 0 else end + 1

    # -- tables and keys ----------------------------------------------------------------

    def header(self) -> Path:
        start = self.i
        array = self.text.startswith("[[", self.i)
        self.i += 2 if array else 1
        keys = self.dotted_key()
        resolved: Path = ()
        for position, (key, _) in enumerate(keys):
            if len(resolved) >= MAX_DEPTH:
                break  # Deeper than any problem is placed: the rest is not recorded.
            prefix = (*resolved, key)
            last = position == len(keys) - 1
            if array and last:
                count = self.aot_counts.get(prefix, 0)
                self.aot_counts[prefix] = count + 1
                self.offsets.setdefault(prefix, start)
                resolved = (*prefix, count)
            elif prefix in self.aot_counts:
                resolved = (*prefix, self.aot_counts[prefix] - 1)
            else:
                resolved = prefix
            self.offsets.setdefault(resolved, start)
        return resolved

    def dotted_key(self) -> list[tuple[str, int]]:
        keys: list[tuple[str, int]] = []
        while True:
            self.skip_blank(newlines=False)
            start = self.i
            keys.append((self.key_part(), start))
            self.skip_blank(newlines=False)
            if self.i < len(self.text) and self.text[self.i] == ".":
                self.i += 1
                continue
            return keys

    def key_part(self) -> str:
        text = self.text
        char = text[self.i] if self.i < len(text) else ""
        if char == '"':
            return self.basic_string()
        if char == "'":
            end = text.find("'", self.i + 1)
            end = len(text) if end < 0 else end
            value = text[self.i + 1 : end]
            self.i = end + 1
            return value
        match = _BARE_KEY.match(text, self.i)
        if match is None:
            raise ValueError("not a key")
        self.i = match.end()
        return match.group()

    def keyval(self, table: Path) -> None:
        path = table
        keys = self.dotted_key()
        recorded = len(table) + len(keys) <= MAX_DEPTH
        for key, start in keys:
            if len(path) >= MAX_DEPTH:
                break  # Not recorded (see MAX_DEPTH); the value is still scanned past.
            path = (*path, key)
            self.offsets.setdefault(path, start)
        if recorded and self.offsets[path] != keys[-1][1]:
            self.duplicates.append((path, keys[0][1]))
        self.skip_blank(newlines=False)
        if self.i < len(self.text) and self.text[self.i] == "=":
            self.i += 1
            self.skip_blank(newlines=False)
            self.value(path)

    # -- values -------------------------------------------------------------------------

    def value(self, path: Path) -> None:
        text = self.text
        if self.i >= len(text):
            return
        char = text[self.i]
        if text.startswith('"""', self.i) or text.startswith("'''", self.i):
            self.multiline_string(text[self.i])
        elif char == '"':
            self.basic_string()
        elif char == "'":
            end = text.find("'", self.i + 1)
            self.i = len(text) if end < 0 else end + 1
        elif char == "[":
            self.array(path)
        elif char == "{":
            self.inline_table(path)
        else:
            while self.i < len(text) and text[self.i] not in _SCALAR_END:
                self.i += 1

    def array(self, path: Path) -> None:
        text = self.text
        self.i += 1
        index = 0
        while self.i < len(text):
            self.skip_blank(newlines=True)
            if self.i >= len(text) or text[self.i] == "]":
                self.i += 1
                return
            item = (*path, index) if len(path) < MAX_DEPTH else path
            self.offsets.setdefault(item, self.i)
            self.value(item)
            index += 1
            if not self.close_item("]"):
                return

    def inline_table(self, path: Path) -> None:
        text = self.text
        self.i += 1
        while self.i < len(text):
            self.skip_blank(newlines=True)
            if self.i >= len(text) or text[self.i] == "}":
                self.i += 1
                return
            self.keyval(path)
            if not self.close_item("}"):
                return

    def close_item(self, closer: str) -> bool:
        """Step past the separator after an item; return False once ``closer`` is passed."""
        text = self.text
        while self.i < len(text):
            self.skip_blank(newlines=True)
            if self.i >= len(text):
                return False
            char = text[self.i]
            self.i += 1
            if char == ",":
                return True
            if char == closer:
                return False
        return False

    def basic_string(self) -> str:
        text = self.text
        self.i += 1
        out: list[str] = []
        while self.i < len(text):
            char = text[self.i]
            if char == '"':
                self.i += 1
                break
            if char == "\n":
                break
            if char == "\\":
                code = text[self.i + 1 : self.i + 2]
                if code in ("u", "U"):
                    width = 4 if code == "u" else 8
                    digits = text[self.i + 2 : self.i + 2 + width]
                    out.append(chr(int(digits, 16)))
                    self.i += 2 + width
                    continue
                out.append(_ESCAPES.get(code, code))
                self.i += 2
                continue
            out.append(char)
            self.i += 1
        return "".join(out)

    def multiline_string(self, quote: str) -> None:
        text = self.text
        fence = quote * 3
        self.i += 3
        while self.i < len(text):
            if quote == '"' and text[self.i] == "\\":
                self.i += 2
                continue
            if text.startswith(fence, self.i):
                self.i += 3
                # Up to two quotes right before the closing fence belong to the content.
                extra = 0
                while extra < 2 and self.i < len(text) and text[self.i] == quote:
                    self.i += 1
                    extra += 1
                return
            self.i += 1
