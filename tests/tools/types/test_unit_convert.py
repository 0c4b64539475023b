from __future__ import annotations

import pytest

from agentloft.tools.types.unit_convert import TOOL_TYPE as UNITS
from tests.tools.types.conftest import Run


@pytest.mark.parametrize(
    ("value", "src", "dst", "expected"),
    [
        (1, "mile", "km", 1.609344),
        (100, "degC", "degF", 212),
        (32, "degF", "degC", 0),
        (0, "degC", "K", 273.15),
        (1, "GiB", "MB", 1073.741824),
        (60, "mph", "km/h", 96.56064),
        (1, "kWh", "MJ", 3.6),
        (2.5, "hours", "minutes", 150),
        (1, "lb", "g", 453.59237),
    ],
)
async def test_converts(run: Run, value: float, src: str, dst: str, expected: float) -> None:
    result = await run(UNITS, {"value": value, "fromUnit": src, "toUnit": dst})
    assert result.success, result.error
    assert result.data["value"] == pytest.approx(expected)
    assert result.data["unit"] == dst


async def test_bad_inputs(run: Run) -> None:
    wrong_dim = await run(UNITS, {"value": 1, "fromUnit": "meter", "toUnit": "second"})
    assert not wrong_dim.success and "cannot convert meter" in wrong_dim.error
    unknown = await run(UNITS, {"value": 1, "fromUnit": "smoots_per_florp", "toUnit": "m"})
    assert not unknown.success and "unknown unit" in unknown.error
    not_number = await run(UNITS, {"value": "ten", "fromUnit": "m", "toUnit": "km"})
    assert not not_number.success and "value: Input should be a valid number" in not_number.error
    missing = await run(UNITS, {"value": 1, "fromUnit": "m"})
    assert not missing.success and "toUnit: Field required" in missing.error
