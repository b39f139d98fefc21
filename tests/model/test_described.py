"""Field descriptions come from attribute docstrings when a schema is made, not at import.

The schemas are what pydantic's ``use_attribute_docstrings`` gave; creating the classes reads
no source (checked in a fresh interpreter whose pydantic refuses to extract docstrings).
"""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap

from pydantic import BaseModel, ConfigDict, Field

from wopdsl import Post, Reply, Turn
from wopdsl._described import Described, attribute_docs
from wopdsl.declare import council_json_schema
from wopdsl.model.spec import CouncilSpec, MemberSpec, RoomSpec


class Inner(Described):
    value: int = 0
    """The inner value.

    Two paragraphs, cleaned as pydantic cleans them."""


class Base(Described):
    kept: str = Field("", description="given in Field")
    """not used: Field's description wins"""
    shared: str = ""
    """from the base"""


class Outer(Base):
    inner: list[Inner] = Field(default_factory=list)
    """Nested models, described too."""
    shared: str = ""
    """from the subclass"""
    undocumented: int = 0


class Reference(BaseModel):
    """What pydantic's own extraction gives, to compare with."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    value: int = 0
    """The inner value.

    Two paragraphs, cleaned as pydantic cleans them."""


def test_a_schema_describes_fields_as_use_attribute_docstrings_did() -> None:
    schema = Outer.model_json_schema()
    props = schema["properties"]
    assert props["kept"]["description"] == "given in Field"
    assert props["shared"]["description"] == "from the subclass"
    assert props["inner"]["description"] == "Nested models, described too."
    assert "description" not in props["undocumented"]
    inner = schema["$defs"]["Inner"]["properties"]["value"]
    assert inner["description"] == \
        Reference.model_json_schema()["properties"]["value"]["description"]
    assert Base.model_json_schema()["properties"]["shared"]["description"] == "from the base"


def test_every_field_of_the_council_file_schema_is_described() -> None:
    schema = council_json_schema()
    fields = [(name, prop) for model in schema["$defs"].values()
              for name, prop in model.get("properties", {}).items()]
    assert len(fields) > 80
    assert [name for name, prop in fields if not prop.get("description")] == []
    blind = schema["$defs"]["RoomSpec"]["properties"]["blind"]["description"]
    assert blind == attribute_docs(RoomSpec)["blind"]


def test_public_models_describe_their_fields() -> None:
    for model in (Turn, Reply, Post, MemberSpec, CouncilSpec):
        props = model.model_json_schema()["properties"]
        docs = attribute_docs(model)
        for name, field in model.model_fields.items():
            key = name if name in props else field.alias or field.serialization_alias
            assert props[key].get("description") == docs.get(name), (model, name)
        assert docs, model
    assert inspect.cleandoc(Turn.model_fields["member"].description or "") == "This member's id."


def test_creating_the_models_reads_no_source() -> None:
    code = textwrap.dedent("""
        import pydantic._internal._fields as fields

        def refuse(*args, **kwargs):
            raise AssertionError("a class read its source as it was created")

        fields.extract_docstrings_from_cls = refuse
        import wopdsl.cli._drive, wopdsl.council, wopdsl.compile, wopdsl.agents
        import wopdsl.evals.spec, wopdsl.protocol.event_model
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
