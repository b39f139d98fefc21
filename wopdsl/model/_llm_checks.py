"""Private checks of ``llm`` members and model profiles (run by ``check_spec``)."""

from __future__ import annotations

import difflib
import importlib.util

from wopdsl.errors import Problem
from wopdsl.model.spec import CouncilSpec, MemberSpec

__all__ = ["LLM_ONLY_KEYS", "check_budget", "check_llm_member", "llm_extra_installed"]

LLM_ONLY_KEYS = ("model", "temperature", "max_output_tokens", "system_prompt", "turn_prompt",
                 "repair_attempts")
"""Member keys that only ``engine = "llm"`` takes."""


def llm_extra_installed() -> bool:
    """Whether the ``openai`` package (the ``wopdsl[llm]`` extra) can be imported.

    Looks the package up without importing it: ``import wopdsl`` and ``compile()`` stay light.
    """
    try:
        return importlib.util.find_spec("openai") is not None
    except (ImportError, ValueError):  # a broken or blocked install counts as missing
        return False


def check_llm_member(spec: CouncilSpec, member: MemberSpec, where: str) -> list[Problem]:
    """Return the problems of one member's ``llm`` keys (or of those keys on another engine)."""
    problems: list[Problem] = []
    if member.engine != "llm":
        for key in LLM_ONLY_KEYS:
            if getattr(member, key) is not None:
                problems.append(Problem(
                    f"{key} is only for engine 'llm' (this member's engine is "
                    f"'{member.engine}')",
                    path=f"{where}.{key}", hint=f'set engine = "llm", or remove {key}'))
        return problems
    profiles = list(spec.models)
    if member.model is None:
        problems.append(Problem(
            "engine 'llm' needs model = \"<profile>\", the name of a [models.NAME] table",
            path=f"{where}.engine",
            hint=(f'add model = "{profiles[0]}"' if profiles else
                  'declare [models.local] with model = "..." and add model = "local"')))
    elif member.model not in spec.models:
        close = difflib.get_close_matches(member.model, profiles, n=1, cutoff=0.6)
        problems.append(Problem(
            f"model '{member.model}' is not a declared profile (profiles: "
            f"{', '.join(profiles) or 'none'})",
            path=f"{where}.model",
            hint=(f"did you mean '{close[0]}'?" if close else
                  f'declare it as [models.{member.model}] with model = "..."')))
    if not llm_extra_installed():
        problems.append(Problem(
            "engine 'llm' needs the openai package, which is not installed",
            path=f"{where}.engine",
            hint="pip install 'wopdsl[llm]'"))
    return problems


def check_budget(spec: CouncilSpec) -> list[Problem]:
    """A cost budget needs prices on every profile an ``llm`` member calls."""
    if spec.council.max_cost_usd is None:
        return []
    used = {m.model for m in spec.members if m.engine == "llm" and m.model in spec.models}
    unpriced = sorted(name for name in used
                      if spec.models[name].price_in_per_mtok is None
                      and spec.models[name].price_out_per_mtok is None)
    if not unpriced:
        return []
    return [Problem(
        f"max_cost_usd needs prices, but profile(s) {', '.join(unpriced)} set none",
        path="council.max_cost_usd",
        hint="set price_in_per_mtok and price_out_per_mtok on "
             + ", ".join(f"[models.{n}]" for n in unpriced) + ", or remove max_cost_usd")]
