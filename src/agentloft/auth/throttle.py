"""Throttle repeated failed logins per username and per client address.

In-process on purpose for the single-machine default; a scale-out deployment swaps this for the Redis
counter (same interface). Successful logins clear the username's record.
"""

from __future__ import annotations

import time
from collections import defaultdict, deque


class LoginThrottle:
    def __init__(self, max_failures: int, window_seconds: int) -> None:
        self.max_failures = max_failures
        self.window = window_seconds
        self._failures: dict[str, deque[float]] = defaultdict(deque)

    def _recent(self, key: str, now: float) -> deque[float]:
        q = self._failures[key]
        while q and now - q[0] > self.window:
            q.popleft()
        return q

    def retry_after(self, username: str, address: str) -> int:
        """Seconds until another attempt is allowed, or 0 when it is allowed now."""
        now = time.monotonic()
        wait = 0.0
        for key in (f"u:{username.lower()}", f"a:{address}"):
            q = self._recent(key, now)
            limit = self.max_failures if key.startswith("u:") else self.max_failures * 4
            if len(q) >= limit:
                wait = max(wait, self.window - (now - q[0]))
        return int(wait) + 1 if wait > 0 else 0

    def failed(self, username: str, address: str) -> None:
        now = time.monotonic()
        self._failures[f"u:{username.lower()}"].append(now)
        self._failures[f"a:{address}"].append(now)

    def succeeded(self, username: str) -> None:
        self._failures.pop(f"u:{username.lower()}", None)
