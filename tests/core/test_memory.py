"""Memory goes back to the system once a burst is over (``core.memory``)."""

from __future__ import annotations

import gc
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
