"""Keep the API key out of everything a model server sends back.

A server (or a model asked to) may echo the key: in an error body, in an answer, in the
model name it reports. Everything a call returns passes through a :class:`Redactor` before
it is stored, printed or sent on: the key verbatim, reversed, in upper and in lower case, and
base64-encoded (standard and URL-safe alphabets, with or without padding, and the part of its
encoding that does not depend on where the key sits inside a longer base64 text) is replaced
by ``[REDACTED]``. One redactor may hold several secrets (the values passed to an MCP server).
Streamed text goes through a :class:`StreamRedactor`, which holds back the end of each piece
that could begin the key until the next piece shows whether it does.
"""

from __future__ import annotations

import base64
import functools
from typing import Any

__all__ = ["MARK", "Redactor", "StreamRedactor", "redactor"]

MARK = "[REDACTED]"
"""What a secret is replaced with."""

_MIN_SECRET = 6
"""Shorter keys are not searched for (they would match ordinary text)."""
_MIN_CORE = 16
"""Shortest position-independent base64 core searched for."""


class Redactor:
    """Replaces the forms of secrets in text (no secret: text passes unchanged).

    Secrets shorter than six characters are not searched for (they would match ordinary text).
    """

    def __init__(self, *secrets: str | None) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if secret and len(secret) >= _MIN_SECRET:
                forms |= _forms(secret)
        self.forms = tuple(sorted(forms, key=len, reverse=True))
        self.longest = len(self.forms[0]) if self.forms else 0

    def __call__(self, text: str) -> str:
        """``text`` with every form of the secret replaced by :data:`MARK`."""
        for form in self.forms:
            if form in text:
                text = text.replace(form, MARK)
        return text

    def data(self, value: Any) -> Any:
        """A JSON value with every string (keys included) redacted."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, list):
            return [self.data(v) for v in value]
        if isinstance(value, dict):
            return {self(k) if isinstance(k, str) else k: self.data(v)
                    for k, v in value.items()}
        return value

    def stream(self) -> StreamRedactor:
        """A redactor for text that arrives in pieces."""
        return StreamRedactor(self)


class StreamRedactor:
    """Redacts a text that arrives in pieces: a form split across pieces is still caught."""

    def __init__(self, redactor: Redactor) -> None:
        self._redact = redactor
        self._pending = ""

    def feed(self, piece: str) -> str:
        """Return the redacted text that is safe to pass on now (maybe empty).

        Held back: the longest end of the text that begins a form of the secret.
        """
        forms = self._redact.forms
        if not forms:
            return piece
        text = self._redact(self._pending + piece)
        for size in range(min(len(text), self._redact.longest - 1), 0, -1):
            tail = text[-size:]
            if any(form.startswith(tail) for form in forms):
                self._pending = tail
                return text[:-size]
        self._pending = ""
        return text

    def end(self) -> str:
        """Return the rest, at the end of a complete stream.

        A broken stream drops it instead: it may be most of the secret.
        """
        rest, self._pending = self._pending, ""
        return rest


@functools.lru_cache(maxsize=8)
def redactor(secret: str | None) -> Redactor:
    """The (cached) redactor of one secret."""
    return Redactor(secret)


def _forms(secret: str) -> set[str]:
    raw = secret.encode()
    forms = {secret, secret[::-1], secret.upper(), secret.lower()}
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        full = encode(raw).decode()
        forms.update({full, full.rstrip("=")})
        # Inside a longer base64 text the key's encoding depends on its offset (mod 3): the
        # characters that encode only key bytes are the same whatever surrounds it.
        for offset in range(3):
            text = encode(b"\0" * offset + raw + b"\0\0").decode()
            start = (offset * 8 + 5) // 6
            end = ((offset + len(raw)) * 8) // 6
            core = text[start:end]
            if len(core) >= _MIN_CORE:
                forms.add(core)
    return forms
