"""The ``document`` tool type: agent memory and deliverables, on top of ``agentloft.documents``."""

from __future__ import annotations

from agentloft.tools.types.document.tool import DocumentTool

TOOL_TYPE = DocumentTool()

__all__ = ["TOOL_TYPE", "DocumentTool"]
