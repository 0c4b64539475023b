"""Fixtures for the usage tests: an agent on the fake model, whose model has prices."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chat.helpers import make_agent, register_test_tools
from tests.support import ApiClient, LiveApp

# USD per million tokens on the fake model: 10 input tokens and 5 output tokens cost 0.0000125
IN_PRICE, OUT_PRICE = 0.5, 1.5


@pytest.fixture
def priced(admin: ApiClient, model_id: int) -> int:
    admin.ok("PUT", f"/api/admin/models/{model_id}", json={"inputPricePerMTok": IN_PRICE,
                                                           "outputPricePerMTok": OUT_PRICE})
    return model_id


@pytest.fixture
def agent(admin: ApiClient, priced: int, app: LiveApp) -> dict[str, Any]:
    register_test_tools(app)
    agent = make_agent(admin, "helper", modelId=priced, maxSteps=5)
    tool = admin.ok("POST", "/api/agent-tools", json={"slug": "echo", "name": "Echo", "type": "test-echo",
                                                      "config": {}})
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}/tools", json=[{"toolId": tool["id"]}])
    return agent
