"""``wop eval --html FILE``: the report as one self-contained page, with plots.

Inline CSS and inline SVG drawn here, in Python: no script, no font, no image, nothing
fetched from anywhere — the file opens the same offline, attached to a CI run, in ten years.
Every text comes from the JSON report and is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any, Final

from wopdsl.evals.table import check_cell

__all__ = ["render_html"]

_CSS: Final = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;
max-width:72rem;padding:0 1rem;color:#1b1f24;background:#fff}
h1{font-size:1.5rem;margin:0 0 .25rem}h2{font-size:1.15rem;margin:2rem 0 .5rem}
.muted{color:#57606a}.ok{color:#1a7f37;font-weight:600}.bad{color:#cf222e;font-weight:600}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-variant-numeric:tabular-nums}
th,td{padding:.3rem .6rem;border-bottom:1px solid #d0d7de;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.n{text-align:right}code{font-size:12px}
.plots{display:flex;flex-wrap:wrap;gap:1rem}
figure{margin:0;border:1px solid #d0d7de;border-radius:6px;padding:.5rem}
figcaption{font-weight:600;margin-bottom:.25rem}
svg text{font:12px system-ui,sans-serif;fill:#1b1f24}
.bar{fill:#54aeff}.bar.b1{fill:#f0883e}.bar.b2{fill:#8250df}.bar.b3{fill:#2da44e}
.ci{stroke:#1b1f24;stroke-width:1.5}.gate{stroke:#cf222e;stroke-dasharray:4 3}
.axis{stroke:#8c959f}
"""
_WIDTH: Final = 460
_LABEL: Final = 90
_ROW: Final = 28


def _plot(title: str, rows: Sequence[tuple[str, float | None, float | None, float | None]],
          low: float, high: float, unit: str, gates: dict[str, float]) -> str:
    """Horizontal bars with 95 % interval whiskers, one per arm; gates as dashed marks."""
    inner = _WIDTH - _LABEL - 60
    height = len(rows) * _ROW + 30
    span = (high - low) or 1.0

    def x(value: float) -> float:
        return _LABEL + inner * (min(max(value, low), high) - low) / span

    parts = [f'<svg class="plot" role="img" width="{_WIDTH}" height="{height}" '
             f'viewBox="0 0 {_WIDTH} {height}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{escape(title)}</title>",
             f'<line class="axis" x1="{_LABEL}" y1="{height - 22}" x2="{_LABEL + inner}" '
             f'y2="{height - 22}"/>']
    for tick in (low, (low + high) / 2, high):
        parts.append(f'<text x="{x(tick):.1f}" y="{height - 6}" text-anchor="middle">'
                     f"{_fmt(tick, unit)}</text>")
    for i, (arm, value, lo, hi) in enumerate(rows):
        top = 6 + i * _ROW
        parts.append(f'<text x="{_LABEL - 6}" y="{top + 14}" text-anchor="end">'
                     f"{escape(arm)}</text>")
        if value is None:
            parts.append(f'<text x="{_LABEL + 4}" y="{top + 14}">no result</text>')
            continue
        width = max(x(value) - _LABEL, 1.0)
        parts.append(f'<rect class="bar b{i % 4}" x="{_LABEL}" y="{top + 3}" '
                     f'width="{width:.1f}" height="{_ROW - 10}"><title>{escape(arm)}: '
                     f"{_fmt(value, unit)}</title></rect>")
        if lo is not None and hi is not None:
            mid = top + 3 + (_ROW - 10) / 2
            parts.append(f'<line class="ci" x1="{x(lo):.1f}" y1="{mid}" x2="{x(hi):.1f}" '
                         f'y2="{mid}"/><line class="ci" x1="{x(lo):.1f}" y1="{mid - 5}" '
                         f'x2="{x(lo):.1f}" y2="{mid + 5}"/><line class="ci" x1="{x(hi):.1f}" '
                         f'y1="{mid - 5}" x2="{x(hi):.1f}" y2="{mid + 5}"/>')
        parts.append(f'<text x="{x(value) + 6:.1f}" y="{top + 14}">{_fmt(value, unit)}</text>')
        if arm in gates:
            g = x(gates[arm])
            parts.append(f'<line class="gate" x1="{g:.1f}" y1="{top}" x2="{g:.1f}" '
                         f'y2="{top + _ROW - 4}"><title>gate {gates[arm]:g}</title></line>')
    parts.append("</svg>")
    return "".join(parts)


