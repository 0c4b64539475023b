"""Date and time: the current time in a zone, parsing, formatting, adding durations, differences, weekdays.

Models are bad at calendars (time zones, month lengths, leap years, what weekday a date is); this tool
answers with ``zoneinfo`` and ``datetime`` instead. Naive inputs are read in the requested (or configured)
time zone, so "2024-03-10 09:00" means nine o'clock where the user is.
"""

from __future__ import annotations

import calendar
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator

from agentloft.core.errors import pydantic_problem
from agentloft.core.schemas import ApiModel
from agentloft.tools.base import ToolContext, ToolResult, ToolType

Operation = Literal["now", "parse", "format", "add", "subtract", "difference", "weekday"]


def _zone(name: str) -> tzinfo:
    if name.upper() in ("UTC", "Z"):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone '{name}' (use an IANA name such as 'Europe/Berlin')") from exc


class Config(ApiModel):
    default_timezone: str = Field(
        default="UTC", description="IANA time zone used when the model does not name one."
    )

    @field_validator("default_timezone")
    @classmethod
    def _known(cls, value: str) -> str:
        try:
            _zone(value)
        except ValueError as exc:
            raise pydantic_problem(
                "unknown_time_zone", "unknown time zone '{zone}' (use an IANA name such as 'Europe/Berlin')", zone=value
            ) from exc
        return value


class Input(ApiModel):
    operation: Operation = Field(
        description=(
            "now: current time; parse: read a date/time and show its parts; format: render with `format`; "
            "add/subtract: shift `value` by the duration fields; difference: time from `value` to `other`; "
            "weekday: the day of the week of `value`."
        )
    )
    value: str | None = Field(
        default=None,
        description="Date/time in ISO 8601 ('2024-05-01', '2024-05-01T14:30:00+02:00'). Omitted or 'now' "
        "means the current time.",
    )
    other: str | None = Field(default=None, description="Second date/time for 'difference'.")
    timezone: str | None = Field(
        default=None, description="IANA time zone (e.g. 'America/New_York') for the result and for naive inputs."
    )
    input_format: str | None = Field(
        default=None, description="strptime format when `value` is not ISO 8601, e.g. '%d.%m.%Y %H:%M'."
    )
    format: str | None = Field(
        default=None, description="strftime format for 'format', e.g. '%A, %d %B %Y %H:%M'."
    )
    years: int = Field(default=0, description="Years to add or subtract.")
    months: int = Field(default=0, description="Months to add or subtract (day clamped to the month's end).")
    weeks: float = Field(default=0, description="Weeks to add or subtract.")
    days: float = Field(default=0, description="Days to add or subtract.")
    hours: float = Field(default=0, description="Hours to add or subtract.")
    minutes: float = Field(default=0, description="Minutes to add or subtract.")
    seconds: float = Field(default=0, description="Seconds to add or subtract.")


def _parse(value: str | None, zone: tzinfo, fmt: str | None) -> datetime:
    if value is None or value.strip().lower() in ("", "now"):
        return datetime.now(zone)
    text = value.strip()
    try:
        parsed = datetime.strptime(text, fmt) if fmt else datetime.fromisoformat(text)
    except ValueError as exc:
        hint = f"format '{fmt}'" if fmt else "ISO 8601 (or pass input_format)"
        raise ValueError(f"cannot read '{value}' as {hint}") from exc
    return parsed.replace(tzinfo=zone) if parsed.tzinfo is None else parsed.astimezone(zone)


def _add_months(moment: datetime, months: int) -> datetime:
    total = moment.year * 12 + moment.month - 1 + months
    year, month = divmod(total, 12)
    if not 1 <= year <= 9999:
        raise ValueError("the result is outside the years 1-9999")
    day = min(moment.day, calendar.monthrange(year, month + 1)[1])
    return moment.replace(year=year, month=month + 1, day=day)


def _shift(moment: datetime, inp: Input, sign: int) -> datetime:
    moment = _add_months(moment, sign * (inp.years * 12 + inp.months))
    delta = timedelta(weeks=inp.weeks, days=inp.days, hours=inp.hours, minutes=inp.minutes, seconds=inp.seconds)
    # Wall-clock arithmetic in the zone, then normalised (a day is a calendar day across DST changes).
    shifted = moment + sign * delta
    return shifted.astimezone(moment.tzinfo)


def describe_moment(moment: datetime) -> dict[str, object]:
    return {
        "iso": moment.isoformat(),
        "date": moment.date().isoformat(),
        "time": moment.strftime("%H:%M:%S"),
        "timezone": str(moment.tzinfo),
        "utcOffset": moment.strftime("%z"),
        "weekday": moment.strftime("%A"),
        "unix": int(moment.timestamp()),
    }


def _difference(start: datetime, end: datetime) -> dict[str, object]:
    delta = end - start
    secs = delta.total_seconds()
    return {
        "from": start.isoformat(),
        "to": end.isoformat(),
        "seconds": secs,
        "minutes": round(secs / 60, 4),
        "hours": round(secs / 3600, 4),
        "days": round(secs / 86400, 4),
        "calendarDays": (end.date() - start.date()).days,
        "human": str(delta),
    }


class DateTimeTool(ToolType[Config, Input]):
    slug = "datetime"
    name = "Date & time"
    description = "Current time in any time zone, date parsing and formatting, date arithmetic."
    Config = Config
    Input = Input

    def describe(self, config: Config) -> str:
        return (
            "Work with dates and times: get the current time in a time zone, parse, format, add or subtract "
            "durations, compute the difference between two moments, or find the weekday. Use it whenever "
            f"the answer depends on today's date. Default time zone: {config.default_timezone}."
        )

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        try:
            return ToolResult.ok(self._run(input, config))
        except (ValueError, OverflowError) as exc:
            return ToolResult.fail(str(exc))

    def _run(self, inp: Input, config: Config) -> dict[str, object]:
        zone = _zone(inp.timezone or config.default_timezone)
        moment = _parse(inp.value, zone, inp.input_format)
        match inp.operation:
            case "now" | "parse" | "weekday":
                return describe_moment(moment)
            case "format":
                if not inp.format:
                    raise ValueError("'format' needs a strftime format in the `format` field")
                return {"formatted": moment.strftime(inp.format), **describe_moment(moment)}
            case "add" | "subtract":
                return describe_moment(_shift(moment, inp, 1 if inp.operation == "add" else -1))
            case "difference":
                if inp.other is None:
                    raise ValueError("'difference' needs a second date/time in `other`")
                return _difference(moment, _parse(inp.other, zone, inp.input_format))
        raise ValueError(f"unknown operation {inp.operation}")


TOOL_TYPE = DateTimeTool()
