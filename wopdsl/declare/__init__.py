"""Declare councils: TOML files in, TOML files out."""

from wopdsl.declare.export import to_toml
from wopdsl.declare.schema import council_json_schema
from wopdsl.declare.toml import load_spec, loads_spec

__all__ = ["council_json_schema", "load_spec", "loads_spec", "to_toml"]
