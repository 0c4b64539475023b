"""An instance does not import numpy (~16 MB resident, ~150 ms) to start: the first knowledge search
loads it (term postings, and vectors once an embedding model is chosen). The probe runs in a fresh
interpreter, so its imports are its own (the test suite itself imports numpy)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fakes.openai_server import free_port

PROBE = """
import asyncio, json, sys
from pathlib import Path
from agentloft.app import create_app
from agentloft.core import migrate
from agentloft.core.settings import load_settings
from agentloft.knowledge import service
from agentloft.llm.models import ModelConfig
from agentloft.system.models import AppSetting

settings = load_settings(data_dir=Path(sys.argv[1]), env="test", secret_key="probe")
settings.data_dir.mkdir(parents=True, exist_ok=True)
migrate.upgrade(settings.resolved_database_url)
app = create_app(settings, run_migrations=False)
seen = {}


async def probe() -> None:
    async with app.router.lifespan_context(app):
        rt = app.state.runtime
        seen["started"] = "numpy" in sys.modules
        found = await service.search_collections(rt=rt, collection_ids=["kb_none"], q="backups", top_k=5)
        seen["without"] = [found.mode, "numpy" in sys.modules]
        async with rt.db.session() as db:
            db.add(ModelConfig(id=7, name="E", kind="embedding", provider="openai", base_url=sys.argv[2],
                               model="m", enabled=True, is_default=False))
            db.add(AppSetting(key="embedding_model_id", value=7))
        found = await service.search_collections(rt=rt, collection_ids=["kb_none"], q="backups", top_k=5)
        seen["with"] = [found.mode, "numpy" in sys.modules]


asyncio.run(probe())
print(json.dumps(seen))
"""


def test_numpy_loads_with_the_first_knowledge_search_not_at_start_up(tmp_path: Path) -> None:
    unreachable = f"http://127.0.0.1:{free_port()}/v1"  # the search degrades to lexical, after importing
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "data"), unreachable],
                          capture_output=True, text=True, check=True, timeout=120)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"started": False, "without": ["lexical", True], "with": ["lexical", True]}
