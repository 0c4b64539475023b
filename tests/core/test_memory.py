"""Memory goes back to the system once a burst is over (``core.memory``), and a process that talks only
to OpenAI-compatible models does not carry the Anthropic SDK (~40 MB of types and validators)."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref
from collections.abc import Iterator

import pytest

from agentloft.core import memory


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector frees it


@pytest.fixture
def no_automatic_collection() -> Iterator[None]:
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_garbage_left_by_a_burst_is_freed_after_a_quiet_look(no_automatic_collection: None) -> None:
    releaser = memory.MemoryReleaser()
    node = _Node()
    alive = weakref.ref(node)
    del node
    burst = [[i] for i in range(memory.BLOCKS_MOVED * 3)]  # activity: blocks taken since the last look
    assert releaser.look() is False  # busy: nothing is done while work goes on
    del burst
    assert releaser.look() is False  # freeing it is activity too
    assert alive() is not None  # the cycle waits for a collection that an idle process never triggers
    assert releaser.look() is True  # quiet after activity: released
    assert alive() is None
    assert releaser.look() is False  # and not again while nothing happens
    assert releaser.releases == 1


def test_a_process_with_no_anthropic_model_does_not_load_its_sdk(tmp_path: object) -> None:
    script = (
        "import sys\n"
        "from agentloft.app import build_runtime, create_app\n"
        "from agentloft.core.settings import load_settings\n"
        f"settings = load_settings(data_dir={str(tmp_path)!r}, env='test', secret_key='k')\n"
        "create_app(settings)\n"
        "rt = build_runtime(settings)\n"
        "from agentloft.llm.providers import ModelSpec\n"
        "rt.models.model(ModelSpec(provider='openai', model='m', base_url='http://127.0.0.1:9/v1', api_key=None))\n"
        "print('anthropic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
