"""Strings of the A2A side panel (static/js/chat/a2a-panel-view.js)."""

from __future__ import annotations

STRINGS = {
    "en": {
        "a2a.panel.waiting": "waiting",
        "a2a.panel.waitingForReply": "Waiting for reply…",
        "a2a.panel.generating": "replying…",
        "a2a.panel.done": "done",
        "a2a.panel.error": "error",
        "a2a.panel.lost": "connection lost",
        "a2a.panel.lostHint": "The connection to this reply dropped. Reconnect to follow it again; the answer "
        "also reaches the chat once the agent is done.",
        "a2a.panel.reconnect": "Reconnect",
        "a2a.panel.close": "Close",
        "a2a.panel.unavailable": "The reply cannot be followed (HTTP {status}); it reaches the chat once the "
        "agent is done.",
        "a2a.panel.failed": "the called agent failed",
        "a2a.panel.approval": "waiting for your approval",
        "a2a.panel.approvalAsk": "“{tool}” needs your approval",
        "a2a.panel.approve": "Approve",
        "a2a.panel.reject": "Reject",
        "a2a.panel.reason": "Reason for rejecting (optional)",
        "a2a.panel.inputAsk": "The called agent asks for more input.",
        "a2a.panel.inputLabel": "Your answer to the called agent",
        "a2a.panel.inputSend": "Send answer",
    },
    "zh-CN": {
        "a2a.panel.waiting": "等待中",
        "a2a.panel.waitingForReply": "等待回复…",
        "a2a.panel.generating": "生成中…",
        "a2a.panel.done": "完成",
        "a2a.panel.error": "出错",
        "a2a.panel.lost": "连接中断",
        "a2a.panel.lostHint": "与该回复的连接中断了。点“重新连接”可继续查看；智能体完成后，答案也会出现在对话中。",
        "a2a.panel.reconnect": "重新连接",
        "a2a.panel.close": "关闭",
        "a2a.panel.unavailable": "无法查看该回复（HTTP {status}）；智能体完成后，答案会出现在对话中。",
        "a2a.panel.failed": "被调用的智能体出错了",
        "a2a.panel.approval": "等待你的批准",
        "a2a.panel.approvalAsk": "“{tool}”需要你的批准",
        "a2a.panel.approve": "批准",
        "a2a.panel.reject": "拒绝",
        "a2a.panel.reason": "拒绝的理由（可选）",
        "a2a.panel.inputAsk": "被调用的智能体需要更多信息。",
        "a2a.panel.inputLabel": "你给被调用智能体的回答",
        "a2a.panel.inputSend": "发送回答",
    },
}
