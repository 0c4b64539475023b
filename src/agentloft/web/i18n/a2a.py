"""Strings of the A2A side panel (static/js/chat/a2a-panel-view.js)."""

from __future__ import annotations

STRINGS = {
    "en": {
        "a2a.panel.waiting": "waiting…",
        "a2a.panel.generating": "generating…",
        "a2a.panel.done": "done",
        "a2a.panel.error": "error",
        "a2a.panel.close": "Close",
        "a2a.panel.connectionLost": "connection lost",
        "a2a.panel.unavailable": "stream unavailable ({status})",
        "a2a.panel.failed": "the called agent failed",
    },
    "zh-CN": {
        "a2a.panel.waiting": "等待中…",
        "a2a.panel.generating": "生成中…",
        "a2a.panel.done": "完成",
        "a2a.panel.error": "出错",
        "a2a.panel.close": "关闭",
        "a2a.panel.connectionLost": "连接中断",
        "a2a.panel.unavailable": "无法订阅（{status}）",
        "a2a.panel.failed": "被调用的 agent 出错",
    },
}
