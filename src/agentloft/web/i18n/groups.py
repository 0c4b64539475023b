"""Strings of Admin → Groups and of the groups shown on Admin → Users."""

from __future__ import annotations

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "admin.nav.groups": "Groups",
        "admin.groups.title": "Groups",
        "admin.groups.intro": "Agents, models, tools and knowledge collections limited to groups are seen only by "
        "their members and admins. Groups from a sign-in provider follow it at each sign-in.",
        "admin.groups.create": "Add group",
        "admin.groups.source": "Source",
        "admin.groups.members": "Members",
        "admin.groups.local": "local",
        "admin.groups.empty": "No groups yet.",
        "admin.groups.editMembers": "Members",
        "admin.groups.membersOf": "Members of {name}",
        "admin.groups.confirmDelete": "Delete the group {name}?",
        "admin.users.groups": "Groups",
    },
    "zh-CN": {
        "admin.nav.groups": "用户组",
        "admin.groups.title": "用户组",
        "admin.groups.intro": "限定于用户组的智能体、模型、工具和知识库只对组成员和管理员可见。"
        "来自登录提供方的用户组在每次登录时随之同步。",
        "admin.groups.create": "添加用户组",
        "admin.groups.source": "来源",
        "admin.groups.members": "成员",
        "admin.groups.local": "本地",
        "admin.groups.empty": "还没有用户组。",
        "admin.groups.editMembers": "成员",
        "admin.groups.membersOf": "{name} 的成员",
        "admin.groups.confirmDelete": "删除用户组 {name}？",
        "admin.users.groups": "用户组",
    },
}
