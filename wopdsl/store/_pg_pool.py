"""The PostgreSQL store's pooled connections, and what it does while the server is away."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from wopdsl.errors import EventInvalid, StoreError, StoreUnavailable
from wopdsl.store._pg_connect import Target

_T = TypeVar("_T")


class Connections:
    """Up to ``size`` pooled connections to ``target``, kept through the server's outages.

    A call on a connection the server dropped is made once more on another; while the
    server is known to be down every call connects directly (failing fast with
    ``StoreUnavailable``) instead of waiting for the pool's ``timeout``.

    ``label`` names the store in errors (without the password).
    """

    def __init__(self, target: Target, *, size: int, timeout: float, label: str) -> None:
        self.target = target
        self.timeout = timeout
        self.label = label
        self.down = False
        """Whether the server was found unreachable (calls probe it directly until it answers)."""
        self.pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            target.conninfo, min_size=1, max_size=max(1, size), open=False,
            kwargs={"autocommit": True, "application_name": target.application_name},
            name="wopdsl", timeout=timeout, num_workers=1,
        )
        self.pool.open(wait=False)
        pool_log = logging.getLogger("psycopg.pool")
        if pool_log.level == logging.NOTSET:
            # The pool logs each failed reconnection; the store says what matters itself.
            pool_log.setLevel(logging.ERROR)

    def run(self, doing: str, use: Callable[[psycopg.Connection[Any]], _T],
            retry: Callable[[], _T | None] | None = None) -> _T:
        """Run ``use`` on a pooled connection; once more on another if this one was dead.

        ``retry`` decides, for a call that may have landed (an append), what to return
        instead of calling again (``None``: call again).
        """
        if self.down:
            return self._directly(doing, use)
        for attempt in (1, 2):
            conn: psycopg.Connection[Any] | None = None
            try:
                with self.pool.connection() as conn:
                    return use(conn)
            except (StoreError, EventInvalid):
                raise
            except PoolTimeout:
                raise self._unreachable(doing) from None
            except PoolClosed:
                raise StoreError(f"{self.label} is closed",
                                 hint="open the store again; close() is final") from None
            except psycopg.OperationalError as exc:
                dead = conn is not None and (conn.broken or conn.closed)
                if attempt == 2 or not dead:
                    raise self.target.error(doing, exc) from None
                self.pool.check()  # Drop the other connections the outage killed.
                self._probe()  # Down (StoreUnavailable at once), or a blip: try again.
                if retry is not None:
                    outcome = retry()
                    if outcome is not None:
                        return outcome
            except psycopg.Error as exc:
                raise self.target.error(doing, exc) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        """Close every pooled connection."""
        self.pool.close()

    def _probe(self) -> None:
        """Connect once, directly: fails fast (``StoreUnavailable``) while the server is down.

        The pool would wait its whole ``timeout`` for a connection it cannot make; while the
        server is known to be down, every call goes through :meth:`_directly` instead.
        """
        try:
            self.target.connect("probe").close()
        except StoreUnavailable:
            self.down = True
            raise

    def _directly(self, doing: str, use: Callable[[psycopg.Connection[Any]], _T]) -> _T:
        """Run ``use`` on a connection of its own (the server was down: the pool lags)."""
        conn = self.target.connect("probe")  # StoreUnavailable while the server is down.
        self.down = False
        try:
            return use(conn)
        except psycopg.Error as exc:
            raise self.target.error(doing, exc) from None
        finally:
            conn.close()

    def _unreachable(self, doing: str) -> StoreError:
        """Why no pooled connection came: try one directly, for the server's own reason."""
        self._probe()  # Raises the clear error if the server is down.
        return self.target.error(doing, f"all {self.pool.max_size} pooled connections "
                                 f"stayed busy for {self.timeout:g} s",
                                 "other threads hold the store's connections; raise pool_size")
