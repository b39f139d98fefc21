"""MCP tools through the official ``mcp`` package (``wopdsl[mcp]``), imported on first use.

One :class:`McpConnection` per ``[mcp.NAME]`` server of a compiled council, shared by every
member and every run of that council in the process. The first run that needs it starts a
stdio server (or connects to a streamable HTTP one) and lists its tools; the last run that
stops closes it, so a stdio server lives exactly as long as the runs of the host process that
use it. The client lives in a task of its own (the SDK's anyio scopes must be left in the task
that entered them), whichever run started it.

A server that dies is started again (up to ``restarts`` times) before the next call; a call
in flight when it died has an unknown outcome and is never silently repeated (see
:class:`ServerDied`). Header values and environment values are read when the server starts and
never appear in a message: errors name the variables, and what is quoted of the server (its
stderr, its errors) is redacted of every value passed to it (:mod:`.mcp_wire`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Final

from wopdsl.agents.headers import UnsetHeader, header_values
from wopdsl.agents.llm.redact import Redactor
from wopdsl.agents.tools.base import Tool, ToolFault, ToolOutput, ToolSetupError, Transport
from wopdsl.agents.tools.mcp_wire import repaired, secrets_redactor
from wopdsl.model.tools import McpServerSpec, tool_name

__all__ = ["McpConnection", "McpTool", "ServerDied"]

_STDERR_TAIL: Final = 600
"""Characters of a dead stdio server's stderr quoted in the error."""


class ServerDied(Exception):
    """The server went away while a call was in flight: its outcome is unknown."""


