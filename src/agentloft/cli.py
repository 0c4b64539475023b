"""``agentloft serve [--workers N] | db upgrade | doctor | backup PATH | restore PATH | user … | audit verify``."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloft import __version__
from agentloft.core import migrate
from agentloft.core.settings import ConfigError, Settings, load_settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from agentloft.audit.chain import Verdict
    from agentloft.auth.models import Role


def proxy_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's proxy settings for ``settings``: ``X-Forwarded-For``/``-Proto`` are believed only from
    the proxies named in ``AGENTLOFT_FORWARDED_ALLOW_IPS``. uvicorn's own default trusts loopback (and
    its ``FORWARDED_ALLOW_IPS`` variable), which let a local client pick any address for the sign-in
    throttle; an explicit list, even an empty one, overrides both."""
    trusted = list(settings.forwarded_allow_ips)
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": trusted}


# How long past the grace window (``AGENTLOFT_SHUTDOWN_GRACE_SECONDS``) uvicorn waits for open responses
# before it cuts them: enough for the interrupted replies to be saved and their streams to end
# (``chat.runs.SAVE_WAIT_S``); then the streams of replies other workers write are closed, too.
SHUTDOWN_FLUSH_S = 5.0


def workers_problem(settings: Settings, workers: int) -> str | None:
    """Why ``workers`` processes cannot serve this configuration, or None. Several workers share their
    runs through PostgreSQL and Redis; SQLite and in-process buffers are for one process."""
    if workers <= 1:
        return None
    missing = []
    if not settings.resolved_database_url.startswith("postgresql"):
        missing.append("AGENTLOFT_DATABASE_URL=postgresql+asyncpg://user:password@host/agentloft")
    if not settings.redis_url:
        missing.append("AGENTLOFT_REDIS_URL=redis://host:6379/0")
    if not missing:
        return None
    return (f"--workers {workers} needs PostgreSQL and Redis shared by every worker; set "
            + " and ".join(missing) + " (or serve with one worker)")


async def _check_alone(settings: Settings) -> None:
    """Refuse early (with the same rule the app applies as it starts) to join processes it must not."""
    from agentloft.core.db import Database
    from agentloft.system import workers

    db = Database(settings.resolved_database_url)
    try:
        async with db.session() as session:
            others = await workers.live(session, settings=settings)
            shared = bool(settings.redis_url) and db.dialect != "sqlite"  # SQLite: one process, always
            reason = workers.refusal(others, shared=shared, settings=settings)
    finally:
        await db.dispose()
    if reason is not None:
        raise ConfigError(reason)


def _serve(settings: Settings, args: argparse.Namespace) -> int:
    host = args.host or settings.host
    port = args.port or settings.port
    count = args.workers or settings.workers
    problem = workers_problem(settings, count)
    if problem:
        print(f"configuration error: {problem}", file=sys.stderr)
        return 2

    import uvicorn

    from agentloft.app import create_app
    from agentloft.core.logs import log_config

    settings.prepare_data_dir()
    settings.ensure_secret_key()  # before any worker starts, so they all read the same one
    if settings.metrics and count > 1:
        _share_metrics(settings)
    migrate.upgrade(settings.resolved_database_url)  # once, before the workers start
    try:
        asyncio.run(_check_alone(settings))
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    print(f"agentloft serving on http://{host}:{port} with {count} worker(s)  (data: {settings.data_dir.resolve()})",
          flush=True)
    options: dict[str, Any] = {"host": host, "port": port, "log_level": args.log_level, "access_log": False,
                               "log_config": log_config(settings.log_format, args.log_level),
                               "timeout_graceful_shutdown": settings.shutdown_grace_seconds + SHUTDOWN_FLUSH_S,
                               **proxy_options(settings)}
    if count == 1:
        uvicorn.run(create_app(settings, run_migrations=False), **options)
    else:  # uvicorn's process manager: one socket, N workers, each building the app from the environment
        uvicorn.run("agentloft.app:worker_app", factory=True, workers=count, **options)
    return 0


def _share_metrics(settings: Settings) -> None:
    """Point the workers' ``prometheus-client`` at one emptied directory under the data dir, before any of
    them imports it, so a scrape answered by any worker sums them all (``core.metrics``)."""
    from agentloft.core.metrics import MULTIPROC_ENV, prepare_multiprocess_dir

    os.environ[MULTIPROC_ENV] = str(prepare_multiprocess_dir(settings.data_dir))


def _db_upgrade(settings: Settings, args: argparse.Namespace) -> int:
    settings.prepare_data_dir()
    migrate.upgrade(settings.resolved_database_url)
    print("database is up to date")
    return 0


