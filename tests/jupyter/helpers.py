"""Read what a notebook executed by ``run_notebook`` shows: outputs and saved widget state."""

from __future__ import annotations

from typing import Any


def cell(nb: Any, cell_id: str) -> Any:
    """The cell with this id."""
    for c in nb.cells:
        if c.get("id") == cell_id:
            return c
    raise KeyError(f"no cell {cell_id!r} in the notebook")


def stdout(nb: Any, cell_id: str) -> str:
    """Everything the cell printed."""
    return "".join(o.get("text", "") for o in cell(nb, cell_id).outputs
                   if o.output_type == "stream" and o.name == "stdout")


def result(nb: Any, cell_id: str, mime: str = "text/plain") -> str:
    """The cell's ``Out[]`` value in ``mime``."""
    outs = [o for o in cell(nb, cell_id).outputs if o.output_type == "execute_result"]
    assert len(outs) == 1, cell(nb, cell_id).outputs
    return str(outs[0].data[mime])


def displays(nb: Any, cell_id: str) -> list[Any]:
    """The cell's ``display_data`` outputs."""
    return [o for o in cell(nb, cell_id).outputs if o.output_type == "display_data"]


def widget_state(nb: Any) -> dict[str, Any]:
    """Model id -> ``{model_name, state}`` as saved by nbclient."""
    saved = nb.metadata.get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {})
    return dict(saved.get("state", {}))


def live_view(nb: Any, cell_id: str) -> tuple[str, list[dict[str, Any]]]:
    """The HTML and the widget models of the live view a cell displayed.

    Returns:
        The view's HTML as last saved, and every model under its container (flattened).
    """
    (out,) = displays(nb, cell_id)
    models = widget_state(nb)
    root = out.data["application/vnd.jupyter.widget-view+json"]["model_id"]

    def walk(model_id: str) -> list[dict[str, Any]]:
        model = models[model_id]
        found = [model]
        for child in model["state"].get("children", []):
            found += walk(child.removeprefix("IPY_MODEL_"))
        return found

    tree = walk(root)
    html_model = tree[1]
    assert html_model["model_name"] == "HTMLModel"
    return str(html_model["state"]["value"]), tree
