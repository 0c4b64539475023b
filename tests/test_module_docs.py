"""Every module under ``src/agentloft`` opens with a docstring that says what it is for: the project's
rule for code that is read more than written (and what a new module is checked against in review)."""

from __future__ import annotations

import ast
from pathlib import Path

import agentloft

SRC = Path(agentloft.__file__).parent


def test_every_module_has_a_docstring() -> None:
    missing = [str(path.relative_to(SRC)) for path in sorted(SRC.rglob("*.py"))
               if path.read_text().strip() and not ast.get_docstring(ast.parse(path.read_text()))]
    assert missing == []
