"""A council's declaration: the validated spec built from its calls, compiled with its handlers."""

from __future__ import annotations

from typing import Any

from wopdsl.compile import CouncilGraph
from wopdsl.compile import compile as compile_graph
from wopdsl.compile.handlers import spec_with_references
from wopdsl.council.building import CouncilBuilder
from wopdsl.declare.toml import declaration_from_data
from wopdsl.errors import DeclarationError, Problem
from wopdsl.model.spec import CouncilSettings, CouncilSpec, MemberSpec, RoomSpec

__all__ = ["CouncilDeclaration"]


class CouncilDeclaration(CouncilBuilder):
    """The spec a :class:`~wopdsl.Council` declares and the graph it compiles to."""

    @property
    def spec(self) -> CouncilSpec:
        """The validated, inert declaration.

        Raises:
            DeclarationError: every problem, with field paths.
        """
        if self._spec is None:
            data: dict[str, Any] = {"council": self._settings, "rooms": self._rooms,
                                    "members": self._members}
            if self._models:
                data["models"] = self._models
            if self._mcp:
                data["mcp"] = self._mcp
            if self._decisions:
                data["decisions"] = self._decisions
            declaration = declaration_from_data(
                data, source=f"Council({self._settings.get('id')!r})")
            self._declaration = declaration
            self._spec = declaration.spec
        return self._spec

    @property
    def id(self) -> str:
        """The council id."""
        return self.spec.council.id

    @property
    def settings(self) -> CouncilSettings:
        """The ``[council]`` table."""
        return self.spec.council

    @property
    def rooms(self) -> list[RoomSpec]:
        """The rooms, in declaration order."""
        return list(self.spec.rooms)

    @property
    def members(self) -> list[MemberSpec]:
        """The members, in declaration order."""
        return list(self.spec.members)

    def compile(self) -> CouncilGraph:
        """Compile the declaration with its bound handlers.

        The graph is immutable, so it is compiled once and reused (each run of the council
        starts from it) until a room, member or handler is added.

        Raises:
            DeclarationError: every problem, located in the council file when there is one.
        """
        spec = self.spec
        key = (self.base_dir, self.source, *self.handlers.items(), *self.tools.items())
        if self._compiled is not None and self._compiled[1].spec is spec \
                and self._compiled[0] == key:
            return self._compiled[1]
        declaration = self._declaration if (
            self._declaration is not None and self._declaration.spec is spec) else None
        try:
            graph = compile_graph(spec, self.handlers, base_dir=self.base_dir,
                                  source=self.source, checked=declaration is not None,
                                  tools=self.tools)
        except DeclarationError as exc:
            if declaration is None:
                raise
            # Template, handler and schema problems carry field paths: place them in the
            # file with the source map kept from the load (the file is not read again).
            raise DeclarationError(declaration.locate(exc.problems)) from None
        self._compiled = (key, graph)
        return graph

    def check_runnable(self) -> CouncilGraph:
        """Compile, and refuse a council that ``wop run`` could not run as it stands.

        Raises:
            DeclarationError: every compile problem, or each python member without a
                handler, located in the council file when there is one.
        """
        graph = self.compile()
        problems = [
            Problem(f"python member '{member}' has no handler, so `wop run` cannot run this "
                    "council", path=f"members[{graph.members[member].index}] ({member})",
                    hint='set handler = "module:function" (imported from the council '
                         "file's folder), or bind one in code with @council.bind and run it "
                         "from Python")
            for member in graph.unbound()
        ]
        if problems:
            declaration = self._declaration
            raise DeclarationError(declaration.locate(problems) if declaration is not None
                                   else problems)
        return graph

    def to_toml(self, *, handlers: bool = True) -> str:
        """Return the declaration in the TOML file format (``wop export``).

        Args:
            handlers: Write bound handlers as ``handler = "module:function"`` references, so
                the file runs with ``wop run`` from a folder where that module imports
                (default). ``False`` writes the declaration alone, as the spec holds it.

        Raises:
            DeclarationError: a python member's handler cannot be named in a file (a
                lambda, a nested function ...), or a python member has no handler.
        """
        from wopdsl.declare.export import to_toml

        return to_toml(spec_with_references(self.spec, self.handlers, self.tools) if handlers
                       else self.spec)
