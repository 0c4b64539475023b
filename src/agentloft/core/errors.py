"""One error shape for the whole API: ``{"error": {"code", "message", "requestId"?, "fields"?, "fieldCodes"?}}``.

``requestId`` is the id of the request that failed (``core.requests``; also in its ``X-Request-ID``
header and in its log line), present whenever the error answers a request, so a user's report of an
error leads to its log lines.

Services raise ``AppError`` (or a subclass); they never build HTTP responses. The handlers here turn
domain errors, FastAPI validation errors and stray HTTP exceptions into that shape; pages get the same
code and message rendered as an error page by the web domain.

``fields`` says in English what is wrong with each field. ``fieldCodes`` says the same per field as a
stable code and its values (``{"message": {"code": "string_too_long", "params": {"max_length": 100000}}}``)
so that pages word it in the reader's language: the codes of a validation failure are pydantic's error
types (stable across pydantic 2 releases, listed in its docs), a hand-written problem names one of
``ProblemCode``. Both come from one ``FieldProblem`` per field (``problem``, ``invalid_field``, and
``pydantic_problem`` inside a validator), so no field's problem can go without a code.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal, LiteralString, NamedTuple, NotRequired, TypedDict

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from pydantic_core import PydanticCustomError
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm.exc import StaleDataError
from starlette.exceptions import HTTPException as StarletteHTTPException

from agentloft.core.db import NulRefused
from agentloft.core.requests import current_request_id

log = logging.getLogger(__name__)


FieldParam = str | int | float | bool


class FieldCode(TypedDict):
    """One field's problem as a code a page can word, with the values its words name."""

    code: str
    params: NotRequired[dict[str, FieldParam]]


# The codes a hand-written field problem may carry: pydantic's error types where the meaning is the
# same (``string_too_long`` with ``max_length``), else agentloft's own. Pages word every one
# (``fieldError.<code>`` in ``web.i18n.errors``; a test checks both languages have words for each).
ProblemCode = Literal[
    # pydantic's
    "missing", "string_too_long", "literal_error",
    # agentloft's
    "unstorable_text", "no_search_terms", "wrong_password", "no_such_model", "required_for_remote_agent",
    "unknown_tool_type", "tool_type_not_creatable", "slug_taken", "no_such_tool", "tool_listed_twice",
    "not_http_url", "required_for_transport", "not_a_cidr", "not_editable", "duplicate_names",
    "unknown_time_zone", "not_valid_json", "required_to_enable", "openai_compatible_only", "chat_model_only",
    "embedding_model_only", "storage_quota_exceeded",
    # usage budgets (``usage.budgets``)
    "budget_exceeded", "budget_needs_limit", "no_scope_for_everyone", "no_such_user", "no_such_group",
    "date_range_reversed", "date_range_too_long",
    # sign-in providers (``identity``)
    "not_ldap_url", "not_pem_certificate", "start_tls_with_ldaps",
]


class FieldProblem(NamedTuple):
    """One field's problem twice: English words (``fields``) and a code with its values (``fieldCodes``)."""

    text: str
    code: FieldCode


def problem(code: ProblemCode, text: str, **params: FieldParam) -> FieldProblem:
    """A hand-written field problem: ``fields={"slug": problem("slug_taken", "taken")}``. ``params`` are
    the values the words name (``problem("string_too_long", "at most 200 characters", max_length=200)``)."""
    return FieldProblem(text, _field_code(code, **params))


def pydantic_problem(code: ProblemCode, template: LiteralString, **params: FieldParam) -> PydanticCustomError:
    """What a validator raises for a problem of its own, instead of ``ValueError`` (whose code,
    ``value_error``, no page can word): the words are ``template`` with ``params`` filled in
    (``"unknown time zone '{zone}'"``), the code and params go to ``fieldCodes`` like pydantic's own."""
    return PydanticCustomError(code, template, params)


class AppError(Exception):
    """A failure a client can act on: HTTP status, stable code, English message, optional field errors."""

    status: int = 400
    code: str = "bad_request"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        fields: Mapping[str, FieldProblem] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        if status:
            self.status = status
        self.fields = dict(fields or {})
        self.headers = headers  # sent with the error response, e.g. a 429's ``Retry-After``

    def body(self) -> dict[str, Any]:
        err = error_fields(self.code, self.message)
        if self.fields:
            err["fields"] = {path: p.text for path, p in self.fields.items()}
            err["fieldCodes"] = {path: p.code for path, p in self.fields.items()}
        return {"error": err}


def error_fields(code: str, message: str) -> dict[str, Any]:
    """The inside of an error body: its code, message and the current request's id (when there is one)."""
    err: dict[str, Any] = {"code": code, "message": message}
    if (rid := current_request_id()) is not None:
        err["requestId"] = rid
    return err


class NotFound(AppError):
    status = 404
    code = "not_found"


class Unauthorized(AppError):
    status = 401
    code = "not_authenticated"


class Forbidden(AppError):
    status = 403
    code = "forbidden"


class Conflict(AppError):
    status = 409
    code = "conflict"


class Invalid(AppError):
    status = 422
    code = "validation_error"


class TooMany(AppError):
    status = 429
    code = "too_many_requests"


class Unavailable(AppError):
    """Something the request needs is down for now; the same request may work in a moment."""

    status = 503
    code = "service_unavailable"


