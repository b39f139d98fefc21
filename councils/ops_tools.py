"""The Python tool of ``ops-desk.toml``: a restart that records itself (nothing is restarted)."""

from __future__ import annotations

import datetime
from pathlib import Path


def restart_service(service: str, reason: str) -> str:
    """Restart a service (here: record the restart in .wop/restarts.log).

    Args:
        service: The service to restart (api or db).
        reason: One line on why, for the incident log.
    """
    if service not in ("api", "db"):
        raise ValueError(f"unknown service {service!r}; known: api, db")
    log = Path(".wop") / "restarts.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    with log.open("a", encoding="utf-8") as out:
        out.write(f"{stamp} restarted {service}: {reason}\n")
    return f"{service} restarted"
