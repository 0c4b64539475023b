"""``app.py`` names every router and start-up hook itself (no module names as strings): a domain's routes
or start-up work cannot drop out because a name was mistyped, and a new router or hook module that is not
listed there fails here instead of silently serving nothing."""

from __future__ import annotations

import importlib
from pathlib import Path

from fastapi import APIRouter

import agentloft
from agentloft import app

SRC = Path(agentloft.__file__).parent


def _modules(file_name: str) -> list[str]:
    """The dotted names of the package's modules called ``file_name``."""
    return sorted("agentloft." + ".".join(p.relative_to(SRC).with_suffix("").parts)
                  for p in SRC.rglob(file_name))


def test_every_router_a_router_module_defines_is_served() -> None:
    routers = [r for name in _modules("router.py") for attr in ("router", "admin_router")
               if isinstance(r := getattr(importlib.import_module(name), attr, None), APIRouter)]
    assert len(routers) > 15
    assert {id(r) for r in routers} == {id(r) for r in app.ROUTERS}
    assert len(app.ROUTERS) == len(routers)  # none listed twice


def test_every_lifecycle_hook_runs() -> None:
    modules = [importlib.import_module(m)
               for m in [*_modules("lifecycle.py"), "agentloft.defaults", "agentloft.core.tracing"]]
    assert set(app.STARTUP_HOOKS) == {m.startup for m in modules}
    assert set(app.SHUTDOWN_HOOKS) == {m.shutdown for m in modules if hasattr(m, "shutdown")}
    assert app.STARTUP_HOOKS[0].__module__ == "agentloft.system.lifecycle"  # refuses a second process first


def test_shutdown_runs_in_the_reverse_order_of_start_up() -> None:
    order = [h.__module__ for h in app.STARTUP_HOOKS]
    assert [h.__module__ for h in app.SHUTDOWN_HOOKS] == [m for m in reversed(order)
                                                          if m in {h.__module__ for h in app.SHUTDOWN_HOOKS}]
