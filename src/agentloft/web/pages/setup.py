"""``/setup``: the first-run page where an admin adds a model from a preset, tests it and starts chatting.

Until an enabled model exists the chat cannot answer anyone, so admins are sent here from ``/`` and
``/chat`` (see ``pages/chat.py``) and everyone else sees ``setup_notice.html`` instead of the chat. The
page only renders; saving and testing go through the admin model API, the one place that validates.
It saves the model switched off and tests it with ``activate``: only a model that answered becomes the
default, so a wrong URL never leaves every chat pointing at a model that cannot reply.
"""

from __future__ import annotations

from fastapi import Request, Response

from agentloft.core.dependencies import DbSession
from agentloft.llm import service as llm_service
from agentloft.llm.presets import SETUP_PRESETS
from agentloft.web.deps import AdminPage, page_router
from agentloft.web.templating import render_page

router = page_router()
SETUP_PATH = "/setup"
FIRST_PRESET = "openai"


@router.get(SETUP_PATH)
async def setup_page(request: Request, _: AdminPage, db: DbSession) -> Response:
    has_model = await llm_service.has_enabled_model(db=db)
    return render_page(request, "setup.html", presets=SETUP_PRESETS, selected=FIRST_PRESET, has_model=has_model)


def no_model_notice(request: Request) -> Response:
    """What a non-admin sees in place of the chat while no model is set up (nothing there could answer)."""
    return render_page(request, "setup_notice.html")