def _backup(settings: Settings, args: argparse.Namespace) -> int:
    from agentloft.system import backup

    done = backup.backup(settings, Path(args.path))
    print(f"backed up the {done.database} database and {done.files} stored file(s) to {args.path}"
          + (f"; {done.note}" if done.note else ""))
    return 0


def _restore(settings: Settings, args: argparse.Namespace) -> int:
    from agentloft.system import backup

    done = backup.restore(settings, Path(args.path))
    print(f"restored the {done.database} database and {done.files} stored file(s) {done.note} from {args.path}; "
          "`agentloft serve` brings the schema up to date and serves it")
    return 0


def _doctor(settings: Settings, args: argparse.Namespace) -> int:
    return 0 if asyncio.run(_doctor_report(settings)) else 1


async def _doctor_report(settings: Settings) -> bool:
    """Print each check as it starts (``wait``, with how long it may take) and as it ends; True when every
    check passed."""
    from agentloft.system import doctor

    passed = True
    async for item in doctor.run(settings):
        if isinstance(item, doctor.Waiting):
            print(f"wait  {item.name}: {item.doing}, at most {item.limit_s:g} s", flush=True)
        else:
            passed = passed and item.ok
            print(f"{'ok  ' if item.ok else 'FAIL'}  {item.name}: {item.detail}", flush=True)
    return passed


async def _create_user(settings: Settings, username: str, password: str, role: Role) -> None:
    from agentloft.auth import service
    from agentloft.auth.schemas import UserCreate
    from agentloft.core.db import Database

    db = Database(settings.resolved_database_url)
    try:
        async with db.session() as session:
            _watch(session)
            await service.create_user(
                db=session, data=UserCreate(username=username, password=password, role=role)
            )
            await _record_change(session, "user create", username)
    finally:
        await db.dispose()


def _watch(session: AsyncSession) -> None:
    from agentloft.audit import capture

    capture.watch(session)


async def _record_change(session: AsyncSession, command: str, username: str) -> None:
    """The ``admin.change`` event of an account change made here, outside any admin endpoint, in the same
    transaction (``audit.service.record_changes``: redacted, so a password hash is never kept). Decided:
    the actor is named ``cli`` with no account id, as whoever runs the command is not signed in (on a
    fresh install there is no account yet); the target is the command."""
    from agentloft.audit import service as audit_service

    await audit_service.record_changes(db=session, actor=audit_service.Actor(name="cli"),
                                       target=f"agentloft {command}",
                                       detail={"command": command, "username": username})


def _read_password(args: argparse.Namespace) -> str | None:
    """``--password``, else a prompt on a terminal, else the first line of stdin (``echo … | agentloft``):
    a script without a terminal got a traceback from ``getpass`` instead. None (said on stderr) when
    there is none."""
    if args.password:
        return str(args.password)
    given = getpass.getpass("Password: ") if sys.stdin.isatty() else sys.stdin.readline().rstrip("\r\n")
    if not given:
        print("error: no password given (--password, a terminal, or one line on stdin)", file=sys.stderr)
    return given or None


def _say_error(exc: Exception) -> None:
    """A refusal on stderr the way the API words it: each field and what is wrong with it. pydantic's own
    text repeats the rejected value (``input_value='short'``), and for a password that is the secret."""
    from pydantic import ValidationError

    from agentloft.core.errors import AppError, invalid_from_pydantic

    error = invalid_from_pydantic(exc) if isinstance(exc, ValidationError) else exc
    if isinstance(error, AppError) and error.fields:
        for path, problem in error.fields.items():
            print(f"error: {path}: {problem.text}", file=sys.stderr)
    else:
        print(f"error: {error}", file=sys.stderr)