class McpConnection:
    """One MCP server: started, listed, called, restarted, closed.

    Args:
        name: The ``[mcp.NAME]`` name.
        spec: The server's table.
        base_dir: The council file's folder (a stdio server's working directory).
    """

    def __init__(self, name: str, spec: McpServerSpec, base_dir: Path | None) -> None:
        self.name = name
        self.spec = spec
        self.base_dir = base_dir
        self.generation = 0
        """Incremented each time the server is (re)started: a new session."""
        self.protocol = ""
        """The MCP protocol revision agreed with the server (``2026-07-28`` for a 2.x one)."""
        self.listing: dict[str, Any] = {}
        """The server's tools by their MCP name (``mcp.types.Tool``), from the last start."""
        self.server_info: tuple[str, str] = ("", "")
        """The name and version the server reported at the last start (``""``: none)."""
        self.cache_ttl_ms = 0
        """How long the server lets clients cache its tool list (SEP-2549 ``ttlMs`` of a
        public listing; 0 when it does not, or when any page is ``private``)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._users = 0
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self._closing: asyncio.Event | None = None
        self._starting: asyncio.Lock | None = None
        self._restarts = 0
        self._stderr: Any = None
        self._broken = False
        """A call saw the connection break: restart before the next one."""
        self._redact = Redactor()
        """Removes the values passed to the server from what is quoted of it."""

    @property
    def alive(self) -> bool:
        """Whether the server is connected (its client task still runs)."""
        return (self._client is not None and self._task is not None and not self._task.done()
                and not self._broken)

    # -- lifetime ------------------------------------------------------------------------

    async def acquire(self) -> None:
        """A run that may call this server starts: start it if it is not running."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new event loop: the old one's client is unusable
            self._loop, self._users, self._client, self._task = loop, 0, None, None
            self._starting = asyncio.Lock()
        self._users += 1
        try:
            await self.ensure()
        except BaseException:
            self._users -= 1
            raise

    async def release(self) -> None:
        """A run stops; the last one closes the server (a stdio server exits)."""
        if self._loop is not asyncio.get_running_loop():
            return
        self._users = max(0, self._users - 1)
        if self._users == 0:
            await self._stop()
            self._restarts = 0

    async def ensure(self) -> None:
        """Start (or restart, within ``restarts``) the server unless it is running.

        Raises:
            ToolSetupError: it cannot be started, or it died more often than allowed.
        """
        assert self._starting is not None, "acquire() first"
        async with self._starting:
            if self.alive:
                return
            if self._client is not None:  # it died (a clean stop leaves no client)
                reason = self._exit_reason()
                await self._stop()
                if self._restarts >= self.spec.restarts:
                    raise ToolSetupError(
                        f"MCP server '{self.name}' stopped{reason}, and it was already started "
                        f"again {self._restarts} time(s) (restarts = {self.spec.restarts})",
                        hint="see why the server exits (its stderr is quoted above), or "
                             f"raise restarts in [mcp.{self.name}]", server=self.name)
                self._restarts += 1
            await self._start()

    async def _start(self) -> None:
        self._closing = asyncio.Event()
        ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        ready.add_done_callback(_retrieved)  # a start given up on still ends its future
        self._task = asyncio.ensure_future(self._serve(ready, self._closing))
        timeout = self.spec.startup_timeout_ms / 1000
        try:
            self._client, tools, self.cache_ttl_ms = await asyncio.wait_for(
                asyncio.shield(ready), timeout)
        except TimeoutError:
            await self._stop()
            raise ToolSetupError(f"MCP server '{self.name}' did not answer within "
                                 f"{timeout:g} s of starting", hint="check the command, or "
                                 f"raise startup_timeout_ms in [mcp.{self.name}]",
                                 server=self.name) from None
        except ToolSetupError:
            await self._stop()
            raise
        except Exception as exc:
            reason = self._exit_reason()
            await self._stop()
            raise ToolSetupError(f"MCP server '{self.name}' could not be reached: "
                                 f"{self._describe(exc)}{reason}", hint=self._hint(),
                                 server=self.name) from None
        self.listing = {tool.name: tool for tool in tools}
        self.protocol = str(getattr(self._client, "protocol_version", "") or "")
        info = getattr(self._client, "server_info", None)
        self.server_info = (str(getattr(info, "name", "") or ""),
                            str(getattr(info, "version", "") or ""))
        self.generation += 1
        self._broken = False

    def adopt(self, tools: list[Any], *, protocol: str, server_info: tuple[str, str]) -> None:
        """Take a listing kept from an earlier start (``wop validate``'s cache): no start.

        The tools need ``name``, ``description`` and ``input_schema``, as MCP tools have.
        """
        self.listing = {tool.name: tool for tool in tools}
        self.protocol = protocol
        self.server_info = server_info

    async def _serve(self, ready: asyncio.Future[Any], closing: asyncio.Event) -> None:
        """The client's task: connect, list the tools, wait until closed."""
        from mcp import Client  # the extra, imported on first use

        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await stack.enter_async_context(
                    Client(repaired(await self._transport(stack)), mode="auto"))
                tools: list[Any] = []
                cursor: str | None = None
                ttl_ms: int | None = None
                for _ in range(100):  # pages
                    page = await client.list_tools(cursor=cursor)
                    tools.extend(page.tools)
                    public = getattr(page, "cache_scope", "private") == "public"
                    page_ttl = int(getattr(page, "ttl_ms", 0) or 0) if public else 0
                    ttl_ms = page_ttl if ttl_ms is None else min(ttl_ms, page_ttl)
                    cursor = page.next_cursor
                    if cursor is None:
                        break
                ready.set_result((client, tools, ttl_ms or 0))
                await closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else
                                    ToolSetupError(f"MCP server '{self.name}' stopped"))
            if not isinstance(exc, Exception):
                raise

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        spec = self.spec
        if spec.command is not None:
            from mcp.client.stdio import (
                StdioServerParameters,
                get_default_environment,
                stdio_client,
            )

            missing = [name for name in spec.env if name not in os.environ]
            if missing:
                raise ToolSetupError(f"MCP server '{self.name}' passes environment variable(s) "
                                     f"{', '.join(missing)}, which are not set",
                                     hint="set them, or remove them from env")
            passed = {name: os.environ[name] for name in spec.env}
            self._redact = secrets_redactor(passed.values())
            env = get_default_environment() | passed
            command = sys.executable if spec.command in ("python", "python3") else spec.command
            # Kept past the client's end (closed by _stop): a server that exits at once is
            # quoted on why, once the client has seen it go.
            self._stderr = tempfile.TemporaryFile(  # noqa: SIM115
                "w+", encoding="utf-8", errors="replace")
            params = StdioServerParameters(command=command, args=list(spec.args), env=env,
                                           cwd=str(self.base_dir) if self.base_dir else None)
            return stdio_client(params, errlog=self._stderr)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        try:
            headers = header_values(spec.headers)
        except UnsetHeader as unset:
            raise ToolSetupError(unset.said_of(f"MCP server '{self.name}': header"),
                                 hint=unset.hint) from None
        self._redact = secrets_redactor(headers.values(), spec.url)
        client = await stack.enter_async_context(httpx2.AsyncClient(
            headers=headers, timeout=httpx2.Timeout(30.0, read=300.0)))
        assert spec.url is not None
        return streamable_http_client(spec.url, http_client=client)

    async def _stop(self) -> None:
        task, self._task, self._client = self._task, None, None
        if self._closing is not None:
            self._closing.set()
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), 5.0)
            except (TimeoutError, Exception):
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        elif task is not None:
            with contextlib.suppress(BaseException):
                task.result()
        stderr, self._stderr = self._stderr, None
        if stderr is not None:
            stderr.close()

    def _exit_reason(self) -> str:
        stderr = self._stderr
        if stderr is None or stderr.closed:
            return ""
        with contextlib.suppress(Exception):
            stderr.seek(0)
            text = self._redact(stderr.read())[-_STDERR_TAIL:].strip()
            if text:
                return f" (its stderr ends: {text!r})"
        return ""

    def _describe(self, exc: BaseException) -> str:
        return self._redact(_describe(exc))

    def _hint(self) -> str:
        if self.spec.command is not None:
            return (f"check command and args of [mcp.{self.name}] (run it yourself: it must "
                    "speak MCP on stdin/stdout)")
        return f"check that a server listens at the url of [mcp.{self.name}]"

    # -- calls ---------------------------------------------------------------------------

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        """Call tool ``name``; restart a dead server first.

        Raises:
            ToolFault: the server answered with a protocol error.
            ServerDied: the connection broke during the call (its outcome is unknown).
            ToolSetupError: the server cannot be (re)started.
        """
        await self.ensure()
        client = self._client
        try:
            result = await client.call_tool(name, arguments)
        except Exception as exc:
            if not self.alive or _broken(exc):
                self._broken = True
                raise ServerDied(f"MCP server '{self.name}' went away during the call "
                                 f"({self._describe(exc)}){self._exit_reason()}") from None
            raise ToolFault("TOOL_ERROR", f"the MCP server refused the call: "
                            f"{self._describe(exc)}") from None
        return ToolOutput(_result_text(result), error=bool(result.is_error))


