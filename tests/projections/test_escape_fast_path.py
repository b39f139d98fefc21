"""The escaping helpers skip the translation only when it would change nothing."""

from __future__ import annotations

from wopdsl._ids import BIDI_CONTROLS
from wopdsl.projections import escape, terminal_safe
from wopdsl.projections.rooms import _ROOM_LINE, _TERMINAL

SAMPLES = [chr(c) for c in range(0x250)] + [chr(c) for c in (0x2028, 0x2029, *BIDI_CONTROLS)]


def test_every_character_escapes_as_the_translation_does() -> None:
    for char in SAMPLES:
        for text in (char, f"plain {char} text", f"{char}\\{char}"):
            assert escape(text) == text.translate(_ROOM_LINE), repr(text)
            assert terminal_safe(text) == text.translate(_TERMINAL), repr(text)


def test_plain_text_is_returned_as_is() -> None:
    assert escape("m0 hands over after turn 1 @m1") == "m0 hands over after turn 1 @m1"
    assert escape("a\\b") == "a\\\\b"  # A backslash is escaped, so it is not plain.
    assert terminal_safe("a\\b\tc") == "a\\b\tc"
    assert escape("\x1b[31m") == "\\x1b[31m"
