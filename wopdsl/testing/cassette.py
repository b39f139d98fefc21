"""Recorded answers: a test's model exchanges, written once and replayed offline.

A :class:`Cassette` is one YAML file beside the test (``__cassettes__/<module>/<test>.yaml``).
Recording (``pytest --wop-record`` or ``WOP_RECORD=1``) sends every call of the test's
councils to the real model its profile names and writes each exchange down; replaying (the
default) answers every call from the file, through a loopback server that speaks the same
wire protocol — no network, no model, the same events every time. A call the file does not
hold, or one whose request changed (prompt, schema, model parameters), fails the run and the
test, naming the member and the turn and showing a diff of the request.

Each exchange is keyed by the run (1 for the test's first run), the member, the member's
turn, the turn's attempt (as in ``node.started``) and the call within that attempt (a repair
or a tool round is a new call), and holds the raw Chat Completions request body and the
response body (a streamed answer assembled into one ``chat.completion``, tool calls
included). Headers are not kept (no key or auth header is ever written), except a
``Retry-After`` of an error answer; the API key (and the password of an API root with
``user:password@``) is scrubbed from everything that is, in every form the event log's
redaction knows (reversed, upper case, base64 …).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import yaml

from wopdsl.testing._cassette_diff import dump_yaml, request_diff, tool_changes
from wopdsl.testing.cassette_upstream import forward, scrub, upstream_secrets
from wopdsl.testing.model_server import CapturedRequest, RawAnswer, ScriptedModelServer

__all__ = ["FORMAT", "Cassette", "CassetteMismatch", "Exchange", "dump_yaml", "request_diff"]

FORMAT = "wopdsl-cassette/1"
"""The ``format`` line of every cassette this version writes and reads."""

_HEADER = ("# Model exchanges recorded by `pytest --wop-record` (wopdsl) and replayed offline.\n"
           "# Re-record: pytest --wop-record (or WOP_RECORD=1). Format: wopdsl "
           "docs/guides/testing.md, \"The cassette\".\n")

Key = tuple[int, str, int, int, int]
_HOW = "`pytest --wop-record` (or WOP_RECORD=1)"


class CassetteMismatch(AssertionError):
    """A call the cassette cannot answer: not recorded, or its request changed."""


@dataclass
class Exchange:
    """One model call and its answer."""

    run: int
    member: str
    turn: int
    attempt: int
    call: int
    profile: str
    request: dict[str, Any]
    """``{path, body}``: the path below the API root and the JSON request body."""
    response: dict[str, Any]
    """``{status, streamed, body, headers?}``; ``body`` is a ``chat.completion`` for a 200."""
    position: int = 0
    """The turn's dispatch position (its message ids ``team/<member>/<position>/…``)."""

    @property
    def key(self) -> Key:
        """What a call is matched by: run, member, turn, attempt, call."""
        return (self.run, self.member, self.turn, self.attempt, self.call)

    def where(self) -> str:
        """The exchange as people name it: member, turn (and the rest of its key)."""
        return (f"member '{self.member}', turn {self.turn} (run {self.run}, attempt "
                f"{self.attempt}, call {self.call})")

    def to_data(self) -> dict[str, Any]:
        """The exchange as written to the file."""
        return {"run": self.run, "member": self.member, "turn": self.turn,
                "attempt": self.attempt, "call": self.call, "position": self.position,
                "profile": self.profile, "request": self.request, "response": self.response}


