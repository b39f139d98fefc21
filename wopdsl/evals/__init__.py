"""``wop eval``: does a council decide well? Councils over cases, side by side (DESIGN.md §23).

An eval file names cases, arms (a council each) and checks; :func:`load_eval` reads and
checks it, :class:`EvalRunner` runs every arm on every case (each run an ordinary stored run,
tagged ``eval=…``, ``arm=…``, ``case=…``, ``repeat=…``), and the report compares the arms:
pass rates with Wilson intervals, mean scores with bootstrap intervals, paired tests between
arms, cost, time and the deliberation metrics of DESIGN.md §22. Guide: docs/guides/eval.md.

Built on the public ``wopdsl`` API only; nothing here loads when ``import wopdsl`` runs.
"""

from wopdsl.evals.load import Arm, Check, Evaluation, load_eval
from wopdsl.evals.spec import ArmSpec, CaseSpec, CheckSpec, EvalSettings, EvalSpec

__all__ = [
    "Arm",
    "ArmSpec",
    "CaseSpec",
    "Check",
    "CheckSpec",
    "EvalSettings",
    "EvalSpec",
    "Evaluation",
    "load_eval",
]
