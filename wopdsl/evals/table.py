"""The report as text: the tables ``wop eval`` prints (and the pytest fixture fails with).

Rendered from the JSON report alone, so a report read back from a file prints the same.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check_cell", "render_report", "render_table"]


def render_table(rows: list[tuple[str, ...]], right: frozenset[int] = frozenset()) -> list[str]:
    """Rows as aligned columns (the first row is the header); ``right``: right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
                 for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return lines


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def check_cell(figures: dict[str, Any]) -> tuple[str, str]:
    """The value and interval cells of one arm × check."""
    if figures["kind"] == "score":
        if figures["mean"] is None:
            return "-", "-"
        return f"{figures['mean']:.2f}", f"[{figures['low']:.2f}, {figures['high']:.2f}]"
    if figures["rate"] is None:
        return "-", "-"
    return (f"{_pct(figures['rate'])} ({figures['passed']}/{figures['n']})",
            f"[{100 * figures['low']:.1f}, {100 * figures['high']:.1f}]")


def _checks(doc: dict[str, Any]) -> list[str]:
    rows: list[tuple[str, ...]] = [("ARM", "CHECK", "PASS RATE / MEAN", "95 % CI", "N", "ERRORS")]
    for arm in doc["arms"]:
        for check in doc["checks"]:
            figures = arm["checks"][check["id"]]
            rows.append((arm["id"], check["id"], *check_cell(figures), str(figures["n"]),
                         str(figures["errors"])))
    return render_table(rows, frozenset({4, 5}))


def _arms(doc: dict[str, Any]) -> list[str]:
    rows: list[tuple[str, ...]] = [("ARM", "RUNS", "FAILED", "TOKENS/RUN", "COST", "WALL/RUN",
                                    "TURNS/RUN", "FLIPS/RUN", "SURVIVAL", "DISSENT/DEC")]
    for arm in doc["arms"]:
        cost = arm["costUsd"]
        talk = arm["deliberation"]
        rows.append((arm["id"], str(arm["runs"]), str(arm["failed"]),
                     _num(arm["tokens"]["perRun"], 0), f"${cost['total']:.4f}" if cost else "-",
                     f"{_num(arm['wallS']['perRun'])} s", _num(arm["turns"]["perRun"], 1),
                     _num(talk["flipsPerRun"]), _pct(talk["firstAnswerSurvival"]),
                     _num(talk["dissentPerDecision"])))
    return render_table(rows, frozenset(range(1, 10)))


def _comparisons(doc: dict[str, Any]) -> list[str]:
    if not doc["comparisons"]:
        return []
    rows: list[tuple[str, ...]] = [("A VS B", "CHECK", "TEST", "PAIRS", "EFFECT (A-B)", "95 % CI",
                                    "p")]
    for c in doc["comparisons"]:
        if c["effect"] is None:
            effect = interval = "-"
        elif c["test"] == "McNemar exact":
            effect = f"{100 * c['effect']:+.1f} pt"
            interval = f"A only {c['aOnly']}, B only {c['bOnly']}"
        else:
            effect = f"{c['effect']:+.2f}"
            interval = f"[{c['low']:+.2f}, {c['high']:+.2f}]"
        rows.append((f"{c['a']} vs {c['b']}", c["check"], c["test"], str(c["pairs"]), effect,
                     interval, "-" if c["p"] is None else f"{c['p']:.4g}"))
    return ["", "paired comparison (same cases and repeats)",
            *render_table(rows, frozenset({3, 4}))]


def _gates(doc: dict[str, Any]) -> list[str]:
    if not doc["gates"]:
        return []
    lines = ["", "gates"]
    for gate in doc["gates"]:
        value = "-" if gate["value"] is None else f"{gate['value']:.4g}"
        verdict = "ok" if gate["passed"] else "FAILED"
        lines.append(f"  {gate['check']} >= {gate['threshold']:g} on {gate['arm']}: "
                     f"{value} {verdict}")
    return lines


def render_report(doc: dict[str, Any]) -> str:
    """The report's tables, its comparisons and its gates."""
    head = doc["eval"]
    status = "" if doc["status"] == "complete" else \
        f" — PARTIAL: {doc['finished']} of {doc['planned']} runs"
    lines = [f"eval {head['id']}: {len(doc['arms'])} arm(s) x {head['cases']} case(s) x "
             f"{head['repeats']} repeat(s), {doc['finished']} runs in {doc['wallS']:.1f} s"
             f"{status}", "", *_checks(doc), "", *_arms(doc), *_comparisons(doc),
             *_gates(doc)]
    if doc["problems"]:
        lines += ["", "recorded answers that did not match:",
                  *(f"  {p.splitlines()[0]}" for p in doc["problems"])]
    return "\n".join(lines) + "\n"