def _fmt(value: float, unit: str) -> str:
    return f"{100 * value:.0f} %" if unit == "%" else f"{value:.4g}"


def _check_plots(doc: dict[str, Any]) -> str:
    figures = []
    for check in doc["checks"]:
        gates = {g["arm"]: float(g["threshold"]) for g in doc["gates"]
                 if g["check"] == check["id"]}
        rows = []
        scale = (0.0, 1.0)
        for arm in doc["arms"]:
            f = arm["checks"][check["id"]]
            if f["kind"] == "score":
                scale = (float(f["scale"][0]), float(f["scale"][1]))
                rows.append((arm["id"], f["mean"], f["low"], f["high"]))
            else:
                rows.append((arm["id"], f["rate"], f["low"], f["high"]))
        unit = "" if check["scored"] else "%"
        what = "mean score" if check["scored"] else "pass rate"
        title = f"{check['id']}: {what} per arm, 95 % interval"
        figures.append(f"<figure><figcaption>{escape(title)}</figcaption>"
                       f"{_plot(title, rows, *scale, unit, gates)}</figure>")
    tokens = [(a["id"], a["tokens"]["perRun"], None, None) for a in doc["arms"]]
    most = max([t[1] or 0 for t in tokens] + [1])
    figures.append("<figure><figcaption>tokens per run</figcaption>"
                   f"{_plot('tokens per run', tokens, 0.0, float(most), '', {})}</figure>")
    walls = [(a["id"], a["wallS"]["perRun"], None, None) for a in doc["arms"]]
    slowest = max([w[1] or 0 for w in walls] + [0.001])
    figures.append("<figure><figcaption>wall time per run (s)</figcaption>"
                   f"{_plot('wall time per run', walls, 0.0, float(slowest), '', {})}</figure>")
    return f'<div class="plots">{"".join(figures)}</div>'


