"""Connection strings for the PostgreSQL store: parsing, redaction, connecting, clear errors.

Nothing here ever puts a password into a message: :class:`Target` keeps the connection
string to itself and scrubs its password (as typed and as decoded) out of every text it
builds, since libpq quotes pieces of a malformed string back in its errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final
from urllib.parse import quote, unquote

from wopdsl.errors import StoreError, StoreUnavailable

if TYPE_CHECKING:
    import psycopg

SCHEMES: Final = ("postgresql://", "postgres://")
"""The URL schemes the PostgreSQL store serves (libpq's own)."""

_DEFAULTS: Final = {
    # A host that vanishes from the network is noticed within ~25 s by the client side
    # (the server side is set per session, see _pg_claims).
    "keepalives": "1",
    "keepalives_idle": "10",
    "keepalives_interval": "5",
    "keepalives_count": "3",
    "connect_timeout": "10",
}
_URL_PASSWORD: Final = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:@/]*):"
                                  r"(?P<password>.*)@(?P<rest>[^@]*)$", re.S)
_KV_PASSWORD: Final = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)")
_HINT_URL: Final = "write it as postgresql://USER:PASSWORD@HOST:PORT/DATABASE, as --store or " \
                   "WOP_STORE"


def redact(target: str) -> str:
    """Return ``target`` with any password replaced by ``***`` (for messages and hints).

    Example:
        >>> redact("postgresql://wop:s3cret@db.internal:5432/runs")
        'postgresql://wop:***@db.internal:5432/runs'
    """
    match = _URL_PASSWORD.match(target)
    if match:
        rest = _KV_PASSWORD.sub(r"\1***", match["rest"])  # ?password=... in the query
        return f"{match['scheme']}{match['user']}:***@{rest}"
    return _KV_PASSWORD.sub(r"\1***", re.sub(r"(?<=[?&])(password=)[^&]*", r"\1***", target))


@dataclass(frozen=True)
class Target:
    """A PostgreSQL connection string and its printable description."""

    conninfo: str = field(repr=False)
    """The full libpq connection string (with the password: never print it)."""
    host: str
    """``host:port`` as the user gave them (``localhost:5432`` by default)."""
    database: str
    """The database name (libpq's default is the user name)."""
    user: str
    """The role name."""
    secrets: tuple[str, ...] = field(repr=False, default=())
    """Texts to scrub from every message: the password as typed and as decoded."""
    application_name: str = "wopdsl"
    """What the server shows in ``pg_stat_activity`` (the user's own, if the URL sets one)."""

    @property
    def where(self) -> str:
        """``postgresql://user@host:port/database``: names the server, never the password."""
        user = f"{self.user}@" if self.user else ""
        return f"postgresql://{user}{self.host}/{self.database}"

    def scrub(self, text: str) -> str:
        """Remove the password (in any spelling this module knows) from ``text``."""
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text

    def error(self, doing: str, exc: BaseException | str, hint: str = "",
              *, unavailable: bool | None = None) -> StoreError:
        """A ``StoreError`` naming the server and the reason, with the password scrubbed.

        A :class:`StoreUnavailable` when the failure is one that passes (the server down,
        restarting or unreachable, a connection lost): ``unavailable``, or judged from ``exc``.
        """
        reason = self.scrub(_reason(str(exc)))
        kind = StoreUnavailable if (transient(exc) if unavailable is None else unavailable) \
            else StoreError
        return kind(self.scrub(f"cannot {doing} {self.where}: {reason}"),
                    hint=self.scrub(hint or _hint_for(reason)))

    def connect(self, purpose: str = "") -> psycopg.Connection:
        """Open one autocommit connection, with every failure as a clear :class:`StoreError`.

        Args:
            purpose: Added to the application name (``wopdsl listen``), so each of the
                store's connections is recognisable in ``pg_stat_activity``.
        """
        import psycopg

        name = f"{self.application_name} {purpose}".strip()
        try:
            return psycopg.connect(self.conninfo, autocommit=True, application_name=name)
        except psycopg.Error as exc:
            raise self.error("connect to", exc) from None


