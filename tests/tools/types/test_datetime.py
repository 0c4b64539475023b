from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from agentloft.tools.types.datetime_tool import TOOL_TYPE as DT
from tests.tools.types.conftest import Run


async def test_now_in_a_time_zone(run: Run) -> None:
    result = await run(DT, {"operation": "now", "timezone": "Asia/Tokyo"})
    assert result.success, result.error
    moment = datetime.fromisoformat(result.data["iso"])
    assert moment.utcoffset() == timedelta(hours=9)
    assert abs((moment - datetime.now(UTC)).total_seconds()) < 5
    assert result.data["timezone"] == "Asia/Tokyo"


async def test_default_time_zone_comes_from_the_config(run: Run) -> None:
    result = await run(DT, {"operation": "parse", "value": "2024-07-01 12:00"}, {"defaultTimezone": "Europe/Berlin"})
    assert result.data["iso"] == "2024-07-01T12:00:00+02:00"
    assert result.data["weekday"] == "Monday"


async def test_parse_converts_aware_input_into_the_zone(run: Run) -> None:
    result = await run(DT, {"operation": "parse", "value": "2024-01-15T23:30:00Z", "timezone": "America/New_York"})
    assert result.data["iso"] == "2024-01-15T18:30:00-05:00"
    assert result.data["unix"] == int(datetime(2024, 1, 15, 23, 30, tzinfo=UTC).timestamp())


async def test_parse_with_an_input_format_and_format(run: Run) -> None:
    result = await run(DT, {"operation": "format", "value": "03.02.2024 07:05", "inputFormat": "%d.%m.%Y %H:%M",
                            "format": "%A %d %B %Y, %H:%M"})
    assert result.success, result.error
    assert result.data["formatted"] == "Saturday 03 February 2024, 07:05"


async def test_add_and_subtract(run: Run) -> None:
    added = await run(DT, {"operation": "add", "value": "2024-01-31T10:00:00+00:00", "months": 1, "days": 1,
                           "hours": 2})
    assert added.data["iso"] == "2024-03-01T12:00:00+00:00"  # Jan 31 + 1 month = Feb 29 (leap), + 1 day
    sub = await run(DT, {"operation": "subtract", "value": "2024-03-01", "weeks": 1})
    assert sub.data["date"] == "2024-02-23"
    years = await run(DT, {"operation": "add", "value": "2024-02-29", "years": 1})
    assert years.data["date"] == "2025-02-28"


async def test_add_across_a_dst_change_keeps_wall_clock_days(run: Run) -> None:
    result = await run(DT, {"operation": "add", "value": "2024-03-30T12:00", "days": 1, "timezone": "Europe/Berlin"})
    moment = datetime.fromisoformat(result.data["iso"])
    assert moment.hour == 12 and moment.utcoffset() == timedelta(hours=2)
    assert moment.astimezone(ZoneInfo("Europe/Berlin")).day == 31


async def test_difference(run: Run) -> None:
    result = await run(DT, {"operation": "difference", "value": "2024-01-01T00:00:00Z",
                            "other": "2024-03-01T12:00:00Z"})
    assert result.data["days"] == 60.5
    assert result.data["hours"] == 1452
    assert result.data["calendarDays"] == 60
    assert result.data["human"] == "60 days, 12:00:00"


async def test_weekday(run: Run) -> None:
    result = await run(DT, {"operation": "weekday", "value": "2000-01-01"})
    assert result.data["weekday"] == "Saturday"


async def test_bad_inputs(run: Run) -> None:
    bad_zone = await run(DT, {"operation": "now", "timezone": "Mars/Olympus"})
    assert not bad_zone.success and "unknown time zone 'Mars/Olympus'" in bad_zone.error
    bad_date = await run(DT, {"operation": "parse", "value": "31/02/2024"})
    assert not bad_date.success and "cannot read '31/02/2024' as ISO 8601" in bad_date.error
    no_other = await run(DT, {"operation": "difference", "value": "2024-01-01"})
    assert not no_other.success and "needs a second date/time" in no_other.error
    no_format = await run(DT, {"operation": "format"})
    assert not no_format.success and "needs a strftime format" in no_format.error
    bad_op = await run(DT, {"operation": "tomorrow"})
    assert not bad_op.success and "operation: Input should be 'now', 'parse'" in bad_op.error
    overflow = await run(DT, {"operation": "add", "value": "9999-12-31", "days": 2})
    assert not overflow.success


def test_config_refuses_unknown_zone() -> None:
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="unknown time zone"):
        DT.Config.model_validate({"defaultTimezone": "Nowhere/Land"})
