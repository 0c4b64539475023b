from __future__ import annotations

import string
import uuid

from agentloft.tools.types.random_tool import SYMBOLS
from agentloft.tools.types.random_tool import TOOL_TYPE as RANDOM
from tests.tools.types.conftest import Run


async def test_integers_in_range(run: Run) -> None:
    result = await run(RANDOM, {"operation": "integer", "min": 1, "max": 6, "count": 300})
    values = result.data["values"]
    assert len(values) == 300 and set(values) <= set(range(1, 7)) and len(set(values)) == 6
    single = await run(RANDOM, {"operation": "integer", "min": 5, "max": 5})
    assert single.data == {"values": [5], "value": 5}


async def test_floats_in_range(run: Run) -> None:
    result = await run(RANDOM, {"operation": "float", "min": -1, "max": 1, "count": 50})
    assert all(-1 <= v <= 1 for v in result.data["values"]) and len(set(result.data["values"])) == 50


async def test_choice_sample_shuffle(run: Run) -> None:
    items = ["a", "b", "c", "d"]
    choice = await run(RANDOM, {"operation": "choice", "items": items, "count": 20})
    assert set(choice.data["values"]) <= set(items)
    sample = await run(RANDOM, {"operation": "sample", "items": items, "count": 4})
    assert sorted(sample.data["values"]) == items
    shuffled = await run(RANDOM, {"operation": "shuffle", "items": list(range(50))})
    assert sorted(shuffled.data["values"]) == list(range(50)) and shuffled.data["values"] != list(range(50))


async def test_uuid_and_token(run: Run) -> None:
    result = await run(RANDOM, {"operation": "uuid", "count": 3})
    assert len({uuid.UUID(v).version for v in result.data["values"]} | {4}) == 1
    token = await run(RANDOM, {"operation": "token", "length": 16})
    assert len(token.data["value"]) >= 21


async def test_passwords_have_every_class(run: Run) -> None:
    result = await run(RANDOM, {"operation": "password", "length": 12, "count": 20})
    for pw in result.data["values"]:
        assert len(pw) == 12
        assert any(c in string.ascii_lowercase for c in pw) and any(c in string.ascii_uppercase for c in pw)
        assert any(c in string.digits for c in pw) and any(c in SYMBOLS for c in pw)
    plain = await run(RANDOM, {"operation": "password", "length": 30, "symbols": False})
    assert plain.data["value"].isalnum()


async def test_bad_inputs(run: Run) -> None:
    swapped = await run(RANDOM, {"operation": "integer", "min": 10, "max": 1})
    assert not swapped.success and "min must not be greater than max" in swapped.error
    no_items = await run(RANDOM, {"operation": "choice"})
    assert not no_items.success and "needs a non-empty `items` list" in no_items.error
    too_many = await run(RANDOM, {"operation": "sample", "items": [1, 2], "count": 3})
    assert not too_many.success and "cannot pick 3 distinct items out of 2" in too_many.error
    over_limit = await run(RANDOM, {"operation": "uuid", "count": 20}, {"maxCount": 10})
    assert not over_limit.success and "count is limited to 10" in over_limit.error
    short = await run(RANDOM, {"operation": "password", "length": 2})
    assert not short.success and "length: Input should be greater than or equal to 4" in short.error
    long = await run(RANDOM, {"operation": "password", "length": 1000})
    assert not long.success and "length is limited to 256" in long.error
    fractional = await run(RANDOM, {"operation": "integer", "min": 0.5, "max": 2})
    assert not fractional.success and "whole numbers" in fractional.error