class McpTool(Tool):
    """One tool of an MCP server, as the model sees it."""

    transport: ClassVar[Transport] = "mcp"

    def __init__(self, connection: McpConnection, listed: Any) -> None:
        self.connection = connection
        self.remote = str(listed.name)
        self.name = tool_name(self.remote)
        self.reference = f"mcp:{connection.name}/{self.remote}"
        self.description = str(listed.description or "")
        schema = listed.input_schema if isinstance(listed.input_schema, Mapping) else {}
        self.parameters = {"type": "object", "properties": {}, **dict(schema)}

    async def call(self, arguments: dict[str, Any]) -> ToolOutput:
        """Call it on the server."""
        return await self.connection.call(self.remote, arguments)


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Mark a future's exception as seen (asyncio would print it as never retrieved)."""
    if not future.cancelled():
        future.exception()


def _broken(exc: BaseException) -> bool:
    names = {type(e).__name__ for e in _chain(exc)}
    return bool(names & {"ClosedResourceError", "BrokenResourceError", "EndOfStream",
                         "BrokenPipeError", "ConnectionResetError", "ConnectError",
                         "RemoteProtocolError"}) or "onnection closed" in str(exc)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        if isinstance(current, BaseExceptionGroup):
            for inner in current.exceptions:
                seen.extend(_chain(inner))
        current = current.__cause__ or current.__context__
    return seen


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    text = str(exc)
    return f"{type(exc).__name__}: {text}"[:500] if text else type(exc).__name__


def _result_text(result: Any) -> str:
    """An MCP ``CallToolResult`` as text: its text blocks, else its structured content."""
    import json

    parts: list[str] = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(str(block.text))
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {getattr(block, 'mime_type', '')}, not shown]")
        else:
            parts.append(json.dumps(block.model_dump(mode="json", by_alias=True,
                                                     exclude_none=True), ensure_ascii=False))
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(parts)