def _user_create(settings: Settings, args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from agentloft.core.errors import AppError

    password = _read_password(args)
    if password is None:
        return 1
    settings.prepare_data_dir()
    migrate.upgrade(settings.resolved_database_url)
    role: Role = "admin" if args.admin else "user"
    try:
        asyncio.run(_create_user(settings, args.username, password, role))
    except (AppError, ValidationError) as exc:
        _say_error(exc)
        return 1
    print(f"created {role} '{args.username}'")
    return 0


async def _set_password(settings: Settings, username: str, password: str) -> None:
    from pydantic import TypeAdapter, ValidationError

    from agentloft.auth import service
    from agentloft.auth.schemas import Password
    from agentloft.core.db import Database
    from agentloft.core.errors import NotFound, invalid_from_pydantic

    try:
        TypeAdapter(Password).validate_python(password)  # the rules every new password meets
    except ValidationError as exc:
        raise invalid_from_pydantic(exc, prefix="password") from None
    db = Database(settings.resolved_database_url)
    try:
        async with db.session() as session:
            user = await service.get_user_by_username(db=session, username=username)
            if user is None:
                raise NotFound(f"no account named '{username}'", code="user_not_found")
            _watch(session)
            await service.set_password(db=session, user_id=user.id, password=password)
            await _record_change(session, "user password", user.username)
    finally:
        await db.dispose()


def _user_password(settings: Settings, args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from agentloft.core.errors import AppError

    password = _read_password(args)
    if password is None:
        return 1
    settings.prepare_data_dir()
    migrate.upgrade(settings.resolved_database_url)
    try:
        asyncio.run(_set_password(settings, args.username, password))
    except (AppError, ValidationError) as exc:
        _say_error(exc)
        return 1
    print(f"password set for '{args.username}'; browsers signed in with the old one are signed out "
          "(a server running on SQLite notices after its restart)")
    return 0


async def _audit_verdict(settings: Settings) -> Verdict:
    from agentloft.audit import service
    from agentloft.core.db import Database

    db = Database(settings.resolved_database_url)
    try:
        async with db.read_session() as session:
            return await service.verify(db=session)
    finally:
        await db.dispose()


def _audit_verify(settings: Settings, args: argparse.Namespace) -> int:
    """OK with how many events were checked, or the first broken link's id and why (exit code 1)."""
    settings.prepare_data_dir()
    migrate.upgrade(settings.resolved_database_url)
    verdict = asyncio.run(_audit_verdict(settings))
    if verdict.broken_at is None:
        print(f"OK: {verdict.checked} events, the chain is unbroken")
        return 0
    print(f"BROKEN at event {verdict.broken_at}: {verdict.reason} ({verdict.checked} events before it are intact)")
    return 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentloft", description="Self-hosted AI agent platform")
    parser.add_argument("--version", action="version", version=f"agentloft {__version__}")
    sub = parser.add_subparsers(dest="command")  # none: the help (see ``main``)

    serve = sub.add_parser("serve", help="migrate the database and serve the web app and API")
    serve.add_argument("--host", default=None, help="default: AGENTLOFT_HOST or 127.0.0.1")
    serve.add_argument("--port", type=int, default=None, help="default: AGENTLOFT_PORT or 8000")
    serve.add_argument("--workers", type=int, default=None,
                       help="worker processes on one port (default: AGENTLOFT_WORKERS or 1; above 1 needs "
                            "PostgreSQL and Redis)")
    serve.add_argument("--log-level", default="info")
    serve.set_defaults(func=_serve)

    db = sub.add_parser("db", help="database commands")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    db_sub.add_parser("upgrade", help="bring the schema up to date (safe to run from several machines at once)"
                      ).set_defaults(func=_db_upgrade)

    sub.add_parser("doctor", help="check that the database, Redis and the models can be reached"
                   ).set_defaults(func=_doctor)

    for name, func, text in (
        ("backup", _backup, "copy the database, the secret key and the stored files into PATH (a new "
         "directory) while the server runs"),
        ("restore", _restore, "bring a backup made by `agentloft backup` into an empty data dir (and an "
         "empty database when it is PostgreSQL)"),
    ):
        command = sub.add_parser(name, help=text)
        command.add_argument("path", metavar="PATH")
        command.set_defaults(func=func)

    user = sub.add_parser("user", help="account commands")
    user_sub = user.add_subparsers(dest="user_command", required=True)
    create = user_sub.add_parser("create", help="create an account")
    create.add_argument("username")
    create.add_argument("--password", default=None, help="prompted for when omitted")
    create.add_argument("--admin", action="store_true", help="give the account the admin role")
    create.set_defaults(func=_user_create)
    password = user_sub.add_parser(
        "password", help="set an account's password and sign out its browsers (e.g. a locked-out admin; "
        "a server running on SQLite notices the sign-outs after its restart)"
    )
    password.add_argument("username")
    password.add_argument("--password", default=None, help="prompted for when omitted")
    password.set_defaults(func=_user_password)

    audit = sub.add_parser("audit", help="audit trail commands")
    audit_sub = audit.add_subparsers(dest="audit_command", required=True)
    audit_sub.add_parser("verify", help="check the audit trail's hash chain; exit code 1 names the first broken "
                         "link").set_defaults(func=_audit_verify)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # `agentloft` alone: what it can do, rather than "arguments are required"
        parser.print_help()
        return 0
    try:
        settings = load_settings()
        return int(args.func(settings, args) or 0)
    except ConfigError as exc:  # the settings, or what they name (a data dir this user cannot make private)
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
