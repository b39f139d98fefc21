"""Private: ``wop capabilities [PATH…] [--v2]``, the discovery document ``wop serve`` serves.

The document is built by :func:`wopdsl.protocol.capabilities.discovery`, the builder the host
answers ``GET /.well-known/openwop`` with, from the same councils and the same options; so
``wop capabilities PATH`` prints what ``wop serve PATH`` serves, byte for byte once parsed.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wopdsl.cli._output import CommandError, print_json
from wopdsl.cli._serve import DEFAULT_COUNCILS, discover, host_options
from wopdsl.cli._targets import Context

if TYPE_CHECKING:
    from wopdsl import Council

__all__ = ["add_capabilities", "cmd_capabilities"]


def add_capabilities(sub: Any, common: argparse.ArgumentParser, int_at_least: Any) -> None:
    """Register ``wop capabilities`` on the subparsers."""
    cmd = sub.add_parser(
        "capabilities", parents=[common], help="the discovery document wop serve serves",
        description="Print the OpenWOP discovery document that `wop serve` with the same "
                    "PATHs and options serves at /.well-known/openwop. Without PATH: "
                    "councils/ when that folder exists (as wop serve), else a host serving "
                    "no council.")
    cmd.set_defaults(func=cmd_capabilities)
    cmd.add_argument("paths", metavar="PATH", nargs="*",
                     help="council files, folders of them, or MODULE:ATTR (default: "
                          "councils/ if it exists)")
    cmd.add_argument("--v2", action="store_true",
                     help="the v2 representation (what a client sending OpenWOP-Version: 2.0 "
                          "gets)")
    host_options(cmd, int_at_least)


def cmd_capabilities(ctx: Context, args: argparse.Namespace) -> int:
    """``wop capabilities``: the discovery document of ``wop serve`` for the same councils."""
    from wopdsl import __version__
    from wopdsl.protocol.capabilities import discovery, discovery_v2

    councils: list[Council] = []
    if args.paths or (not args.conformance and Path(DEFAULT_COUNCILS).is_dir()):
        councils = discover(args.paths)
    doc = discovery(councils, implementation={"name": "wopdsl", "version": __version__},
                    max_participants=args.max_participants,
                    max_body_bytes=args.max_body_bytes,
                    fixtures=_fixtures() if args.conformance else ())
    print_json(discovery_v2(doc) if args.v2 else doc, ctx.out)
    return 0


def _fixtures() -> tuple[str, ...]:
    """The conformance fixtures ``wop serve --conformance`` serves (needs the server extra)."""
    try:
        from wopdsl.server.conformance import FIXTURES
    except ImportError as exc:
        raise CommandError("SERVER_MISSING", f"--conformance needs the server extra ({exc})",
                           hint="pip install 'wopdsl[server]'") from None
    return tuple(FIXTURES)
