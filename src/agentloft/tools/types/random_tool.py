"""Random: numbers, choices, shuffles, UUIDs and passwords from the operating system's secure source.

Models cannot produce randomness (they repeat favourite numbers); every value here comes from
``secrets`` / ``SystemRandom``, so a password generated here is fit for use.
"""

from __future__ import annotations

import secrets
import string
import uuid
from typing import Any, Literal

from pydantic import Field

from agentloft.core.schemas import ApiModel
from agentloft.tools.base import ToolContext, ToolResult, ToolType

Operation = Literal["integer", "float", "choice", "sample", "shuffle", "uuid", "password", "token"]
_rng = secrets.SystemRandom()
SYMBOLS = "!#$%&()*+,-./:;<=>?@[]^_{|}~"


class Config(ApiModel):
    max_count: int = Field(default=1_000, ge=1, le=100_000, description="Most values produced by one call.")
    max_password_length: int = Field(default=256, ge=8, le=4_096, description="Longest password generated.")


class Input(ApiModel):
    operation: Operation = Field(
        description="integer/float: numbers in [min, max]; choice: pick from `items` (with repetition); "
        "sample: pick distinct items; shuffle: reorder `items`; uuid: random UUIDs (v4); password: secure "
        "passwords; token: URL-safe random tokens."
    )
    min: float = Field(default=0, description="Lower bound for integer/float (inclusive).")
    max: float = Field(default=100, description="Upper bound for integer/float (inclusive).")
    count: int = Field(default=1, ge=1, description="How many values.")
    items: list[Any] = Field(default_factory=list, description="Items for choice, sample and shuffle.")
    length: int = Field(default=20, ge=4, description="Password length in characters, or token size in bytes.")
    symbols: bool = Field(default=True, description="Whether passwords include symbols.")


def password(length: int, symbols: bool) -> str:
    """A password with at least one lower, upper, digit (and symbol), uniformly random otherwise."""
    classes = [string.ascii_lowercase, string.ascii_uppercase, string.digits] + ([SYMBOLS] if symbols else [])
    alphabet = "".join(classes)
    chars = [secrets.choice(c) for c in classes]
    chars += [secrets.choice(alphabet) for _ in range(length - len(chars))]
    _rng.shuffle(chars)
    return "".join(chars)


def _numbers(inp: Input) -> list[int | float]:
    if inp.min > inp.max:
        raise ValueError("min must not be greater than max")
    if inp.operation == "float":
        return [_rng.uniform(inp.min, inp.max) for _ in range(inp.count)]
    low, high = int(inp.min), int(inp.max)
    if low != inp.min or high != inp.max:
        raise ValueError("integer bounds must be whole numbers")
    return [_rng.randint(low, high) for _ in range(inp.count)]


def generate(inp: Input, config: Config) -> Any:
    if inp.count > config.max_count:
        raise ValueError(f"count is limited to {config.max_count}")
    op = inp.operation
    if op in ("integer", "float"):
        return _numbers(inp)
    if op in ("choice", "sample", "shuffle") and not inp.items:
        raise ValueError(f"'{op}' needs a non-empty `items` list")
    if op == "choice":
        return [secrets.choice(inp.items) for _ in range(inp.count)]
    if op == "sample":
        if inp.count > len(inp.items):
            raise ValueError(f"cannot pick {inp.count} distinct items out of {len(inp.items)}")
        return _rng.sample(inp.items, inp.count)
    if op == "shuffle":
        items = list(inp.items)
        _rng.shuffle(items)
        return items
    if op == "uuid":
        return [str(uuid.uuid4()) for _ in range(inp.count)]
    if inp.length > config.max_password_length:
        raise ValueError(f"length is limited to {config.max_password_length}")
    if op == "password":
        return [password(inp.length, inp.symbols) for _ in range(inp.count)]
    return [secrets.token_urlsafe(inp.length) for _ in range(inp.count)]


class RandomTool(ToolType[Config, Input]):
    slug = "random"
    name = "Random"
    description = "Secure random numbers, choices, shuffles, UUIDs and passwords."
    Config = Config
    Input = Input

    def describe(self, config: Config) -> str:
        return (
            "Generate randomness you cannot produce yourself: integers or floats in a range, a random choice "
            "or sample from a list, a shuffled list, UUIDs, secure passwords or tokens."
        )

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        try:
            values = generate(input, config)
        except ValueError as exc:
            return ToolResult.fail(str(exc))
        return ToolResult.ok({"values": values, "value": values[0] if len(values) == 1 else None})


TOOL_TYPE = RandomTool()
