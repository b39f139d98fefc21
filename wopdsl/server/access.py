"""Who may do what to a run, on a host with tokens (without tokens, the one local user may).

- The principal who started a run (kept in ``run.started`` as ``metadata.principal``; a
  fork belongs to who forked it) may read, fork and cancel it, and post as its members
  that name no principal.
- A principal named by one of the run's members (``principal = "bob"``) may read the run
  and post as that member — a guest of the run. It may not fork or cancel it.
- An admin (``[admins] principals = [...]`` in the tokens file) may read, fork and cancel
  every run, and post as its members that name no principal.
- A member that names a principal speaks only for that principal, whoever else asks.
- A tool call's approval is decided by who may act as its approver (``approve``, as
  ``post``): the approver's principal when it names one, else the starter or an admin — a
  guest of the run may read that a call waits, not decide it.

Everything else is refused with 403 ``forbidden``, before anything is read or appended.
"""

from __future__ import annotations

from typing import Final, Literal

from wopdsl import CouncilState
from wopdsl.server.config import Tokens
from wopdsl.server.errors import ApiError

__all__ = ["Access", "Action", "owner_of"]

Action = Literal["read", "fork", "cancel", "post", "approve"]

_OWNER_ONLY: Final = frozenset({"fork", "cancel"})
_AS_MEMBER: Final = frozenset({"post", "approve"})
"""Actions taken as a member: that member's principal alone, when it names one."""


def owner_of(state: CouncilState) -> str | None:
    """The principal who started the run (``None`` for a run started outside a host)."""
    owner = state.metadata.get("principal")
    return owner if isinstance(owner, str) else None


def _guests(state: CouncilState) -> dict[str, list[str]]:
    """Principals named by the run's members, with the members naming each one."""
    named: dict[str, list[str]] = {}
    for member in state.council.get("members", []):
        principal = member.get("principal")
        if isinstance(principal, str):
            named.setdefault(principal, []).append(str(member.get("id")))
    return named


class Access:
    """The run rules of a host (see the module).

    Args:
        tokens: The host's tokens (empty: every caller may do everything).
    """

    def __init__(self, tokens: Tokens) -> None:
        self.tokens = tokens

    def check(self, principal: str, state: CouncilState, action: Action,
              member: str | None = None, reserved: str | None = None) -> None:
        """Allow ``principal`` to ``action`` the run, or raise 403 ``forbidden``.

        Args:
            principal: The caller.
            state: The run.
            action: ``read``, ``fork``, ``cancel``, ``post`` (as ``member``) or ``approve``
                (decide a tool call whose approver is ``member``).
            member: For ``post``: the member who speaks; for ``approve``: the approver.
            reserved: For ``post`` and ``approve``: the principal that member names, if any.
        """
        if not self.tokens:
            return
        if action in _AS_MEMBER and reserved is not None:
            if reserved == principal:
                return
            doing = "speaks" if action == "post" else "decides its approvals"
            raise ApiError(403, "forbidden", f"member {member} {doing} only for its principal; "
                           "this token belongs to another", {"member": member})
        owner = owner_of(state)
        if principal == owner or principal in self.tokens.admins:
            return
        if action == "read" and principal in _guests(state):
            return
        raise _forbidden(state, principal, action, member)


def _forbidden(state: CouncilState, principal: str, action: Action,
               member: str | None) -> ApiError:
    doing = {"read": "read", "fork": "fork", "cancel": "cancel",
             "post": f"post as {member} in",
             "approve": f"decide the approvals of {member} in"}[action]
    details: dict[str, object] = {"runId": state.run_id, "action": action}
    if member is not None:
        details["member"] = member
    if action in _OWNER_ONLY or action in _AS_MEMBER:
        who = "who started it or an admin"
    else:
        who = "who started it, a principal one of its members names, or an admin"
    details["hint"] = f"only {who} may {doing} this run"
    return ApiError(403, "forbidden", f"{principal} may not {doing} run {state.run_id}: it "
                    "was started by another principal", details)
