"""The council of ``test_quick_groups``'s race, as a module ``wop reply --council`` can load.

Three quick members pass the word round-robin (``a`` starts; ``c``'s sixth turn ends it) in
room ``all`` with a human, ``me``. ``build(on_call)`` calls ``on_call(member, turn)`` at the
start of every handler call; the module's ``council`` (for another process) calls nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from wopdsl import Council, Post, Reply, Turn

NEXT = {"a": "b", "b": "c", "c": "a"}


def build(on_call: Callable[[str, int], None] | None = None) -> Council:
    """The council; ``on_call`` sees each handler call first."""
    council = Council("raced", task="Pass the word.", max_turns_per_member=10)
    council.room("all", members=["a", "b", "c", "me"])

    def handler(turn: Turn) -> Reply:
        if on_call is not None:
            on_call(turn.member, turn.turn)
        last = turn.member == "c" and turn.turn == 6
        posts = [] if last else [Post(room="all", text="go", mentions=[NEXT[turn.member]])]
        return Reply(summary=f"{turn.member}{turn.turn}", posts=posts)

    for member in NEXT:
        council.member(member, role=member, initial_turn=member == "a")(handler)
    council.human("me", role="person")
    return council


council = build()
