"""``agentloft serve | db upgrade | user create``."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys
from typing import TYPE_CHECKING, Any

from agentloft.core import migrate
from agentloft.core.settings import ConfigError, Settings, load_settings

if TYPE_CHECKING:
    from agentloft.auth.models import Role


def proxy_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's proxy settings for ``settings``: ``X-Forwarded-For``/``-Proto`` are believed only from
    the proxies named in ``AGENTLOFT_FORWARDED_ALLOW_IPS``. uvicorn's own default trusts loopback (and
    its ``FORWARDED_ALLOW_IPS`` variable), which let a local client pick any address for the sign-in
    throttle; an explicit list, even an empty one, overrides both."""
    trusted = list(settings.forwarded_allow_ips)
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": trusted}


def _serve(settings: Settings, args: argparse.Namespace) -> int:
    import uvicorn

    from agentloft.app import create_app

    host = args.host or settings.host
    port = args.port or settings.port
    print(f"agentloft serving on http://{host}:{port}  (data: {settings.data_dir.resolve()})", flush=True)
    uvicorn.run(create_app(settings), host=host, port=port, log_level=args.log_level, **proxy_options(settings))
    return 0


def _db_upgrade(settings: Settings, args: argparse.Namespace) -> int:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    migrate.upgrade(settings.resolved_database_url)
    print("database is up to date")
    return 0


async def _create_user(settings: Settings, username: str, password: str, role: Role) -> None:
    from agentloft.auth import service
    from agentloft.auth.schemas import UserCreate
    from agentloft.core.db import Database

    db = Database(settings.resolved_database_url)
    try:
        async with db.session() as session:
            await service.create_user(
                db=session, data=UserCreate(username=username, password=password, role=role)
            )
    finally:
        await db.dispose()


def _user_create(settings: Settings, args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from agentloft.core.errors import AppError

    password = args.password or getpass.getpass("Password: ")
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    migrate.upgrade(settings.resolved_database_url)
    role: Role = "admin" if args.admin else "user"
    try:
        asyncio.run(_create_user(settings, args.username, password, role))
    except (AppError, ValidationError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"created {role} '{args.username}'")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentloft", description="Self-hosted AI agent platform")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="migrate the database and serve the web app and API")
    serve.add_argument("--host", default=None, help="default: AGENTLOFT_HOST or 127.0.0.1")
    serve.add_argument("--port", type=int, default=None, help="default: AGENTLOFT_PORT or 8000")
    serve.add_argument("--log-level", default="info")
    serve.set_defaults(func=_serve)

    db = sub.add_parser("db", help="database commands")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    db_sub.add_parser("upgrade", help="bring the schema up to date").set_defaults(func=_db_upgrade)

    user = sub.add_parser("user", help="account commands")
    user_sub = user.add_subparsers(dest="user_command", required=True)
    create = user_sub.add_parser("create", help="create an account")
    create.add_argument("username")
    create.add_argument("--password", default=None, help="prompted for when omitted")
    create.add_argument("--admin", action="store_true", help="give the account the admin role")
    create.set_defaults(func=_user_create)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    return int(args.func(settings, args) or 0)


if __name__ == "__main__":
    sys.exit(main())
