"""Model profiles: the ``[models.NAME]`` tables that ``engine = "llm"`` members name.

A profile says where an OpenAI-compatible chat endpoint lives and how to call it. It holds
the *name* of the environment variable with the API key, never a key: the key is read when a
call is made and never enters a declaration, an event or a file.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
)

from wopdsl._described import Described
from wopdsl._ids import MAX_SAFE_INT

__all__ = [
    "DEFAULT_API_KEY_ENV",
    "DEFAULT_LLM_TURN_TIMEOUT_MS",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_REPAIR_ATTEMPTS",
    "ModelProfile",
    "NonNegativeNumber",
    "Observability",
    "StructuredOutput",
    "Temperature",
]

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
"""The environment variable a profile reads its key from unless it names another."""
DEFAULT_MAX_OUTPUT_TOKENS = 800
"""Most completion tokens a call may produce unless the profile or member says otherwise."""
DEFAULT_REPAIR_ATTEMPTS = 1
"""How often an invalid answer is re-asked with the validation error, by default."""
DEFAULT_LLM_TURN_TIMEOUT_MS = 900_000
"""The turn timeout of an ``llm`` member when neither it nor the council sets
``turn_timeout_ms`` (15 minutes: calls, retries and repairs together)."""


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(f"must be a finite number, got {value!r}")
    return value


NonNegativeNumber = Annotated[
    StrictInt | StrictFloat, Field(ge=0), AfterValidator(_finite)
]
"""A finite number ≥ 0 (an integer is accepted where TOML users write ``0``)."""

Temperature = Annotated[StrictInt | StrictFloat, Field(ge=0, le=2), AfterValidator(_finite)]
"""Sampling temperature, 0 … 2 as the OpenAI API accepts it."""

StructuredOutput = Literal["json_schema", "json_object"]
"""How the answer's shape is asked for: a strict JSON Schema, or JSON mode plus validation."""

Observability = Literal["hashed", "full"]
"""What ``prompt.composed`` carries: only hashes, or the composed bodies too."""

_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"


class ModelProfile(Described):
    """A ``[models.NAME]`` table: an OpenAI-compatible chat endpoint and how to call it."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", populate_by_name=True
    )

    model: StrictStr = Field(min_length=1, max_length=256)
    """The model name as the server knows it (``gpt-4o-mini``, ``qwen2.5:7b-instruct`` …)."""
    base_url: StrictStr | None = Field(default=None, pattern=r"^https?://\S+$")
    """The API root (``…/v1``); default: ``$OPENAI_BASE_URL`` when a call is made."""
    api_key_env: StrictStr = Field(default=DEFAULT_API_KEY_ENV, pattern=_ENV_NAME)
    """The NAME of the environment variable holding the API key (never a key)."""
    provider: StrictStr = Field(default="openai", pattern=r"^[a-z][a-z0-9._-]{0,63}$")
    """The provider id recorded in ``provider.usage`` and turn provenance."""
    temperature: Temperature | None = None
    """Sampling temperature (the server's default when absent)."""
    max_output_tokens: Annotated[StrictInt, Field(ge=1, le=MAX_SAFE_INT)] = (
        DEFAULT_MAX_OUTPUT_TOKENS
    )
    """Most completion tokens per call (also the worst case budgets reserve)."""
    max_concurrency: Annotated[StrictInt, Field(ge=1, le=1024)] = 4
    """Most calls in flight to this profile at once."""
    price_in_per_mtok: NonNegativeNumber | None = None
    """USD per million input tokens, for cost estimates (none: cost unknown)."""
    price_out_per_mtok: NonNegativeNumber | None = None
    """USD per million output tokens, for cost estimates."""
    structured_output: StructuredOutput = "json_schema"
    """``json_schema`` (strict schema) or ``json_object`` (JSON mode, checked after)."""
    stream: StrictBool = True
    """Stream tokens as they arrive (``output.chunk`` events for live viewers)."""
    retries: Annotated[StrictInt, Field(ge=0, le=16)] = 2
    """Transport retries per call (429, 5xx, timeouts, dropped streams)."""
    retry_backoff_ms: Annotated[StrictInt, Field(ge=0, le=600_000)] = 500
    """First retry delay; doubles per retry, with jitter; ``Retry-After`` wins."""
    request_timeout_ms: Annotated[StrictInt, Field(ge=1, le=MAX_SAFE_INT)] | None = None
    """A call's total deadline, streaming included (none: 300000, five minutes)."""
    observability: Observability = "hashed"
    """``prompt.composed`` carries hashes only, or (``full``) the composed prompts too."""

    def cost_usd(self, input_tokens: int, output_tokens: int) -> float | None:
        """Return the estimated cost of a call, or ``None`` when no price is set."""
        if self.price_in_per_mtok is None and self.price_out_per_mtok is None:
            return None
        return (input_tokens * (self.price_in_per_mtok or 0)
                + output_tokens * (self.price_out_per_mtok or 0)) / 1_000_000