def _loc_to_path(loc: tuple[Any, ...] | list[Any]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header", "cookie")]
    return ".".join(parts) or "body"


def _json_invalid(error: dict[str, Any]) -> tuple[str, str]:
    """FastAPI puts the character where a body stopped parsing in the error's place, as if it were a field
    (``"25": "JSON decode error"``); name the body and say where and why instead."""
    where = error.get("loc", ())[-1]
    why = (error.get("ctx") or {}).get("error", "")
    return "body", f"not valid JSON at character {where}: {why}".rstrip(": ")


def _field_code(code: str, **params: FieldParam) -> FieldCode:
    """A code as ``fieldCodes`` carries it: ``params`` only when there are some."""
    return {"code": code, "params": params} if params else {"code": code}


def _code_of(error: dict[str, Any]) -> FieldCode:
    """A pydantic error as a code: its type, and the values of its context that JSON can carry (a
    ``value_error``'s exception is left out; its English words stay in ``fields``)."""
    ctx = error.get("ctx") or {}
    params = {k: v for k, v in ctx.items() if isinstance(v, str | int | float | bool)}
    return _field_code(str(error.get("type", "invalid")), **params)


def _problems(errors: list[Any]) -> dict[str, FieldProblem]:
    """Map pydantic error dicts to ``{"field.path": problem}`` (the first problem per field wins)."""
    problems: dict[str, FieldProblem] = {}
    for e in errors:
        if e.get("type") == "json_invalid":
            path, message = _json_invalid(e)
            code = _field_code("json_invalid")
        else:
            path, message, code = _loc_to_path(e.get("loc", ())), e.get("msg", "invalid"), _code_of(e)
        problems.setdefault(path, FieldProblem(message, code))
    return problems


def _invalid(errors: list[Any], prefix: str = "") -> Invalid:
    problems = _problems(errors)
    if prefix:
        problems = {f"{prefix}.{k}" if k != "body" else prefix: v for k, v in problems.items()}
    first = next(iter(problems.items()), None)
    message = f"{first[0]}: {first[1].text}" if first else "body: invalid"
    return Invalid(message, fields=problems)


def invalid_field(field: str, code: ProblemCode, text: str, **params: FieldParam) -> Invalid:
    """The usual 422 for one field's problem: ``"title: required"``, with its words and code."""
    return Invalid(f"{field}: {text}", fields={field: problem(code, text, **params)})


def invalid_from_pydantic(exc: ValidationError, *, prefix: str = "") -> Invalid:
    return _invalid(exc.errors(), prefix)


def error_response(err: AppError) -> JSONResponse:
    return JSONResponse(err.body(), status_code=err.status, headers=err.headers)


_STATUS_CODES = {
    400: "bad_request",
    401: "not_authenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    422: "validation_error",
    429: "too_many_requests",
    503: "service_unavailable",
}


# Text a database cannot store. PostgreSQL refuses the NUL character in text (SQLSTATE 22021, or 22P05 when
# converting); both drivers refuse to encode a lone UTF-16 surrogate, which JSON's "\\udfff" can carry.
# Either is the client's input, not a fault of ours: a 422, whatever field or query it came in.
_BAD_TEXT_SQLSTATES = frozenset({"22021", "22P05"})
_BAD_TEXT_MESSAGE = "Text may not contain the NUL character (\\u0000) or a lone surrogate (\\ud800-\\udfff)"


def _is_bad_text(exc: BaseException) -> bool:
    """Whether ``exc`` or one it was raised from is a database's or driver's refusal of such text (the
    drivers wrap it: asyncpg's encoding error is the cause of its ``DataError``, itself under SQLAlchemy's)."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, UnicodeEncodeError) and "surrogate" in seen.reason:
            return True
        if getattr(seen, "sqlstate", None) in _BAD_TEXT_SQLSTATES:
            return True
        seen = seen.__cause__ or (seen.orig if isinstance(seen, DBAPIError) else None)
    return False


# PostgreSQL aborted the transaction for another one writing the same rows: a deadlock (40P01) or, at a
# stricter isolation, a serialization failure (40001). The request lost a race; the client may retry.
_RACE_LOST_SQLSTATES = frozenset({"40P01", "40001"})


def _race_lost() -> Conflict:
    return Conflict("It was changed or deleted by another request at the same time; reload it and try again",
                    code="changed_meanwhile")


def http_error_response(exc: StarletteHTTPException) -> JSONResponse:
    """A routing-level HTTP error (unknown path, wrong method) in the one error shape."""
    own = getattr(exc, "code", None)  # one that names its own (``body_limit.PayloadTooLarge`` of a route)
    code = own if isinstance(own, str) else _STATUS_CODES.get(exc.status_code, "error")
    message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
    return JSONResponse(
        {"error": error_fields(code, message)},
        status_code=exc.status_code,
        headers=getattr(exc, "headers", None),
    )


def invalid_request(exc: RequestValidationError) -> Invalid:
    """FastAPI's validation failure as our 422: the first problem in the message, every one in fields."""
    return _invalid(list(exc.errors()))


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(AppError)
    async def _app_error(request: Request, exc: AppError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(invalid_request(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return http_error_response(exc)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse(
            {"error": error_fields("internal_error", "Internal server error")}, status_code=500
        )

    @app.exception_handler(StaleDataError)
    async def _stale(request: Request, exc: StaleDataError) -> JSONResponse:
        """An update whose row another request deleted (or changed) between reading and writing it."""
        return error_response(_race_lost())

    @app.exception_handler(DBAPIError)
    @app.exception_handler(UnicodeEncodeError)
    @app.exception_handler(NulRefused)
    async def _database(request: Request, exc: Exception) -> JSONResponse:
        if _is_bad_text(exc):
            return error_response(Invalid(_BAD_TEXT_MESSAGE))
        if isinstance(exc, DBAPIError) and getattr(exc.orig, "sqlstate", None) in _RACE_LOST_SQLSTATES:
            return error_response(_race_lost())
        return await _unexpected(request, exc)
