"""A labelled retrieval set: passages about made-up services, each with the question it answers.

Every service has several passages, one per aspect (who owns it, its backups, deploys, on-call, region…),
so a question must find the right aspect of the right service: its name alone matches all of that
service's passages, more than a top 5 holds. Questions are worded as people ask, not as the passages
say it ("Who owns Atlas?" for "Atlas is owned and maintained by…", "backup retained" for "Backups … kept"),
so word forms differ and a purely lexical match is not enough, while the facts stay findable. The
Chinese questions use other words than their passages too (归…管 for 负责, 存档 for 备份, 值守 for 值班),
and one aspect shares almost nothing with its question (服务器…城市 for 机房), as real questions sometimes do.

English: 20 services × 8 aspects = 160 passages and questions. Chinese: 20 services named by two
characters (two-character terms are what a whitespace tokenizer cannot find) × 6 aspects = 120. Generated
deterministically; ``passages()`` and ``questions()`` give ``(id, text)`` and ``(passage id, question)``.
"""

from __future__ import annotations

from itertools import cycle

EN_NAMES = ("Atlas", "Beacon", "Cobalt", "Dynamo", "Ember", "Falcon", "Garnet", "Harbor", "Iris", "Juniper",
            "Kestrel", "Lumen", "Mosaic", "Nimbus", "Onyx", "Pylon", "Quartz", "Raven", "Sierra", "Tundra")
EN_TEAMS = ("payments", "identity", "search", "billing", "platform")
EN_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
EN_REGIONS = ("Frankfurt", "Oregon", "Singapore", "Dublin", "Tokyo")
EN_DBS = ("PostgreSQL", "MySQL", "Cassandra", "Redis", "SQLite")

EN_ASPECTS: tuple[tuple[str, str], ...] = (
    ("{e} is owned and maintained by the {team} team.", "Who owns {e}?"),
    ("Backups of {e} are taken every night and kept for {n} days.", "How long is a {e} backup retained?"),
    ("{e} is deployed on {day} mornings after the release review.", "On which day does {e} get a deploy?"),
    ("The on-call rotation for {e} changes every {day}.", "When do the {e} on-call engineers rotate?"),
    ("{e} runs in the {region} region with a standby in {region2}.", "Which region hosts {e}?"),
    ("Alerts for {e} are sent to the #{chan} channel.", "Where do {e} alerting messages go?"),
    ("{e} stores its data in a {db} database.", "What database does {e} use for storage?"),
    ("Requests to {e} are limited to {n}0 per minute per client.", "What is the request limit of {e}?"),
)

ZH_NAMES = ("天枢", "北斗", "青龙", "白虎", "朱雀", "玄武", "麒麟", "凤凰", "昆仑", "泰山",
            "长江", "黄河", "紫微", "太白", "启明", "星河", "云海", "雷霆", "烽火", "锦绣")
ZH_TEAMS = ("支付", "账号", "搜索", "计费", "平台")
ZH_DAYS = ("周一", "周二", "周三", "周四", "周五")
ZH_CITIES = ("北京", "上海", "深圳", "杭州", "成都")
ZH_ASPECTS: tuple[tuple[str, str], ...] = (
    ("{e}系统由{team}团队负责维护和升级。", "{e}归哪个团队管？"),
    ("{e}的数据每天夜里备份一次，保留{n}天。", "{e}的数据存档能留几天？"),
    ("{e}在每个{day}上午评审之后发布上线。", "{e}一般星期几上线新版本？"),
    ("{e}的值班人员每个{day}轮换一次。", "{e}的值守人员多久换一次？"),
    ("{e}运行在{city}机房，备用机房在{city2}。", "{e}的服务器放在哪座城市？"),
    ("{e}的告警消息会发送到{chan}群里。", "{e}出故障时通知发到哪个群？"),
)


def _english() -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    values = cycle(range(7))
    for i, name in enumerate(EN_NAMES):
        for a, (passage, question) in enumerate(EN_ASPECTS):
            k = next(values) + i
            fields = {"e": name, "team": EN_TEAMS[k % 5], "n": 7 + (k % 5) * 7, "day": EN_DAYS[k % 5],
                      "region": EN_REGIONS[k % 5], "region2": EN_REGIONS[(k + 2) % 5],
                      "chan": f"{name.lower()}-alerts", "db": EN_DBS[k % 5]}
            out.append((f"en-{i}-{a}", passage.format(**fields), question.format(**fields)))
    return out


def _chinese() -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for i, name in enumerate(ZH_NAMES):
        for a, (passage, question) in enumerate(ZH_ASPECTS):
            k = i + a
            fields = {"e": name, "team": ZH_TEAMS[k % 5], "n": 7 + (k % 5) * 7, "day": ZH_DAYS[k % 5],
                      "city": ZH_CITIES[k % 5], "city2": ZH_CITIES[(k + 2) % 5], "chan": f"{name}运维"}
            out.append((f"zh-{i}-{a}", passage.format(**fields), question.format(**fields)))
    return out


def labelled() -> list[tuple[str, str, str]]:
    """Every ``(passage id, passage, question)``, English first."""
    return _english() + _chinese()


def passages() -> list[tuple[str, str]]:
    return [(pid, text) for pid, text, _ in labelled()]


def questions(language: str) -> list[tuple[str, str]]:
    """``(passage id, question)`` of ``en`` or ``zh``."""
    return [(pid, q) for pid, _, q in labelled() if pid.startswith(language)]
