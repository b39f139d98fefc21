"""Private: ``wop serve [PATH…]``, the OpenWOP HTTP host on uvicorn."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wopdsl import DeclarationError, ValidationError
from wopdsl.cli._output import CommandError
from wopdsl.cli._targets import Context, is_module_reference, load_council

if TYPE_CHECKING:
    from wopdsl import Council

DEFAULT_COUNCILS = "councils"


def add_serve(sub: Any, common: argparse.ArgumentParser, int_at_least: Any) -> None:
    """Register ``wop serve`` on the subparsers."""
    cmd = sub.add_parser("serve", parents=[common],
                         help="serve councils over the OpenWOP v1 HTTP API (SSE)",
                         description="Serve the councils in PATH (files or folders of .toml "
                                     "files; default councils/) over the OpenWOP v1 HTTP API. "
                                     "Needs the server extra.")
    cmd.set_defaults(func=cmd_serve)
    cmd.add_argument("paths", metavar="PATH", nargs="*",
                     help="council files, folders of them, or MODULE:ATTR (default: councils/)")
    cmd.add_argument("--host", default="127.0.0.1",
                     help="address to bind (default 127.0.0.1; anything but loopback needs "
                          "tokens)")
    cmd.add_argument("--port", type=int_at_least(0), default=8000,
                     help="port to bind (default 8000)")
    cmd.add_argument("--allowed-hosts", metavar="NAME[,NAME…]", action="append", default=[],
                     help="host names the host answers to besides loopback ones (Host "
                          "header; *.example.com for subdomains, * for any); the --host "
                          "address is added")
    cmd.add_argument("--tokens", metavar="FILE",
                     help='bearer tokens: a TOML file with [tokens] principal = "token" '
                          "(also $WOP_TOKENS=alice=token1,bob=token2)")
    cmd.add_argument("--max-runs", type=int_at_least(1), metavar="N", default=1000,
                     help="most unfinished runs held at once (429 beyond; default 1000)")
    cmd.add_argument("--max-subscribers", type=int_at_least(1), metavar="N", default=2000,
                     help="most open event streams (503 beyond; default 2000)")
    cmd.add_argument("--keepalive", type=float, metavar="SECONDS", default=15.0,
                     help="seconds between SSE keep-alive comments (at most 15)")
    cmd.add_argument("--max-connections", type=int_at_least(1), metavar="N", default=4096,
                     help="most open connections (one more evicts the longest idle one, or "
                          "gets 503; default 4096, lowered to the open-file limit)")
    cmd.add_argument("--header-timeout", type=float, metavar="SECONDS", default=10.0,
                     help="seconds a connection has to send a request head (default 10)")
    cmd.add_argument("--body-timeout", type=float, metavar="SECONDS", default=30.0,
                     help="seconds a request has to send its body (408 beyond; default 30)")
    host_options(cmd, int_at_least)
    cmd.add_argument("--a2a", action="store_true",
                     help="also serve each council as an A2A 1.0 agent: its card at "
                          "/a2a/COUNCIL/.well-known/agent-card.json, JSON-RPC at /a2a/COUNCIL "
                          "(needs the a2a extra)")
    cmd.add_argument("--log-level", choices=("debug", "info", "warning", "error"),
                     default="info")
    cmd.add_argument("--otel", action="store_true",
                     help="export the runs' OpenTelemetry spans live to "
                          "$OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318)")


def host_options(cmd: argparse.ArgumentParser, int_at_least: Any) -> None:
    """The options of ``wop serve`` that shape its discovery document (both commands take them)."""
    from wopdsl.protocol.capabilities import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_PARTICIPANTS

    cmd.add_argument("--max-participants", type=int_at_least(2), metavar="N",
                     default=DEFAULT_MAX_PARTICIPANTS,
                     help="most agent participants per room (multiPartyConversation."
                          f"maxParticipants; default {DEFAULT_MAX_PARTICIPANTS})")
    cmd.add_argument("--max-body-bytes", type=int_at_least(1), metavar="N",
                     default=DEFAULT_MAX_BODY_BYTES,
                     help="largest request body (413 beyond; limits.maxRequestBodyBytes)")
    cmd.add_argument("--conformance", action="store_true",
                     help="also serve the OpenWOP conformance fixtures (discovery fixtures[]) "
                          "and the multi-party test seam; without PATH, only them")


def discover(paths: list[str]) -> list[Council]:
    """Load the councils in ``paths`` (files, folders of ``*.toml``, ``MODULE:ATTR``).

    Raises:
        CommandError: nothing to serve, or two councils share an id.
        DeclarationError: a council file is invalid.
    """
    from wopdsl import load

    targets: list[str] = []
    for given in paths or [DEFAULT_COUNCILS]:
        path = Path(given)
        if path.is_dir():
            found = sorted(str(p) for p in path.glob("*.toml"))
            if not found:
                raise CommandError("DECLARATION_INVALID", f"{given}: no .toml council files",
                                   hint="pass council files or a folder that holds them")
            targets += found
        elif path.is_file() or is_module_reference(given):
            targets.append(given)
        else:
            raise CommandError("DECLARATION_INVALID", f"{given}: no such file or folder",
                               hint="pass council files or folders (default: councils/)")
    councils: dict[str, tuple[str, Council]] = {}
    for target in targets:
        council = load_council(target) if is_module_reference(target) else load(target)
        council.compile()
        if council.id in councils:
            raise CommandError("DECLARATION_INVALID",
                               f"{target}: council id {council.id!r} is also the id of "
                               f"{councils[council.id][0]}",
                               hint="each served council needs its own id")
        councils[council.id] = (target, council)
    return [council for _, council in councils.values()]


def cmd_serve(ctx: Context, args: argparse.Namespace) -> int:
    """``wop serve``: run the host until SIGINT/SIGTERM; exit 0 on a clean stop."""
    try:
        import uvicorn

        from wopdsl.server import Limits, create_app, load_tokens
        from wopdsl.server.config import is_loopback
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in ("starlette", "uvicorn"):
            raise
        raise CommandError("SERVER_MISSING", f"wop serve needs the server extra ({exc.name} "
                           "is not installed)", hint="pip install 'wopdsl[server]'") from None
    tokens = load_tokens(args.tokens, os.environ.get("WOP_TOKENS"))
    if not tokens and not is_loopback(args.host):
        raise CommandError(
            "validation_error",
            f"refusing to serve on {args.host} without tokens: anyone who can reach it "
            "could drive your councils",
            hint="give --tokens FILE (or WOP_TOKENS), or bind to 127.0.0.1")
    try:
        limits = Limits(max_body_bytes=args.max_body_bytes, max_runs=args.max_runs,
                        max_subscribers=args.max_subscribers, keepalive_s=args.keepalive,
                        max_participants=args.max_participants,
                        max_connections=args.max_connections,
                        header_timeout_s=args.header_timeout, body_timeout_s=args.body_timeout)
    except ValueError as exc:
        raise ValidationError(str(exc), hint="see `wop serve --help`") from None
    councils = [] if args.conformance and not args.paths else discover(args.paths)
    store = ctx.store()
    hosts = _allowed_hosts(args.allowed_hosts, args.host, ctx)
    if args.a2a:
        try:
            import a2a.server  # noqa: F401
        except ModuleNotFoundError:
            raise CommandError("SERVER_MISSING", "wop serve --a2a needs the a2a extra (a2a-sdk "
                               "is not installed)", hint="pip install 'wopdsl[server,a2a]'"
                               ) from None
    app = create_app(store, councils, tokens=tokens, limits=limits, allowed_hosts=hosts,
                     conformance=args.conformance, a2a=args.a2a)
    import logging

    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: "
                        "%(message)s")
    ids = [c.id for c in councils]
    if args.conformance:
        from wopdsl.server.conformance import FIXTURES

        ids += FIXTURES
    names = ", ".join(ids)
    auth = f"{len(tokens)} principal(s)" if tokens else "no tokens (loopback only)"
    print(f"wop serve: {len(ids)} council(s) [{names}], store {ctx.store_shown}, "
          f"auth: {auth}", file=ctx.err, flush=True)
    if args.a2a:
        print(f"wop serve: A2A agents at /a2a/COUNCIL for {', '.join(c.id for c in councils)} "
              "(cards at /a2a/COUNCIL/.well-known/agent-card.json)", file=ctx.err, flush=True)
    from wopdsl.server.connections import connection_budget, guarded_protocol
    from wopdsl.server.logs import throttle

    cap, backlog = connection_budget(limits.max_connections)
    if cap < limits.max_connections:
        print(f"wop serve: at most {cap} connections (the open-file limit allows no more)",
              file=ctx.err, flush=True)
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level,
                            lifespan="on", timeout_graceful_shutdown=5,
                            http=guarded_protocol(limits, cap), backlog=backlog)
    throttle()  # After uvicorn set its loggers up: one line per condition per minute.
    server = _server_class(uvicorn)(config)
    from wopdsl.server.collector import tune_collector

    tune_collector()  # Start-up is done: freeze it, collect the young generation less often.
    server.run()
    if not server.started:
        raise CommandError("STORE_ERROR", f"could not serve on {args.host}:{args.port}",
                           hint="is the port free? pick another with --port")
    return 0


def _allowed_hosts(given: list[str], bind: str, ctx: Context) -> list[str]:
    """The ``--allowed-hosts`` names, with the bound address when it is one name."""
    names = [n.strip() for item in given for n in item.split(",") if n.strip()]
    if bind in ("0.0.0.0", "::", ""):
        if not names:
            print(f"wop serve: listening on every address ({bind}), but answering only to "
                  "loopback names; add the names clients use with --allowed-hosts NAME",
                  file=ctx.err, flush=True)
    elif bind not in names:
        names.append(bind)
    return names


def _server_class(uvicorn: Any) -> Any:
    """Return uvicorn's server class, where a SIGINT/SIGTERM stop is a clean exit (0).

    uvicorn re-raises the signal it shut down for, which would end the process with 130 or
    -15; ``wop serve`` documents exit 0 on a clean stop.
    """

    class Server(uvicorn.Server):  # type: ignore[misc]
        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            captured = getattr(self, "_captured_signals", None)
            if isinstance(captured, list):
                captured.clear()

    return Server


__all__ = ["DeclarationError", "add_serve", "cmd_serve", "discover", "host_options"]
