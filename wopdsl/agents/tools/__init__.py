"""Tools of ``llm`` members: Python functions and MCP servers (DESIGN.md §20).

Importing this package imports neither ``mcp`` nor any user module; the first server start
imports the ``mcp`` package (``wopdsl[mcp]``).
"""

from wopdsl.agents.tools.base import (
    Policy,
    Tool,
    ToolFault,
    ToolOutput,
    ToolSetupError,
    as_text,
)
from wopdsl.agents.tools.mcp import McpConnection, McpTool, ServerDied
from wopdsl.agents.tools.python import PythonTool, describe_function
from wopdsl.agents.tools.toolset import Toolset

__all__ = [
    "McpConnection",
    "McpTool",
    "Policy",
    "PythonTool",
    "ServerDied",
    "Tool",
    "ToolFault",
    "ToolOutput",
    "ToolSetupError",
    "Toolset",
    "as_text",
    "describe_function",
]
