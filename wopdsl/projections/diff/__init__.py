"""``wop diff``: two runs side by side (transcripts, speaking order, work, outcome).

:func:`diff_runs` folds each run's events once and returns a :class:`RunDiff`; ``Run.diff``
and the CLI call it. It reads events only (layer L3), so the two runs may come from
different stores.
"""

from wopdsl.projections.diff.align import align
from wopdsl.projections.diff.compare import compare_facts, diff_runs
from wopdsl.projections.diff.facts import RunFacts, fold_facts
from wopdsl.projections.diff.render import RunDiff

__all__ = ["RunDiff", "RunFacts", "align", "compare_facts", "diff_runs", "fold_facts"]
