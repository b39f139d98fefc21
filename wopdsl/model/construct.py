"""Private: build trusted ``Message`` and ``Turn`` models on the hot path.

``model_construct`` (no validation) still walks every field's aliases and defaults on each
call; the engine builds a ``Message`` per saved post and a ``Turn`` per member turn from data
it already trusts, so it sets the instance attributes directly, exactly as
``model_construct`` would with every field given. A check at import compares the two on a
sample and falls back to ``model_construct`` if a pydantic release ever differs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, cast

from pydantic import BaseModel

from wopdsl.model.turns import Message, Turn

_set: Final = object.__setattr__
_MESSAGE_FIELDS: Final = frozenset(Message.model_fields)
_TURN_FIELDS: Final = frozenset(Turn.model_fields)


def _slot_setter(name: str) -> Callable[[Any, Any], None]:
    """Set BaseModel's slot ``name`` through its descriptor (no ``__setattr__`` lookup)."""
    descriptor = vars(BaseModel).get(name)
    setter = getattr(descriptor, "__set__", None)
    if setter is None:  # pragma: no cover - a pydantic without these slots
        return lambda obj, value: _set(obj, name, value)
    return cast(Callable[[Any, Any], None], setter)


_set_fields: Final = _slot_setter("__pydantic_fields_set__")
_set_extra: Final = _slot_setter("__pydantic_extra__")
_set_private: Final = _slot_setter("__pydantic_private__")


def _direct_message(id: str, room: str, sender: str, text: str,
                    mentions: list[str], position: int) -> Message:
    message = Message.__new__(Message)
    _set(message, "__dict__", {"id": id, "room": room, "sender": sender, "text": text,
                               "mentions": mentions, "position": position})
    _set_fields(message, set(_MESSAGE_FIELDS))
    _set_extra(message, None)
    _set_private(message, None)
    return message


def _constructed_message(id: str, room: str, sender: str, text: str,
                         mentions: list[str], position: int) -> Message:
    return Message.model_construct(id=id, room=room, sender=sender, text=text,
                                   mentions=mentions, position=position)


def _direct_turn(task: str, member: str, role: str, brief: str, turn: int,
                 result: dict[str, Any] | None, messages: list[Message],
                 triggers: list[Message]) -> Turn:
    model = Turn.__new__(Turn)
    _set(model, "__dict__", {"task": task, "member": member, "role": role, "brief": brief,
                             "turn": turn, "result": result, "messages": messages,
                             "triggers": triggers})
    _set_fields(model, set(_TURN_FIELDS))
    _set_extra(model, None)
    _set_private(model, None)
    return model


def _constructed_turn(task: str, member: str, role: str, brief: str, turn: int,
                      result: dict[str, Any] | None, messages: list[Message],
                      triggers: list[Message]) -> Turn:
    return Turn.model_construct(task=task, member=member, role=role, brief=brief, turn=turn,
                                result=result, messages=messages, triggers=triggers)


def _same(direct: Any, constructed: Any) -> bool:
    # Every slot a BaseModel instance has is compared (``__dict__`` and fields set here,
    # extra and private by ``==``), so anything derived from them (``model_dump`` ...) agrees
    # too. Nothing here needs the models' validators or serializers: they are built on first
    # use (``defer_build``), not by this check at import.
    return (
        type(direct) is type(constructed)
        and direct.__dict__ == constructed.__dict__
        and list(direct.__dict__) == list(constructed.__dict__)
        and direct.model_fields_set == constructed.model_fields_set
        and direct == constructed
        and repr(direct) == repr(constructed)
    )


def _direct_is_safe() -> bool:
    for model in (Message, Turn):
        if (model.__pydantic_post_init__ is not None or model.__private_attributes__
                or model.model_config.get("extra") == "allow"):
            return False
    message = ("team/a/1/0", "r", "a", "hi", ["b"], 1)
    try:
        sample = _constructed_message(*message)
        turn = ("t", "a", "r", "b", 1, {"summary": "s"}, [sample], [sample])
        return (_same(_direct_message(*message), sample)
                and _same(_direct_turn(*turn), _constructed_turn(*turn)))
    except Exception:  # Any surprise means: use the supported path.
        return False


if _direct_is_safe():
    new_message = _direct_message
    new_turn = _direct_turn
else:  # pragma: no cover - only on a pydantic release whose internals differ.
    new_message = _constructed_message
    new_turn = _constructed_turn
