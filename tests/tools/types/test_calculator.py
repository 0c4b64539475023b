from __future__ import annotations

import time

import pytest

from agentloft.tools.types.calculator import TOOL_TYPE as CALC
from tests.tools.types.conftest import Run


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("2 ** 10", 1024),
        ("7 / 2", 3.5),
        ("7 // 2", 3),
        ("-7 % 3", 2),
        ("sqrt(16) + abs(-2)", 6),
        ("round(pi, 4)", 3.1416),
        ("log(100, 10)", 2),
        ("factorial(20)", 2432902008176640000),
        ("max(3, 9, 4) - min(3, 9, 4)", 6),
        ("sin(pi / 2)", 1),
        ("0.1 + 0.2", 0.3),
        ("1 << 10 | 1", 1025),
        ("comb(10, 3)", 120),
        ("2 ** -2", 0.25),
        ("gcd(12, 18) * lcm(4, 6)", 72),
        ("1e308 * 10", "inf"),
    ],
)
async def test_evaluates(run: Run, expression: str, expected: object) -> None:
    result = await run(CALC, {"expression": expression})
    assert result.success, result.error
    assert result.data == {"expression": expression, "result": expected}


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("9**9**9", "result too large"),
        ("2 ** 100000", "result too large"),
        ("factorial(100000)", "factorial(100000) is too large"),
        ("1 << 10**9", "result too large"),
        ("(2**10000) * (2**10000)", "result too large"),
        ("pow(10, 10**8)", "result too large"),
        ("perm(10**7, 5000)", "perm needs integers"),
    ],
)
async def test_huge_results_are_refused_quickly(run: Run, expression: str, message: str) -> None:
    started = time.perf_counter()
    result = await run(CALC, {"expression": expression})
    assert time.perf_counter() - started < 0.1
    assert not result.success
    assert message in result.error


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os')", "unknown function '__import__'"),
        ("__import__('os').system('true')", "only plain function calls"),
        ("().__class__", "unsupported syntax: Attribute"),
        ("open('x')", "unknown function 'open'"),
        ("x + 1", "unknown name 'x'"),
        ("'a' * 3", "unsupported literal 'a'"),
        ("[1, 2]", "unsupported syntax: List"),
        ("lambda: 1", "unsupported syntax: Lambda"),
        ("1 +", "syntax error"),
        ("1 / 0", "division by zero"),
        ("sqrt(-1)", "math domain error"),
        ("(-8) ** 0.5", "complex"),
        ("10.0 ** 400", "Numerical result out of range"),
        ("round(x=1)", "keyword arguments"),
    ],
)
async def test_refusals_are_failed_results(run: Run, expression: str, message: str) -> None:
    result = await run(CALC, {"expression": expression})
    assert not result.success
    assert message in result.error


async def test_bad_input(run: Run) -> None:
    result = await run(CALC, {"expression": ""})
    assert not result.success and "expression: String should have at least 1 character" in result.error
    result = await run(CALC, {"expression": 42})
    assert not result.success and "expression: Input should be a valid string" in result.error
    result = await run(CALC, {"expression": "1" * 1001})
    assert not result.success and "at most 1000 characters" in result.error


async def test_precision_comes_from_the_config(run: Run) -> None:
    result = await run(CALC, {"expression": "1 / 3"}, {"precision": 3})
    assert result.data["result"] == 0.333
