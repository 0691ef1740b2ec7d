"""How much one user, and everyone together, may ask of the gateway.

- ``RateLimiter``: a token bucket per user over the frames and requests they send; a frame
  that finds the bucket empty is refused with RATE_LIMIT_EXCEEDED and costs nothing more.
- ``SendBudget``: a bucket of bytes per user over what their reattaches and history pages
  make the gateway send, the one request whose answer is far larger than itself (a 52-byte
  reattach, up to a whole snapshot). Each is charged what it sent, after the fact; a user
  in debt is refused with RATE_LIMIT_EXCEEDED, before anything is read, until it is paid.
- ``Quota``: what one user may keep: threads, and bytes of stored events. A new thread past
  the first, or a new turn past the second, is refused with SERVICE_QUOTA_EXCEEDED; answers
  to calls already asked still go through, so no thread is left stuck.
- ``RunSlots``: a cap on runs in progress across all users. A run that finds every slot
  taken waits its turn, first come first served, for a bounded time, then is refused with
  SERVICE_QUOTA_EXCEEDED. A run paused on a browser or a person is not in progress: it
  ended with RUN_FINISHED and holds no slot until its answer arrives.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import math
import time
from collections.abc import Callable

from gateway import wire as p
from gateway.metrics import OFF, Metrics
from gateway.store import Usage
from gateway.wire.notices import notice

log = logging.getLogger(__name__)

# Buckets kept before full ones (those of users who went quiet) are dropped.
_BUCKETS_KEPT = 10_000


@dataclasses.dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


class RateLimiter:
    """``rate`` frames a second per user, with bursts of up to ``burst``."""

    def __init__(
        self,
        rate: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        metrics: Metrics = OFF,
    ) -> None:
        self.rate, self.burst = rate, burst
        self._clock = clock
        self.metrics = metrics
        self._buckets: dict[str, _Bucket] = {}

    def allow(self, user: str, cost: float = 1.0) -> float:
        """Takes ``cost`` tokens for ``user``: 0.0 if there were, else seconds until there are."""
        if self.rate <= 0:
            return 0.0
        bucket = self._refilled(user)
        if bucket.tokens >= cost:
            bucket.tokens -= cost
            return 0.0
        return (cost - bucket.tokens) / self.rate

    def _refilled(self, user: str) -> _Bucket:
        now = self._clock()
        bucket = self._buckets.get(user)
        if bucket is None:
            if len(self._buckets) >= _BUCKETS_KEPT:
                self._forget_full(now)
            bucket = self._buckets[user] = _Bucket(float(self.burst), now)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.at) * self.rate)
        bucket.at = now
        return bucket

    def check(self, user: str) -> None:
        """Takes a token for ``user`` or raises RATE_LIMIT_EXCEEDED saying when to retry."""
        if wait := self.allow(user):
            raise self.refusal(wait)

    def refusal(self, wait: float) -> p.GatewayError:
        self.metrics.refused("rate")
        return p.GatewayError(
            p.ErrorCode.RATE_LIMIT_EXCEEDED,
            f"Too many requests: at most {self.rate:g} a second (bursts of {self.burst})"
            f" per user. Retry in {math.ceil(wait)} s.",
        )

    def _forget_full(self, now: float) -> None:
        """Drops the buckets that have refilled: a new one would be the same."""
        for user, bucket in list(self._buckets.items()):
            if bucket.tokens + (now - bucket.at) * self.rate >= self.burst:
                del self._buckets[user]


class SendBudget(RateLimiter):
    """``rate`` bytes a second per user, bursts of ``burst``, of what their reattaches and
    history pages make the gateway send; 0 leaves it unlimited."""

    def check(self, user: str) -> None:
        """RATE_LIMIT_EXCEEDED, saying when to retry, while ``user`` is in debt."""
        if wait := self.allow(user, 0.0):
            raise self.refusal(wait)

    def spend(self, user: str, sent: int) -> None:
        """Charges ``user`` what one request made the gateway send; it may go into debt,
        said once in a log line."""
        self.metrics.replayed(sent)
        if self.rate <= 0:
            return
        bucket = self._refilled(user)
        in_debt = bucket.tokens < 0
        bucket.tokens -= sent
        if bucket.tokens < 0 and not in_debt:
            log.info(
                "%s's reattaches and history pages passed their budget (%d bytes this time):"
                " refused for about %.0f s",
                user,
                sent,
                -bucket.tokens / self.rate,
            )

    def refusal(self, wait: float) -> p.GatewayError:
        self.metrics.refused("reattach_bytes")
        return p.GatewayError(
            p.ErrorCode.RATE_LIMIT_EXCEEDED,
            f"Your reattaches and history pages have had the gateway send more than one user"
            f" may: {_kib(self.rate)} a second (GATEWAY_USER_REATTACH_BYTES), bursts of"
            f" {_kib(self.burst)}. Retry in {math.ceil(wait)} s; a reattach with a cursor"
            " (after) sends only what you missed.",
        )


def _kib(size: float) -> str:
    return f"{size / 1024:g} KiB"


@dataclasses.dataclass(frozen=True, slots=True)
class Quota:
    """``threads`` and ``stored_bytes`` per user; 0 leaves either unlimited."""

    threads: int = 0
    stored_bytes: int = 0
    metrics: Metrics = OFF

    def check(self, usage: Usage, *, new_thread: bool, new_turn: bool) -> None:
        """Raises SERVICE_QUOTA_EXCEEDED if a run with this usage would pass the quota."""
        if new_thread and self.threads and usage.threads > self.threads:
            self.metrics.refused("quota")
            raise p.GatewayError(
                p.ErrorCode.SERVICE_QUOTA_EXCEEDED,
                f"You have {self.threads} threads, the most one user may keep"
                " (GATEWAY_USER_THREADS); go on in one of them, or ask the operator.",
            )
        if new_turn and self.stored_bytes and usage.stored_bytes >= self.stored_bytes:
            self.metrics.refused("quota")
            mib = self.stored_bytes / (1 << 20)
            raise p.GatewayError(
                p.ErrorCode.SERVICE_QUOTA_EXCEEDED,
                f"Your threads hold {usage.stored_bytes / (1 << 20):.1f} MiB, the most one user"
                f" may store is {mib:g} MiB (GATEWAY_USER_STORED_BYTES); ask the operator.",
            )


class RunSlots:
    """At most ``limit`` runs in progress; a run waits up to ``wait_seconds`` for a slot."""

    def __init__(self, limit: int, wait_seconds: float, metrics: Metrics = OFF) -> None:
        self.limit, self.wait_seconds = limit, wait_seconds
        self.metrics = metrics
        self.taken = 0
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()

    async def take(self) -> None:
        """Takes a slot, waiting in line; SERVICE_QUOTA_EXCEEDED if none frees in time."""
        if self.limit <= 0 or (self.taken < self.limit and not self._waiting):
            self.taken += 1
            return
        turn = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            async with asyncio.timeout(self.wait_seconds):
                await turn
        except TimeoutError:
            if self._leave(turn):
                return  # a slot came as the time ran out: it is this run's
            raise self._refusal() from None
        except BaseException:
            if self._leave(turn):
                self.give_back()
            raise

    def _leave(self, turn: asyncio.Future[None]) -> bool:
        """Takes ``turn`` out of line; True if a slot had been handed to it."""
        if turn.done() and not turn.cancelled():
            return True
        turn.cancel()
        with contextlib.suppress(ValueError):
            self._waiting.remove(turn)
        return False

    def full(self) -> p.Custom | None:
        """The notice a run that has to wait for a slot is sent; None while one is free."""
        if self.limit <= 0 or (self.taken < self.limit and not self._waiting):
            return None
        return notice(
            "RUNS_FULL",
            f"The gateway is running its limit of {self.limit} runs (GATEWAY_MAX_RUNS): this"
            f" run starts when one ends, or is refused if none ends within"
            f" {self.wait_seconds:g} s.",
        )

    def give_back(self) -> None:
        """Frees a slot: the longest waiting run gets it, or it is free."""
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(None)  # the slot passes to it: taken stays the same
                return
        self.taken -= 1

    def _refusal(self) -> p.GatewayError:
        self.metrics.refused("runs")
        return p.GatewayError(
            p.ErrorCode.SERVICE_QUOTA_EXCEEDED,
            f"The gateway is running its limit of {self.limit} runs and none finished within"
            f" {self.wait_seconds:g} s. Try again in a moment.",
        )
