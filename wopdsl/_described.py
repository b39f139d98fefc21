"""Private: field descriptions from attribute docstrings, set when a JSON Schema is made.

wopdsl documents each model field with a docstring under it. Pydantic's
``use_attribute_docstrings`` reads those as each class is created, finding the class's source
by walking frames and tokenizing the lines around it: about a tenth of every ``wop``
command's start-up, for descriptions that only a JSON Schema shows (``wop schema``).
:class:`Described` models keep the docstrings in the source and take them only when a
schema is asked for: one parse per module, then the models concerned are rebuilt with
their descriptions. The schema is the one ``use_attribute_docstrings`` gave.
"""

from __future__ import annotations

import ast
import inspect
import sys
import threading
import typing
from functools import cache
from itertools import pairwise
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["Described", "attribute_docs", "describe"]

_LOCK = threading.Lock()
_DESCRIBED: set[type[BaseModel]] = set()


class Described(BaseModel):
    """A model whose JSON Schema describes each field with the docstring under it.

    Its subclasses build their validators on first use (``defer_build``), as the turn models
    always did: a class that nothing validates with costs nothing to import (building a
    validator loads pydantic's plugins, which scan every installed package's metadata).
    """

    model_config = ConfigDict(defer_build=True)

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """``BaseModel.model_json_schema``, with each field's docstring as its description."""
        describe(cls)
        return super().model_json_schema(*args, **kwargs)


def describe(model: type[BaseModel]) -> None:
    """Give ``model`` and the models its fields hold their fields' docstrings, once.

    A field keeps a description it was given (``Field(description=...)``); the docstring
    comes from the class that declares the field. The models are rebuilt, nested ones
    first, so that their schemas carry the descriptions.
    """
    with _LOCK:
        for each in _nested(model):
            if each in _DESCRIBED:
                continue
            if issubclass(each, Described):  # Others never asked for descriptions.
                docs: dict[str, str] = {}
                for klass in reversed(each.__mro__):  # The nearest declaration wins.
                    if isinstance(klass, type) and issubclass(klass, Described):
                        docs.update(attribute_docs(klass))
                for name, field in each.model_fields.items():
                    if field.description is None and name in docs:
                        field.description = docs[name]
            each.model_rebuild(force=True)  # After its nested models: it embeds them.
            _DESCRIBED.add(each)


def _nested(model: type[BaseModel]) -> list[type[BaseModel]]:
    """``model`` and every model reachable through its fields, nested ones first."""
    order: list[type[BaseModel]] = []
    seen: set[type[BaseModel]] = set()

    def visit(klass: type[BaseModel]) -> None:
        if klass in seen:
            return
        seen.add(klass)
        for field in klass.model_fields.values():
            for inner in _models_in(field.annotation):
                visit(inner)
        order.append(klass)

    visit(model)
    return order


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found += _models_in(arg)
    return found


def attribute_docs(klass: type) -> dict[str, str]:
    """The docstrings under the annotated attributes of ``klass``'s own body.

    As pydantic's ``use_attribute_docstrings`` reads them: a string statement right after
    an annotated name, cleaned with :func:`inspect.cleandoc`. Empty when the source cannot
    be read.
    """
    tree = _module_tree(klass.__module__)
    if tree is None:
        return {}
    node: ast.AST = tree
    for part in klass.__qualname__.split("."):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef) and child.name == part:
                node = child
                break
        else:
            return {}
    assert isinstance(node, ast.ClassDef)
    docs: dict[str, str] = {}
    for statement, following in pairwise(node.body):
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) \
                and isinstance(following, ast.Expr) \
                and isinstance(following.value, ast.Constant) \
                and isinstance(following.value.value, str):
            docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs


@cache
def _module_tree(module_name: str) -> ast.Module | None:
    module = sys.modules.get(module_name)
    try:
        return ast.parse(inspect.getsource(module)) if module is not None else None
    except (OSError, TypeError, SyntaxError):
        return None
