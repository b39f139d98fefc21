r"""What an MCP connection reads, made safe: text that is valid Unicode, and no secret.

* :func:`repaired` wraps a transport of the official ``mcp`` package. A message whose JSON
  spells a lone surrogate (``"\udc80"``, as JavaScript's ``JSON.stringify`` writes one) is
  valid JSON that the SDK's parser refuses; it then hands the session an error instead of the
  message, and the call it answers waits into its timeout. The message is parsed again here,
  each lone surrogate written as its escape (:func:`~wopdsl.agents.tools.base.valid_text`),
  and the SDK's log record of the refused line (a traceback on stderr) is dropped.
* :func:`secrets_redactor` holds every value wopdsl passes to a server (its ``env`` values,
  its header values and their credentials, the password of its ``url``): what wopdsl quotes
  of the server (its stderr, its errors) is redacted of them in every form
  :mod:`wopdsl.agents.llm.redact` knows.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Iterable
from typing import Any
from urllib.parse import urlsplit

from wopdsl.agents.llm.redact import Redactor
from wopdsl.agents.tools.base import valid_text

__all__ = ["repaired", "secrets_redactor"]


def secrets_redactor(values: Iterable[str], url: str | None = None) -> Redactor:
    """A redactor of the values passed to a server (and of each credential in them).

    ``Bearer TOKEN``: the token alone is a secret too (a server may print just that).
    """
    secrets: list[str] = []
    for value in values:
        secrets.append(value)
        scheme, _, credential = value.strip().partition(" ")
        if scheme and credential.strip():
            secrets.append(credential.strip())
    if url:
        with contextlib.suppress(ValueError):
            password = urlsplit(url).password
            if password:
                secrets.append(password)
    return Redactor(*secrets)


@contextlib.asynccontextmanager
async def repaired(transport: Any) -> AsyncIterator[tuple[Any, Any]]:
    """``transport``'s streams, its messages with lone surrogates parsed after all."""
    import anyio

    _quiet_sdk()
    async with transport as (read, write):
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def pump() -> None:
            async with send:
                with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                    async for item in read:
                        await send.send(_repaired(item))

        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            try:
                yield receive, write
            finally:
                group.cancel_scope.cancel()


def _refused_line(item: object) -> str | bytes | None:
    """The line the SDK refused for a lone surrogate, when ``item`` is that refusal."""
    if not isinstance(item, ValueError) or not hasattr(item, "errors"):
        return None
    try:
        problems = item.errors()
    except Exception:
        return None
    line = next((p.get("input") for p in problems if p.get("type") == "json_invalid"
                 and "surrogate" in str(p.get("msg", ""))), None)
    return line if isinstance(line, str | bytes) else None


class _Repairable(logging.Filter):
    """Drops the SDK's record of a line :func:`repaired` parses after all."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.exc_info is None or _refused_line(record.exc_info[1]) is None


_QUIET = _Repairable()


def _quiet_sdk() -> None:
    logger = logging.getLogger("mcp.client.stdio")
    if _QUIET not in logger.filters:
        logger.addFilter(_QUIET)


def _repaired(item: Any) -> Any:
    """A message the SDK could not parse because of a lone surrogate, parsed; else ``item``."""
    line = _refused_line(item)
    if line is None:
        return item
    from mcp.shared.message import SessionMessage
    from mcp.types import jsonrpc_message_adapter

    try:
        data = _valid(json.loads(line))  # Python's parser takes lone surrogates
        message = jsonrpc_message_adapter.validate_json(json.dumps(data), by_name=False)
    except ValueError:
        return item
    return SessionMessage(message)


def _valid(value: Any) -> Any:
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, list):
        return [_valid(v) for v in value]
    if isinstance(value, dict):
        return {_valid(k): _valid(v) for k, v in value.items()}
    return value