def parse(target: str) -> Target:
    """Parse a ``postgresql://`` (or ``postgres://``) URL into a :class:`Target`.

    Raises:
        StoreError: the extra is not installed, or libpq cannot read the string (the message
            never holds the password).
    """
    secrets = _secrets(target)
    scrub = Target("", "", "", "", secrets).scrub
    try:
        from psycopg import ProgrammingError
        from psycopg.conninfo import conninfo_to_dict, make_conninfo
    except ImportError:
        raise StoreError(
            f"{scrub(redact(target))}: the PostgreSQL store needs psycopg, which is not "
            f"installed",
            hint="pip install 'wopdsl[postgres]'",
        ) from None
    try:
        params = conninfo_to_dict(target)
    except ProgrammingError as exc:
        raise StoreError(
            scrub(f"{redact(target)} is not a valid PostgreSQL connection string: "
                  f"{_reason(str(exc))}"),
            hint=_HINT_URL,
        ) from None
    password = params.get("password")
    if isinstance(password, str) and password:
        secrets = tuple(sorted({*secrets, password, quote(password, safe="")}, key=len,
                               reverse=True))
    extra = {key: value for key, value in _DEFAULTS.items() if key not in params}
    host = str(params.get("host") or params.get("hostaddr") or "localhost")
    port = str(params.get("port") or "5432")
    user = str(params.get("user") or "")
    database = str(params.get("dbname") or user or "")
    name = str(params.get("application_name") or "wopdsl")
    return Target(make_conninfo(target, **extra), f"{host}:{port}", database, user, secrets,
                  name)


def _secrets(target: str) -> tuple[str, ...]:
    """The password as it appears in ``target`` and percent-decoded (longest first)."""
    found: set[str] = set()
    match = _URL_PASSWORD.match(target)
    if match and match["password"]:
        found.update({match["password"], unquote(match["password"])})
    for text in (match["rest"] if match else target,):
        for kv in _KV_PASSWORD.finditer(text):
            value = kv[2].strip("'")
            found.update({value, unquote(value)})
        for param in re.finditer(r"[?&]password=([^&]*)", text):
            found.update({param[1], unquote(param[1])})
    return tuple(sorted((s for s in found if s), key=len, reverse=True))


_PASSING: Final = ("08", "57P01", "57P02", "57P03", "53300")
"""SQLSTATEs of failures that pass: connection exceptions, an administrator's or a crash's
shutdown, a server starting up, too many connections."""


def transient(exc: BaseException | str) -> bool:
    """Whether a psycopg failure is one that passes (retrying later may succeed).

    Failures libpq reports without a SQLSTATE (refused, reset, timed out, unknown host) are;
    a refused password or a missing database are not.
    """
    import psycopg

    if not isinstance(exc, psycopg.Error):
        return False
    state = exc.sqlstate
    if state is None:
        reason = str(exc).lower()
        return not any(word in reason for word in (
            "password", "authentication", "does not exist", "permission denied",
            "invalid", "ssl is not enabled"))
    return state.startswith(_PASSING)


def _reason(message: str) -> str:
    """The reason in libpq's message, without its prefixes."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    text = lines[0] if lines else message.strip()
    for prefix in ("connection failed: ",):
        text = text.removeprefix(prefix)
    text = re.sub(r'^connection to server at "[^"]*"(, port \d+)? failed: ', "", text)
    text = re.sub(r"^connection to server on socket \"[^\"]*\" failed: ", "", text)
    text = re.sub(r"^(FATAL|ERROR):\s+", "", text)
    text = text.removeprefix("invalid dsn: ")
    return text or "unknown error"


def _hint_for(reason: str) -> str:
    low = reason.lower()
    if "password authentication failed" in low or "no password supplied" in low:
        return "check the user and password (in the URL, PGPASSWORD or ~/.pgpass)"
    if "does not exist" in low and "database" in low:
        return "create the database (createdb NAME) or point --store at an existing one"
    if "role" in low and "does not exist" in low:
        return "check the user name in the connection string"
    if "refused" in low or "timeout" in low or "timed out" in low:
        return "is the server running and reachable? check the host and port"
    if "resolve host" in low or "name or service not known" in low:
        return "check the host name in the connection string"
    if "permission denied" in low:
        return "the role needs CREATE on the schema the first time (the store makes its " \
               "tables), then SELECT/INSERT on them"
    return _HINT_URL if "invalid" in low else ""
