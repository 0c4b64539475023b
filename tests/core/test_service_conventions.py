"""Services are called one way: keyword arguments only (``*`` first), so a call reads the same everywhere
and a reordered signature cannot silently swap two ids. Checked on every domain's ``service`` module
and on the modules split out of one (``SPLIT_SERVICES``):
each public async function, and each public function of more than one parameter (a one-argument
converter such as ``to_read(row)`` may stay positional)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import agentloft

POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
# Services grown past one job and split by it, whose parts other domains call as they called the service.
SPLIT_SERVICES = ("agentloft.tools.config", "agentloft.tools.loading")


def _service_modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(agentloft.__path__, "agentloft.")]
    return sorted(n for n in names if n.rsplit(".", 1)[-1] == "service" or n in SPLIT_SERVICES)


def test_there_are_service_modules_to_check() -> None:
    assert {"agentloft.chat.service", "agentloft.tools.service", "agentloft.a2a.service",
            *SPLIT_SERVICES} <= set(_service_modules())


def test_services_take_keyword_arguments_only() -> None:
    offenders = []
    for name in _service_modules():
        module = importlib.import_module(name)
        for fname, fn in inspect.getmembers(module, inspect.isfunction):
            if fname.startswith("_") or fn.__module__ != name:
                continue
            params = inspect.signature(fn).parameters.values()
            positional = [p.name for p in params if p.kind in POSITIONAL]
            if positional and (inspect.iscoroutinefunction(fn) or len(params) > 1):
                offenders.append(f"{name}.{fname}({', '.join(positional)})")
    assert not offenders, f"make these keyword-only (`*` first): {offenders}"
