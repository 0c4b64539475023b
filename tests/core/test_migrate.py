"""Starting on a current schema reads its revision and leaves Alembic unimported (~11 MB that would stay
resident in every server); a schema behind is upgraded as before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from alembic.script import ScriptDirectory

from agentloft.core import migrate

PROBE = """
import json, sys
from agentloft.core import migrate
migrate.upgrade(sys.argv[1])
print(json.dumps({"alembic": "alembic" in sys.modules, "revision": migrate.current_revision(sys.argv[1])}))
"""


def _start(url: str) -> dict[str, object]:
    """What one start's ``upgrade`` did, in a process of its own (so its imports are its own)."""
    done = subprocess.run([sys.executable, "-c", PROBE, url], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_head_names_the_newest_migration() -> None:
    assert ScriptDirectory.from_config(migrate.alembic_config("sqlite://")).get_current_head() == migrate.HEAD


def test_a_current_schema_is_left_without_importing_alembic(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'data' / 'agentloft.db'}"
    assert _start(url) == {"alembic": True, "revision": migrate.HEAD}  # first start: migrated
    assert _start(url) == {"alembic": False, "revision": migrate.HEAD}  # every start after


def test_a_schema_behind_is_upgraded(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'agentloft.db'}"
    migrate.upgrade(url, "0011_user_grams")
    assert migrate.current_revision(url) == "0011_user_grams"
    assert _start(url) == {"alembic": True, "revision": migrate.HEAD}
