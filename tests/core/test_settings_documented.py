"""Every setting is documented twice: a description on its ``Settings`` field (``/docs`` and the code) and
a row in the README's configuration table (what an operator reads). A setting missing from either, or a
README row naming a variable that no longer exists, fails here."""

from __future__ import annotations

import re
from pathlib import Path

from agentloft.core.settings import Settings

README = Path(__file__).resolve().parents[2] / "README.md"


def _table_variables() -> set[str]:
    """The ``AGENTLOFT_*`` names in the first column of the table under ``## Configuration``."""
    section = README.read_text().split("## Configuration", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `AGENTLOFT_")]
    return {name for row in rows for name in re.findall(r"`(AGENTLOFT_[A-Z0-9_]+)`", row.split("|")[1])}


def _env_names() -> set[str]:
    prefix = Settings.model_config.get("env_prefix", "")
    return {f"{prefix}{name}".upper() for name in Settings.model_fields}


def test_every_setting_is_in_the_readme_configuration_table() -> None:
    missing = _env_names() - _table_variables()
    assert not missing, f"add these to the README's configuration table: {sorted(missing)}"


def test_the_readme_names_no_setting_that_does_not_exist() -> None:
    unknown = _table_variables() - _env_names()
    assert not unknown, f"the README documents settings that do not exist: {sorted(unknown)}"


def test_every_setting_has_a_description() -> None:
    bare = [name for name, field in Settings.model_fields.items() if not (field.description or "").strip()]
    assert not bare, f"give these Settings fields a description: {bare}"
