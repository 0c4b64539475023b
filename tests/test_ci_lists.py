"""The database passes of `.ci/run` name test paths by hand; a moved test file must not break them.

pytest stops with "file or directory not found" when one listed path is gone, so a renamed test would
otherwise fail CI only after the whole SQLite pass had run.
"""

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _listed_paths(name: str) -> list[str]:
    """The words of the bash array NAME=(...) in .ci/run, option flags and their values left out."""
    script = (ROOT / ".ci" / "run").read_text()
    match = re.search(rf"^{name}=\((.*?)\)", script, re.MULTILINE | re.DOTALL)
    assert match, f"{name} is not defined in .ci/run"
    words = shlex.split(match.group(1))
    return [word.split("=", 1)[-1] for word in words]


def test_every_path_the_database_passes_name_exists() -> None:
    for name in ("PG_TESTS", "REDIS_TESTS"):
        missing = [path for path in _listed_paths(name) if not (ROOT / path).exists()]
        assert not missing, f"{name} in .ci/run names paths that do not exist: {missing}"
