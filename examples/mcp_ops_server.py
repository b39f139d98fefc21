"""An MCP server with two ops tools, built with the official MCP Python SDK (``mcp`` 2.x).

``councils/ops-desk.toml`` starts it over stdio (``[mcp.ops]``); serve it over streamable
HTTP on loopback instead with ``python examples/mcp_ops_server.py --http 8765`` (and
``url = "http://127.0.0.1:8765/mcp"`` in the council). Needs ``pip install 'wopdsl[mcp]'``.

Its tools never change while it runs, so it lets clients keep its tool list for an hour (a
SEP-2549 cache hint): a second ``wop validate`` within the hour does not start it.
"""

from __future__ import annotations

import argparse

from mcp.server.caching import CacheHint
from mcp.server.mcpserver import MCPServer

server = MCPServer("ops", version="1.0", instructions="Read service logs and status.",
                   cache_hints={"tools/list": CacheHint(ttl_ms=3_600_000, scope="public")})

_LOGS = {
    "api": ["12:00:01 GET /health 200", "12:00:05 upstream db timeout", "12:00:06 503 /orders"],
    "db": ["12:00:00 checkpoint complete", "12:00:04 too many connections (max 100)"],
}


@server.tool()
def read_log(service: str, lines: int = 5) -> str:
    """Read the last lines of a service's log.

    Args:
        service: The service (api or db).
        lines: How many lines, newest last.
    """
    log = _LOGS.get(service)
    if log is None:
        raise ValueError(f"unknown service {service!r}; known: {', '.join(sorted(_LOGS))}")
    return "\n".join(log[-max(1, lines):])


@server.tool()
def service_status(service: str) -> dict[str, object]:
    """Report whether a service is up and how many errors it logged.

    Args:
        service: The service (api or db).
    """
    log = _LOGS.get(service, [])
    errors = sum(1 for line in log if "timeout" in line or "too many" in line or " 503 " in line)
    return {"service": service, "up": service in _LOGS, "errors": errors}


def main() -> None:
    """Serve over stdio, or over streamable HTTP on 127.0.0.1 with ``--http PORT``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http", type=int, metavar="PORT", help="serve HTTP on this port")
    args = parser.parse_args()
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run()


if __name__ == "__main__":
    main()
