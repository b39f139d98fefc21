"""The endpoints of DESIGN.md §19, on a :class:`~wopdsl.server.host.Host`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from wopdsl import Run, __version__
from wopdsl.protocol.capabilities import DRAIN_POLICIES, discovery
from wopdsl.protocol.payloads import MEMBER_TYPE_ID, ROOM_TYPE_ID
from wopdsl.server import forks, sse
from wopdsl.server.access import Access, Action
from wopdsl.server.approvals import approval_at
from wopdsl.server.cache import cached_json
from wopdsl.server.config import Tokens
from wopdsl.server.effects import MANIFEST_PATH, manifest
from wopdsl.server.errors import ApiError
from wopdsl.server.feed import Feeds
from wopdsl.server.host import TERMINAL_STATUSES, Host
from wopdsl.server.idempotency import Idempotency, Keep, check_key, fingerprint, run_id_for_key
from wopdsl.server.io import JSONResponse, read_body, read_object, want_int, want_str
from wopdsl.server.modes import selection_of
from wopdsl.server.openapi import openapi_document
from wopdsl.server.run_options import create_options
from wopdsl.server.turns import (
    asked_room,
    check_mentions,
    council_spec,
    ended,
    resolve_speaker,
    room_of,
)
from wopdsl.server.v2.negotiate import major_of
from wopdsl.state import CouncilState, build_snapshot, wire_status
from wopdsl.store import Answer

__all__ = ["Api"]

REPLAY_HEADER = {"OpenWOP-Idempotent-Replay": "true"}
"""Marks an answer served from the Idempotency-Key cache (rest-endpoints.md)."""

_CREATE_KEYS = {"workflowId", "inputs", "metadata", "tags", "tenantId", "scopeId",
                "callbackUrl", "configurable"}


class Api:
    """Request handlers bound to one host."""

    def __init__(self, host: Host, feeds: Feeds, tokens: Tokens) -> None:
        self.host = host
        self.feeds = feeds
        self.tokens = tokens
        self.limits = host.limits
        self.idempotency = Idempotency(host.store, host.limits.idempotency_ttl_s)
        self.access = Access(tokens)

    def routes(self) -> list[Route]:
        """The routes, most specific first."""
        return [
            Route("/.well-known/openwop", self.discovery, methods=["GET"]),
            Route("/v1/openapi.json", self.openapi, methods=["GET"]),
            Route("/v1/whoami", self.whoami, methods=["GET"]),
            Route("/v1" + MANIFEST_PATH, self.effect_seams, methods=["GET"]),
            Route("/v1/workflows", self.workflows, methods=["GET"]),
            Route("/v1/workflows/{workflow_id}", self.workflow, methods=["GET"]),
            Route("/v1/runs", self.create_run, methods=["POST"]),
            Route("/v1/runs/{run_id}/events/poll", self.poll_events, methods=["GET"]),
            Route("/v1/runs/{run_id}/events", self.events, methods=["GET"]),
            Route("/v1/runs/{run_id}/interrupts/{node_id}", self.resolve, methods=["POST"]),
            Route("/v1/runs/{run_id}/cancel", self.cancel, methods=["POST"]),
            Route("/v1/runs/{run_ref}", self.run_action, methods=["POST"]),
            Route("/v1/runs/{run_id}", self.get_run, methods=["GET"]),
        ]

    # -- discovery -------------------------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        """The discovery document: what ``wop capabilities`` prints for the same councils."""
        return discovery(self.host.councils.values(),
                         implementation={"name": "wopdsl", "version": __version__},
                         max_participants=self.limits.max_participants,
                         max_body_bytes=self.limits.max_body_bytes, fixtures=self.host.fixtures)

    async def discovery(self, request: Request) -> Response:
        """``GET /.well-known/openwop`` (``Cache-Control``, ``ETag``; 304 on a match)."""
        return cached_json(request, self.capabilities())

    async def openapi(self, request: Request) -> Response:
        """``GET /v1/openapi.json``."""
        return JSONResponse(openapi_document(__version__))

    async def effect_seams(self, request: Request) -> Response:
        """``GET /v1/host/effect-seams``: the effect seams a replay fork guards."""
        return JSONResponse(manifest())

    async def whoami(self, request: Request) -> Response:
        """``GET /v1/whoami`` → ``{principal, auth}``: whom the token speaks for (not the token)."""
        return JSONResponse({"principal": _principal(request), "auth": bool(self.tokens)})

    async def workflows(self, request: Request) -> Response:
        """``GET /v1/workflows``."""
        return JSONResponse({"workflows": [_workflow(c, full=False)
                                           for c in self.host.councils.values()]})

    async def workflow(self, request: Request) -> Response:
        """``GET /v1/workflows/{id}``."""
        council = self.host.council(request.path_params["workflow_id"])
        return JSONResponse(_workflow(council, full=True))

    # -- runs ------------------------------------------------------------------------------

    async def create_run(self, request: Request) -> Response:
        """``POST /v1/runs`` → 201 ``{runId, status, eventsUrl, statusUrl}``."""
        raw = await read_body(request, self.limits.max_body_bytes,
                               self.limits.body_timeout_s)
        body = read_object(raw, allowed=_CREATE_KEYS, required={"workflowId"})
        workflow_id = want_str(body, "workflowId", max_len=64)
        assert workflow_id is not None
        task, metadata = create_options(body, workflow_id in self.host.fixtures,
                                         v2=major_of(request.scope) == 2)
        key = request.headers.get("idempotency-key")
        principal = _principal(request)

        async def act(run_id: str | None = None) -> tuple[int, dict[str, Any]]:
            run = await self.host.create(workflow_id, task=task, metadata=metadata,
                                         run_id=run_id,
                                         principal=principal if self.tokens else None)
            return 201, {"runId": run.run_id, "status": await _status(run),
                         "eventsUrl": f"/v1/runs/{run.run_id}/events",
                         "statusUrl": f"/v1/runs/{run.run_id}"}

        if key is None:
            status, answer = await act()
        else:
            check_key(key, v2=major_of(request.scope) == 2)
            self.host.council(workflow_id)  # 404 before a run id is derived from the key.
            run_id = run_id_for_key(workflow_id, principal, key)
            meaning = {"workflowId": workflow_id, "task": task, "metadata": metadata}
            status, answer, replay = await self.idempotency.run(
                principal, key, fingerprint(request.url.path, principal, meaning),
                lambda _keep: act(run_id))
            if replay:
                return JSONResponse(answer, status_code=status, headers=REPLAY_HEADER)
        return JSONResponse(answer, status_code=status)

    async def run_for(self, request: Request, action: Action,
                      run_id: str | None = None) -> tuple[Run, CouncilState]:
        """The request's run and its state, if its caller may ``action`` it (404, 403)."""
        run = await self.host.open(run_id or request.path_params["run_id"])
        state = await run.astate()
        self.access.check(_principal(request), state, action)
        return run, state

    async def state_for(self, request: Request, action: Action) -> CouncilState:
        """The folded state of the request's run, if its caller may ``action`` it (404, 403).

        Read without holding the loop on a blocking store (:meth:`Host.state_of`).
        """
        state = await self.host.state_of(request.path_params["run_id"])
        self.access.check(_principal(request), state, action)
        return state

    async def get_run(self, request: Request) -> Response:
        """``GET /v1/runs/{runId}``: the run's ``RunSnapshot``."""
        return JSONResponse(build_snapshot(await self.state_for(request, "read")))

    async def events(self, request: Request) -> Response:
        """``GET /v1/runs/{runId}/events``: SSE with ``Accept: text/event-stream``, else JSON.

        ``streamMode`` and ``bufferMs`` are checked first, whatever the ``Accept`` header.
        """
        state = await self.state_for(request, "read")
        selection = selection_of(request)
        run_id = request.path_params["run_id"]
        after = sse.cursor_of(request)
        if sse.wants_sse(request):
            return sse.stream(self.feeds, run_id, after, selection)
        return await sse.events_json(self.host.store, run_id, after, wire_status(state),
                                     selection)

    async def poll_events(self, request: Request) -> Response:
        """``GET /v1/runs/{runId}/events/poll?lastSequence=N&timeout=S``."""
        await self.state_for(request, "read")
        run_id = request.path_params["run_id"]
        after = sse.cursor_of(request)
        raw = request.query_params.get("timeout")
        timeout = 30 if raw is None else want_int(raw, "timeout", low=0,
                                                   high=int(self.limits.max_poll_s))

        async def status() -> str:
            return wire_status(await self.host.state_of(run_id))

        return await sse.poll(self.feeds, self.host.store, run_id, after, timeout, status)

    async def resolve(self, request: Request) -> Response:
        """``POST /v1/runs/{runId}/interrupts/{nodeId}`` ``{resumeValue}``: a turn from outside."""
        run_id = request.path_params["run_id"]
        node_id = request.path_params["node_id"]
        raw = await read_body(request, self.limits.max_body_bytes,
                               self.limits.body_timeout_s)
        body = read_object(raw, allowed={"resumeValue"}, required={"resumeValue"})
        principal = _principal(request)

        async def act(keep: Keep | None = None) -> tuple[int, dict[str, Any]]:
            run, state = await self.run_for(request, "read")
            members = {m.id: m for m in council_spec(run, state).members}
            if state.status in TERMINAL_STATUSES and (
                    node_id.removeprefix("room:") in state.rooms or node_id in members):
                raise ended(run_id, node_id, state.status, v2=major_of(request.scope) == 2)
            asked = asked_room(state, node_id)  # an a2a member's node: its agent asks
            if asked is None and (node_id.removeprefix("room:") not in state.rooms or any(
                    a.member == node_id for a in state.tools.approvals.values())):
                # a member's node: its tool call waits for approval
                decision = approval_at(state, members, node_id, body["resumeValue"])
                self.access.check(principal, state, "approve", decision.approver,
                                  decision.reserved)
                await self.host.approve(run, call=decision.call, member=decision.approver,
                                        grant=decision.grant, reason=decision.reason,
                                        principal=principal if self.tokens else None)
                return 200, {"runId": run_id, "nodeId": node_id,
                             "status": await _status(run), "callId": decision.call}
            room = asked or room_of(state, node_id)
            speaker = resolve_speaker(state, members, room, body["resumeValue"])
            self.access.check(principal, state, "post", speaker.member, speaker.principal)
            check_mentions(state, room, body["resumeValue"])

            def answered(message: str | None, status: str) -> dict[str, Any]:
                doc = {"runId": run_id, "nodeId": node_id, "status": status}
                return doc if message is None else {**doc, "messageId": message}

            def keeping(message: str | None, status: str) -> Answer:
                assert keep is not None
                return keep(200, answered(message, status))

            message = await self.host.reply(run, room=room, member=speaker.member,
                                            resume=body["resumeValue"],
                                            answer=None if keep is None else keeping)
            if keep is not None and keep.kept is not None:
                return keep.kept.status, keep.kept.body  # Kept with the turn: what retries get.
            return 200, answered(message, await _status(run))

        return await self._once(request, f"/v1/runs/{run_id}/interrupts/{node_id}", body, act)

    async def cancel(self, request: Request) -> Response:
        """``POST /v1/runs/{runId}/cancel`` ``{reason?}``."""
        raw = await read_body(request, self.limits.max_body_bytes,
                               self.limits.body_timeout_s)
        body = read_object(raw, allowed={"reason"}, empty_ok=True)
        reason = want_str(body, "reason", optional=True, max_len=1000) or "cancelled by client"
        run, state = await self.run_for(request, "cancel")
        status = state.status
        if status in ("completed", "failed") and major_of(request.scope) == 2:
            raise ApiError(409, "run_terminal", f"run {run.run_id} has already {status}",
                           {"runId": run.run_id, "status": status})
        if status not in TERMINAL_STATUSES:  # v1: idempotent, 200 with the terminal status.
            await self.host.cancel(run, reason)
        return JSONResponse({"runId": run.run_id, "status": await _status(run)})

    async def run_action(self, request: Request) -> Response:
        """``POST /v1/runs/{runId}:fork``, ``:pause`` and ``:resume``."""
        run_id, sep, action = request.path_params["run_ref"].partition(":")
        if sep and action in ("pause", "resume"):
            return await self.pause_or_resume(request, run_id, action)
        if not sep or action != "fork":
            raise ApiError(404, "not_found", f"no such endpoint: POST {request.url.path}",
                           {"hint": "this host serves POST /v1/runs/{runId}:fork, :pause "
                                    "and :resume"})
        mode, from_seq = await forks.fork_body(request, self.limits.max_body_bytes,
                                               self.limits.body_timeout_s)
        await self.run_for(request, "fork", run_id)  # 404, 403 first.
        if await self.host.active() >= self.limits.max_runs:
            raise ApiError(429, "too_many_runs", "this host holds as many runs as it allows",
                           {"limit": "maxRuns", "value": self.limits.max_runs},
                           headers={"Retry-After": "5"})
        from_seq = 0 if from_seq is None else from_seq
        new_id = await forks.forked(self.host.store, run_id, from_seq, mode,
                                    _principal(request) if self.tokens else None)
        run = await self.host.adopt(new_id)
        return JSONResponse(forks.answer(new_id, run_id, from_seq, mode, await _status(run)),
                            status_code=201)

    async def pause_or_resume(self, request: Request, run_id: str, action: str) -> Response:
        """``POST /v1/runs/{runId}:pause`` and ``:resume`` → 202 ``{runId, status}``.

        Bodies: ``{reason?, drainPolicy?}`` and ``{reason?}``. 409 ``run_state_conflict``
        (or ``run_terminal``) with ``details.runStatus`` when the status does not allow it.

        ``drainPolicy``: ``immediate`` (the default: running turns stop and run again after
        ``:resume``) or ``drain-current-node`` (they finish first; ``run.paused`` follows).
        An ``Idempotency-Key`` repeats the first answer (a second ``:pause`` is otherwise 409).
        """
        raw = await read_body(request, self.limits.max_body_bytes,
                               self.limits.body_timeout_s)
        allowed = {"reason", "drainPolicy"} if action == "pause" else {"reason"}
        body = read_object(raw, allowed=allowed, empty_ok=True)
        reason = want_str(body, "reason", optional=True, max_len=1000) or f"{action}d by client"
        policy = body.get("drainPolicy", "immediate")
        if policy not in DRAIN_POLICIES:
            raise ApiError(400, "validation_error",
                           f"drainPolicy must be one of {', '.join(DRAIN_POLICIES)}",
                           {"field": "drainPolicy", "allowed": list(DRAIN_POLICIES)})

        async def act(_keep: Keep | None = None) -> tuple[int, dict[str, Any]]:
            run, state = await self.run_for(request, "cancel", run_id)
            try:
                if action == "pause":
                    status = await self.host.pause(run, reason, drain=policy != "immediate")
                    return 202, {"runId": run_id, "status": status, "drainPolicy": policy}
                return 202, {"runId": run_id, "status": await self.host.unpause(run)}
            except ApiError as exc:  # The status as the wire names it: waiting-approval.
                if exc.details.get("runStatus") == state.status:
                    exc.details["runStatus"] = wire_status(state)
                raise

        return await self._once(request, f"/v1/runs/{run_id}:{action}", body, act)

    async def _once(self, request: Request, what: str, body: dict[str, Any],
                    act: Callable[[Keep | None], Awaitable[tuple[int, dict[str, Any]]]]
                    ) -> Response:
        """Answer ``act()``; with an ``Idempotency-Key``, at most once per key and request.

        ``what`` and ``body`` are the request's meaning (its fingerprint): the same key with
        another meaning is 409 ``idempotency_key_mismatch``; a repeat gets the kept answer.
        """
        key = request.headers.get("idempotency-key")
        if key is None:
            status, answer = await act(None)
        else:
            check_key(key, v2=major_of(request.scope) == 2)
            principal = _principal(request)
            print_ = fingerprint(what, principal, body)
            status, answer, replay = await self.idempotency.run(principal, key, print_, act)
            if replay:
                return JSONResponse(answer, status_code=status, headers=REPLAY_HEADER)
        return JSONResponse(answer, status_code=status)


async def _status(run: Run) -> str:
    """The run's status as the wire names it (``waiting-approval`` …, :func:`wire_status`)."""
    return wire_status(await run.astate())


def _principal(request: Request) -> str:
    return str(request.scope.get("state", {}).get("principal") or "")


def _workflow(council: Any, *, full: bool) -> dict[str, Any]:
    spec = council.spec
    doc: dict[str, Any] = {
        "workflowId": spec.id, "version": spec.council.version, "task": spec.task,
        "rooms": [{"id": r.id, "nodeId": f"room:{r.id}", "members": list(r.members)}
                  for r in spec.rooms],
        "members": [{"id": m.id, "role": m.role, "engine": m.engine,
                     **({"principal": m.principal} if m.principal else {})}
                    for m in spec.members],
    }
    if full:  # Also the WorkflowDefinition's own keys: `id` and its `nodes` (route-coverage).
        doc["id"] = spec.id
        doc["nodes"] = [*({"id": f"room:{r.id}", "typeId": ROOM_TYPE_ID} for r in spec.rooms),
                        *({"id": m.id, "typeId": MEMBER_TYPE_ID} for m in spec.members)]
        doc["definition"] = spec.to_data()
        doc["digest"] = spec.digest()
    return doc
