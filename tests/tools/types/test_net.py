"""The network guard as tools use it (``tools.net``): a tool's refused request is a failed result marked
``blocked`` and never reaches the server; its allow-list is the admin's setting plus what its caller passes
down. Only loopback traffic."""

from __future__ import annotations

from agentloft.core.runtime import Runtime
from agentloft.system import service as system_service
from agentloft.system.schemas import InstanceSettingsUpdate
from agentloft.tools.types.fetch import TOOL_TYPE as FETCH
from tests.tools.types.conftest import LOCAL, Run
from tests.tools.types.local_server import LocalWeb


async def test_loopback_is_refused_before_connecting(run: Run, web: LocalWeb) -> None:
    result = await run(FETCH, {"url": f"{web.url}/page"})
    assert not result.success
    assert result.error.startswith("blocked: 127.0.0.1 is a loopback address")
    assert result.metadata["blocked"] is True
    assert web.requests == []


async def test_name_resolving_to_loopback_is_refused(run: Run, web: LocalWeb) -> None:
    result = await run(FETCH, {"url": f"http://localhost:{web.port}/page"})
    assert not result.success
    assert result.error.startswith("blocked: localhost resolves to ")
    assert "a loopback address" in result.error
    assert web.requests == []


async def test_allow_list_from_the_call_lets_the_local_server_through(run: Run, web: LocalWeb) -> None:
    result = await run(FETCH, {"url": f"{web.url}/page"}, allow=LOCAL)
    assert result.success, result.error
    assert web.paths() == ["/page"]


async def test_admin_setting_allows_internal_hosts(run: Run, rt: Runtime, web: LocalWeb) -> None:
    async with rt.db.session() as db:
        await system_service.update_settings(
            db=db, settings=rt.settings, data=InstanceSettingsUpdate(allowed_internal_hosts=["127.0.0.0/8"])
        )
    result = await run(FETCH, {"url": f"{web.url}/page"})
    assert result.success, result.error
    # the setting opens what it names and nothing more
    other = await run(FETCH, {"url": "http://10.1.2.3/"})
    assert other.error.startswith("blocked: 10.1.2.3 is a private address")
