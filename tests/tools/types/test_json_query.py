from __future__ import annotations

import json

from agentloft.tools.types.json_query import TOOL_TYPE as JQ
from tests.tools.types.conftest import Run

PEOPLE = {"people": [{"name": "Ann", "age": 41}, {"name": "Bob", "age": 25}, {"name": "Cy", "age": 33}]}


async def test_filter_and_project(run: Run) -> None:
    result = await run(JQ, {"expression": "people[?age > `30`].name", "data": PEOPLE})
    assert result.success, result.error
    assert result.data == {"result": ["Ann", "Cy"]}


async def test_functions(run: Run) -> None:
    result = await run(JQ, {"expression": "{n: length(people), oldest: max_by(people, &age).name, "
                                          "total: sum(people[].age)}", "data": PEOPLE})
    assert result.data["result"] == {"n": 3, "oldest": "Ann", "total": 99}


async def test_json_given_as_a_string_is_parsed(run: Run) -> None:
    result = await run(JQ, {"expression": "sort_by(people, &age)[0].name", "data": json.dumps(PEOPLE)})
    assert result.data["result"] == "Bob"


async def test_no_match_is_null(run: Run) -> None:
    result = await run(JQ, {"expression": "missing.key", "data": PEOPLE})
    assert result.success and result.data["result"] is None


async def test_bad_inputs(run: Run) -> None:
    bad_expr = await run(JQ, {"expression": "people[?age >", "data": PEOPLE})
    assert not bad_expr.success and bad_expr.error.startswith("invalid JMESPath expression")
    bad_json = await run(JQ, {"expression": "a", "data": "{not json"})
    assert not bad_json.success and "data is a string but not valid JSON" in bad_json.error
    no_data = await run(JQ, {"expression": "a"})
    assert not no_data.success and "data: Field required" in no_data.error
    bad_fn = await run(JQ, {"expression": "length(`1`)", "data": {}})
    assert not bad_fn.success and "invalid JMESPath expression" in bad_fn.error


async def test_output_limit(run: Run) -> None:
    result = await run(JQ, {"expression": "@", "data": ["x" * 200] * 10}, {"maxOutputChars": 500})
    assert not result.success and "the result is too large" in result.error
