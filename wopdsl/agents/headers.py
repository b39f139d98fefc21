"""HTTP header values read from environment variables, when a remote is first reached.

``a2a`` members and MCP servers over HTTP name each header's variable in the declaration
(``headers = { Authorization = "env:TOKEN" }``), never its value. :func:`header_values`
reads them all; a variable that is not set is an :class:`UnsetHeader` naming the header
and the variable (never a value), which each caller words as its own setup error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["UnsetHeader", "header_values"]


class UnsetHeader(Exception):
    """A header's environment variable is not set.

    Args:
        header: The header's name.
        variable: The variable it comes from.
    """

    def __init__(self, header: str, variable: str) -> None:
        super().__init__(f"header {header} comes from environment variable {variable}, "
                         "which is not set")
        self.header = header
        self.variable = variable
        self.hint = f"export {variable}=... before the run"

    def said_of(self, whose: str) -> str:
        """The error's text, the header named as ``whose`` says (``"analyst's header"``)."""
        return (f"{whose} {self.header} comes from environment variable {self.variable}, "
                "which is not set")


def header_values(variables: Mapping[str, str]) -> dict[str, str]:
    """Header name → value, each read from its variable (header name → variable name).

    Raises:
        UnsetHeader: the first header whose variable is not set.
    """
    values = {}
    for header, variable in variables.items():
        value = os.environ.get(variable)
        if value is None:
            raise UnsetHeader(header, variable)
        values[header] = value
    return values
