"""The options of a create-run body (``POST /v1/runs``, v2 ``POST /runs``).

``inputs`` (a council takes only ``task``; a conformance fixture's inputs become its task),
``metadata``, ``tags`` (v2 ``runs.md`` §Run options: opaque, at most 100 of 1-256
characters), ``tenantId``/``scopeId``, and v2's closed, versioned ``configurable``.
"""

from __future__ import annotations

from typing import Any, Final

from wopdsl.server.errors import ApiError
from wopdsl.server.io import want_str

__all__ = ["create_options"]

_MAX_TAGS: Final = 100
_MAX_TAG_CHARS: Final = 256


def create_options(body: dict[str, Any], fixture: bool = False, *, v2: bool = False
                   ) -> tuple[str | None, dict[str, Any] | None]:
    """The task and the run metadata a create body asks for (400 ``validation_error``)."""
    if v2 and body.get("configurable") is not None:
        _configurable_v2(body["configurable"])
    for unsupported in ("callbackUrl", *(() if v2 else ("configurable",))):
        if body.get(unsupported):
            raise ApiError(400, "validation_error", f"{unsupported} is not supported by this "
                           "host", {"field": unsupported})
    inputs = body.get("inputs") or {}
    if not isinstance(inputs, dict):
        raise ApiError(400, "validation_error", "inputs must be an object", {"field": "inputs"})
    unknown = sorted(set(inputs) - {"task"})
    if unknown and not fixture:
        raise ApiError(400, "validation_error",
                       f"unknown input(s): {', '.join(unknown)}; a council takes only 'task'",
                       {"field": "inputs", "fields": unknown})
    task = want_str(inputs, "task", optional=True, max_len=100_000) if inputs else None
    if fixture:  # A conformance fixture's inputs become its task (docs/openwop.md).
        from wopdsl.server.conformance import fixture_task

        task = fixture_task(str(body["workflowId"]), inputs) or task
    metadata: dict[str, Any] = {}  # The run's `request` metadata: the caller's, verbatim,
    options: dict[str, Any] = {}   # and what the host adds beside it, named in `runOptions`.
    if body.get("metadata") is not None:
        if not isinstance(body["metadata"], dict):
            raise ApiError(400, "validation_error", "metadata must be an object",
                           {"field": "metadata"})
        metadata.update(body["metadata"])
    if body.get("tags") is not None:
        options["tags"] = _tags(body["tags"])
    added = [field for field in ("tenantId", "scopeId") if body.get(field) is not None]
    for field in added:
        metadata[field] = want_str(body, field, max_len=256)
    if added:
        options["added"] = added
    for key in ("runOptions", *added):
        if key in (body.get("metadata") or {}):
            raise ApiError(400, "validation_error",
                           f"metadata.{key} collides with the host's {key!r} of this run",
                           {"field": f"metadata.{key}", "hint": f"rename metadata.{key}"})
    if options:
        metadata["runOptions"] = options
    return task, metadata or None


def _configurable_v2(configurable: Any) -> None:
    """A v2 ``configurable`` (closed and versioned, RFC 0171 §D.1): ``{version: 1}`` only.

    A council is configured by its file, so this host serves no section of it: an unknown
    or dotted key and a section it does not serve are ``400 validation_error``.
    """
    if not isinstance(configurable, dict) or configurable.get("version") != 1:
        raise ApiError(400, "validation_error", "configurable must be an object with "
                       "version: 1", {"field": "configurable.version"})
    for key in sorted(set(configurable) - {"version"}):
        raise ApiError(400, "validation_error",
                       f"configurable.{key} is not served by this host (a council is "
                       "configured by its file)", {"field": f"configurable.{key}"})


def _tags(tags: Any) -> list[str]:
    """``tags`` of a create body: opaque strings, at most 100 of 1-256 characters (v2 runs.md)."""
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ApiError(400, "validation_error", "tags must be a list of strings",
                       {"field": "tags"})
    if len(tags) > _MAX_TAGS:
        raise ApiError(400, "validation_error", f"at most {_MAX_TAGS} tags, got {len(tags)}",
                       {"field": "tags", "maxItems": _MAX_TAGS})
    for i, tag in enumerate(tags):
        if not 1 <= len(tag) <= _MAX_TAG_CHARS:
            raise ApiError(400, "validation_error",
                           f"tags[{i}] must be 1-{_MAX_TAG_CHARS} characters, got {len(tag)}",
                           {"field": f"tags[{i}]", "maxLength": _MAX_TAG_CHARS})
    return tags
