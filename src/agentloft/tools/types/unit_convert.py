"""Unit conversion with pint: lengths, masses, temperatures (offset units handled), speeds, data sizes,
energy, currencies excepted (they need rates, not physics).

The ``UnitRegistry`` takes a noticeable moment to build, so it is created once, on first use, and shared.
"""

from __future__ import annotations

import asyncio
import math
import threading
from typing import Any

from pydantic import Field

from agentloft.core.schemas import ApiModel
from agentloft.tools.base import ToolContext, ToolResult, ToolType

_registry: Any = None
_lock = threading.Lock()


def registry() -> Any:
    global _registry
    if _registry is None:
        with _lock:
            if _registry is None:
                import pint

                _registry = pint.UnitRegistry(autoconvert_offset_to_baseunit=True)
    return _registry


class Config(ApiModel):
    significant_digits: int = Field(default=10, ge=1, le=17, description="Significant digits in results.")


class Input(ApiModel):
    value: float = Field(description="The amount to convert, e.g. 3.5.")
    from_unit: str = Field(
        min_length=1, max_length=100, description="Unit of the value, e.g. 'miles', 'degF', 'kWh', 'GiB'."
    )
    to_unit: str = Field(min_length=1, max_length=100, description="Target unit, e.g. 'km', 'degC', 'MJ', 'MB'.")


def convert(value: float, from_unit: str, to_unit: str) -> tuple[float, str]:
    import pint

    ureg = registry()
    try:
        quantity = ureg.Quantity(value, from_unit)
        converted = quantity.to(to_unit)
    except pint.errors.DimensionalityError as exc:
        raise ValueError(
            f"cannot convert {from_unit} ({exc.dim1}) to {to_unit} ({exc.dim2})"
        ) from exc
    except (pint.errors.UndefinedUnitError, pint.errors.DefinitionSyntaxError, AttributeError) as exc:
        raise ValueError(f"unknown unit: {exc}") from exc
    return float(converted.magnitude), f"{converted.units:~}" or str(converted.units)


class UnitConvertTool(ToolType[Config, Input]):
    slug = "unit-convert"
    name = "Unit converter"
    description = "Converts amounts between units (length, mass, temperature, volume, speed, data, energy...)."
    Config = Config
    Input = Input

    def describe(self, config: Config) -> str:
        return (
            "Convert a value from one unit to another (metric, imperial, temperature with degC/degF/K, "
            "time, speed, pressure, energy, data sizes like MB/GiB). Not for currencies."
        )

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        await asyncio.to_thread(registry)  # the first build parses pint's unit files: keep it off the loop
        try:
            magnitude, symbol = convert(input.value, input.from_unit, input.to_unit)
        except ValueError as exc:
            return ToolResult.fail(str(exc))
        if not math.isfinite(magnitude):
            return ToolResult.fail("the result is not a finite number")
        rounded = float(f"{magnitude:.{config.significant_digits}g}")
        return ToolResult.ok({
            "value": rounded,
            "unit": input.to_unit,
            "symbol": symbol,
            "text": f"{input.value:g} {input.from_unit} = {rounded:g} {input.to_unit}",
        })


TOOL_TYPE = UnitConvertTool()