class Cassette:
    """The recorded exchanges of one test, replayed (default) or recorded afresh.

    Args:
        path: The YAML file.
        record: Call the real models and (over)write the file when :meth:`save` is called.
        how: How to record it again, for messages (``wop eval`` names its ``--record``).
    """

    def __init__(self, path: str | os.PathLike[str], *, record: bool = False,
                 how: str = _HOW) -> None:
        self.path = Path(path)
        self.how = how
        self.shown = _shown(self.path)
        """The file as messages name it (relative to the working directory when inside)."""
        self.record = record
        self.recorded: dict[Key, Exchange] = {}
        """Replay: the exchanges read from the file. Record: those made so far."""
        self.problems: list[str] = []
        """Calls that could not be answered (replay) or recorded (record), for the test."""
        self.reported = 0
        """How many of :attr:`problems` were raised already."""
        self._used: set[Key] = set()
        self._lock = threading.Lock()  # the server answers calls on threads of their own
        self._calls: dict[tuple[int, str, int, int], int] = {}
        self._upstreams: dict[str, str | None] = {}
        self._server: ScriptedModelServer | None = None
        self.missing = not record and not self.path.is_file()
        if not record and not self.missing:
            self.recorded = {e.key: e for e in _read(self.path)}

    # -- the tap the council's profile clients are given ------------------------------------

    def tap(self, run: int) -> _RunTap:
        """The :class:`~wopdsl.agents.llm.ModelTap` for the ``run``-th run of the test."""
        if self._server is None:
            self._server = ScriptedModelServer()
            self._server.default = self._answer
            self._server.start()
        return _RunTap(self, run)

    def close(self) -> None:
        """Stop the loopback server."""
        if self._server is not None:
            self._server.stop()
            self._server = None

    # -- answering one call -----------------------------------------------------------------

    def _answer(self, request: CapturedRequest) -> RawAnswer:
        parts = request.path.split("/")
        try:
            run, profile = int(parts[1]), unquote(parts[2])
            member = request.headers["wop-member"]
            turn, attempt = int(request.headers["wop-turn"]), int(request.headers["wop-attempt"])
            position = int(request.headers.get("wop-position", "0"))
        except (IndexError, KeyError, ValueError):
            return self._refuse("a call that does not come from an llm member's turn")
        site = (run, member, turn, attempt)
        with self._lock:
            self._calls[site] = call = self._calls.get(site, 0) + 1
        path = "/" + "/".join(parts[4:])  # below /<run>/<profile>/v1
        auth = request.headers.get("authorization", "")
        secret = auth.split(" ", 1)[1] if " " in auth else auth
        secrets = upstream_secrets(self._upstreams.get(profile))
        made = Exchange(run, member, turn, attempt, call, profile,
                        {"path": path, "body": scrub(request.body, secret, *secrets)}, {},
                        position)
        try:
            if self.record:
                return self._record(made, request, secret)
            return self._replay(made)
        except Exception as exc:  # the server thread must answer: a dropped call is retried
            return self._refuse(f"{made.where()}: the cassette failed ({type(exc).__name__}: "
                                f"{exc})")

    def _record(self, made: Exchange, request: CapturedRequest, secret: str) -> RawAnswer:
        upstream = self._upstreams.get(made.profile) or "https://api.openai.com/v1"
        sent = {"path": made.request["path"], "body": request.body}
        response, failure = forward(upstream, sent, request.headers, secret)
        if failure is not None:
            self.problems.append(f"recording {made.where()}: {failure}; the cassette "
                                 f"{self.shown} was left as it was")
            return RawAnswer(response["status"], response["body"])
        made.response = response
        self.recorded[made.key] = made
        return _served(response)

    def _replay(self, made: Exchange) -> RawAnswer:
        found = self.recorded.get(made.key)
        if found is None:
            members = sorted({e.member for e in self.recorded.values() if e.run == made.run})
            if self.missing:
                why = f"there is no cassette {self.shown}"
            else:
                why = (f"{self.shown} holds no such exchange (recorded members of run "
                       f"{made.run}: {', '.join(members) or 'none'})")
            return self._refuse(f"{made.where()} made a model call, but {why}; record it "
                                f"with {self.how}")
        self._used.add(made.key)
        if found.request != made.request:
            changes = tool_changes(found.request.get("body") or {}, made.request.get("body") or {})
            what = "".join(f"\n  - {line}" for line in changes)
            return self._refuse(
                f"the request of {made.where()} no longer matches the recording in "
                f"{self.shown}; if the change is intended, re-record with {self.how}."
                f"{what}\n"
                f"{request_diff(found.request, made.request)}")
        return _served(found.response)

    def _refuse(self, problem: str) -> RawAnswer:
        self.problems.append(problem)
        first = problem.split("\n", 1)[0]
        return RawAnswer(400, {"error": {"message": f"wopdsl cassette: {first}",
                                         "type": "invalid_request_error",
                                         "code": "cassette_mismatch"}})

    # -- after the runs ----------------------------------------------------------------------

    def raise_problems(self) -> None:
        """Raise :class:`CassetteMismatch` for problems not raised yet."""
        __tracebackhide__ = True
        fresh = self.problems[self.reported:]
        self.reported = len(self.problems)
        if fresh:
            raise CassetteMismatch("\n\n".join(fresh))

    def unused(self) -> list[Exchange]:
        """Recorded exchanges no call asked for (replay)."""
        if self.record:
            return []
        return [e for key, e in sorted(self.recorded.items()) if key not in self._used]

    def save(self) -> bool:
        """Write the recorded exchanges (record mode, when every call could be recorded)."""
        if not self.record or self.problems:
            return False
        exchanges = sorted(self.recorded.values(),
                           key=lambda e: (e.run, e.position, e.member, e.attempt, e.call))
        data = {"format": FORMAT, "exchanges": [e.to_data() for e in exchanges]}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(_HEADER + dump_yaml(data), encoding="utf-8")
        return True


class _RunTap:
    """One run's view of the cassette: each profile's calls go to the loopback server."""

    def __init__(self, cassette: Cassette, run: int) -> None:
        self.cassette = cassette
        self.run = run

    def base_url(self, profile: str, upstream: str | None) -> str:
        """The loopback address for ``profile`` (the real one is kept for recording)."""
        server = self.cassette._server
        assert server is not None
        self.cassette._upstreams[profile] = upstream
        root = server.url.removesuffix("/v1")
        return f"{root}/{self.run}/{quote(profile, safe='')}/v1"


def _shown(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


def _served(response: dict[str, Any]) -> RawAnswer:
    return RawAnswer(int(response["status"]), response.get("body"),
                     dict(response.get("headers") or {}))


def _read(path: Path) -> list[Exchange]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise CassetteMismatch(f"{path}: not a readable cassette ({exc}); re-record it with "
                               "`pytest --wop-record`") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CassetteMismatch(f"{path}: not a {FORMAT} cassette; re-record it with "
                               "`pytest --wop-record`")
    try:
        return [Exchange(int(e["run"]), str(e["member"]), int(e["turn"]), int(e["attempt"]),
                         int(e["call"]), str(e.get("profile", "")), dict(e["request"]),
                         dict(e["response"]), int(e.get("position", 0)))
                for e in data.get("exchanges") or []]
    except (KeyError, TypeError, ValueError) as exc:
        raise CassetteMismatch(f"{path}: a damaged exchange ({type(exc).__name__}: {exc}); "
                               "re-record it with `pytest --wop-record`") from None