def _table(head: list[str], rows: list[list[str]], numeric: frozenset[int] = frozenset()) -> str:
    out = ["<table><thead><tr>", *(f"<th>{escape(h)}</th>" for h in head), "</tr></thead><tbody>"]
    for row in rows:
        out.append("<tr>" + "".join(f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def _sections(doc: dict[str, Any]) -> list[str]:
    rows = [[escape(a["id"]), escape(c["id"]), *map(escape, check_cell(a["checks"][c["id"]])),
             str(a["checks"][c["id"]]["n"]), str(a["checks"][c["id"]]["errors"])]
            for a in doc["arms"] for c in doc["checks"]]
    out = ["<h2>Checks</h2>", _table(["arm", "check", "pass rate / mean", "95 % interval", "n",
                                      "errors"], rows, frozenset({4, 5}))]
    rows = []
    for a in doc["arms"]:
        talk, cost = a["deliberation"], a["costUsd"]
        rows.append([escape(a["id"]), escape(a["council"]), str(a["runs"]), str(a["failed"]),
                     _num(a["tokens"]["perRun"], 0), f"${cost['total']:.4f}" if cost else "–",
                     _num(a["wallS"]["perRun"]), _num(a["turns"]["perRun"], 1),
                     _num(talk["flipsPerRun"]), _pct(talk["firstAnswerSurvival"]),
                     _num(talk["dissentPerDecision"]), _pct(talk["unanimous"])])
    out += ["<h2>Arms</h2>", _table(
        ["arm", "council", "runs", "failed", "tokens/run", "cost", "wall/run (s)", "turns/run",
         "flips/run", "first answers kept", "dissent/decision", "unanimous"], rows,
        frozenset(range(2, 12)))]
    if doc["comparisons"]:
        rows = [[escape(f"{c['a']} vs {c['b']}"), escape(c["check"]), escape(c["test"]),
                 str(c["pairs"]), _effect(c), "–" if c["p"] is None else f"{c['p']:.4g}"]
                for c in doc["comparisons"]]
        out += ["<h2>Paired comparison</h2><p class=muted>The same cases and repeats, arm A "
                "against arm B.</p>",
                _table(["A vs B", "check", "test", "pairs", "effect (A − B)", "p"], rows,
                       frozenset({3, 5}))]
    if doc["gates"]:
        rows = [[escape(g["check"]), escape(g["arm"]), f"{g['threshold']:g}",
                 "–" if g["value"] is None else f"{g['value']:.4g}",
                 '<span class="ok">ok</span>' if g["passed"] else '<span class="bad">failed</span>']
                for g in doc["gates"]]
        out += ["<h2>Gates</h2>", _table(["check", "arm", "threshold", "value", ""], rows)]
    return out


def _effect(c: dict[str, Any]) -> str:
    if c["effect"] is None:
        return "–"
    if c["test"] == "McNemar exact":
        return f"{100 * c['effect']:+.1f} pt (A only {c['aOnly']}, B only {c['bOnly']})"
    return f"{c['effect']:+.2f} [{c['low']:+.2f}, {c['high']:+.2f}]"


def _runs(doc: dict[str, Any]) -> list[str]:
    checks = [c["id"] for c in doc["checks"]]
    rows = []
    for run in doc["runs"]:
        cells = []
        for check in checks:
            result = run["checks"].get(check, {})
            label = "error" if "error" in result else (
                f"{result['score']:g}" if "score" in result else
                "pass" if result.get("passed") else "fail")
            why = result.get("error") or result.get("explanation") or ""
            cells.append(f'<span title="{escape(why)}">{escape(label)}</span>')
        rows.append([escape(run["arm"]), escape(run["case"]), str(run["repeat"]),
                     escape(run["status"]), *cells, f"<code>{escape(run['runId'])}</code>"])
    return ["<h2>Runs</h2><p class=muted>Each is a stored run: <code>wop transcript RUN</code>, "
            "<code>wop diff RUN_A RUN_B</code>, <code>wop trace RUN</code> open it.</p>",
            _table(["arm", "case", "repeat", "status", *checks, "run"], rows)]


def _compared(comparison: dict[str, Any]) -> list[str]:
    rows = []
    for c in comparison["changes"]:
        flag = ('<span class="bad">regressed (significant)</span>' if c["significant"] else
                '<span class="bad">regressed</span>') if c["regressed"] else ""
        delta = "–" if c["delta"] is None else f"{c['delta']:+.4g}"
        rows.append([escape(c["arm"]), escape(c["check"]), escape(check_cell(c["old"])[0]),
                     escape(check_cell(c["new"])[0]), delta, flag])
    return [f"<h2>Compared with {escape(comparison['file'])}</h2>",
            _table(["arm", "check", "before", "now", "change", ""], rows, frozenset({4}))]


def render_html(doc: dict[str, Any]) -> str:
    """The page (see the module docs)."""
    head = doc["eval"]
    status = "complete" if doc["status"] == "complete" else \
        f"partial: {doc['finished']} of {doc['planned']} runs"
    verdict = "" if doc["passed"] is None else (
        '<span class="ok">every gate holds</span>' if doc["passed"]
        else '<span class="bad">a gate fails</span>')
    body = [f"<h1>eval {escape(head['id'])}</h1>",
            f"<p>{escape(head['description'])}</p>" if head["description"] else "",
            f'<p class="muted">{escape(head["file"])} · {len(doc["arms"])} arms × '
            f"{head['cases']} cases × {head['repeats']} repeats · {doc['finished']} runs in "
            f"{doc['wallS']:.1f} s · {escape(status)} {verdict}</p>",
            _check_plots(doc), *_sections(doc), *_runs(doc)]
    if "comparedWith" in doc:
        body += _compared(doc["comparedWith"])
    if doc["problems"]:
        body.append("<h2>Recorded answers that did not match</h2><pre>"
                    + escape("\n\n".join(doc["problems"])) + "</pre>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>eval {escape(head['id'])}</title>"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<style>{_CSS}</style></head><body>{''.join(body)}</body></html>\n")
