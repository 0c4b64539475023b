"""The sign-in counters in the Redis several workers share (``AGENTLOFT_REDIS_URL``), so an attempt
counts the same on every worker; the rules and the in-process counters are in ``auth.throttle``.

A module of its own, imported by ``app.build_runtime`` only when a Redis is configured: the Redis client
library costs about 6 MB resident and 50 ms of start-up that one process on its own never uses.
"""

from __future__ import annotations

import math
from typing import Any

from agentloft.auth.throttle import Count
from agentloft.core.redis import SharedRedis

# One hit: INCR, and on the window's first hit its expiry (never extended after); the count and the time
# left come back together. Redis runs a script alone, so concurrent hits from any worker are distinct.
_HIT = """
local value = redis.call('INCR', KEYS[1])
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  left = tonumber(ARGV[1])
end
return {value, left}
"""

# One give-back: DECR where the key still exists above zero (a key whose window ended is gone, and must
# not come back as -1 with no expiry).
_GIVE_BACK = """
for _, key in ipairs(KEYS) do
  local value = tonumber(redis.call('GET', key) or '0')
  if value > 0 then redis.call('DECR', key) end
end
return 0
"""


class RedisCounters:
    """The counters in Redis, shared by every worker (``AGENTLOFT_REDIS_URL``): one key per counter,
    dropped by Redis when its window ends. A Redis that cannot be reached makes the sign-in answer 503
    (``core.redis``) rather than let attempts through uncounted."""

    def __init__(self, redis: SharedRedis) -> None:
        self.redis = redis
        self._hit = redis.client.register_script(_HIT)
        self._give_back = redis.client.register_script(_GIVE_BACK)

    def _key(self, key: str) -> str:
        return self.redis.key("throttle", key)

    async def hit(self, key: str, window: float) -> Count:
        # the script answers [count, ms left]; redis-py types a script's reply as sync-or-async, so say what it is
        reply: Any = await self._hit(keys=[self._key(key)], args=[max(1, math.ceil(window * 1000))])
        value, left_ms = reply
        return Count(int(value), int(left_ms) / 1000)

    async def clear(self, *keys: str) -> None:
        if keys:
            await self.redis.client.delete(*(self._key(k) for k in keys))

    async def give_back(self, *keys: str) -> None:
        if keys:
            await self._give_back(keys=[self._key(k) for k in keys])
