"""Whether the hosted agent's models answer, for ``/ping``: probed at start-up, then every
``GATEWAY_MODEL_PROBE_INTERVAL`` seconds.

While a probe of any endpoint fails, ``/ping`` says Unhealthy (503), so a load balancer
sends no user to a gateway whose runs would all fail; the log says why in one line when it
stops answering and in another when it answers again. A probe costs no tokens
(``gateway.models.endpoints``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from gateway.adk.hosting import first_line
from gateway.models.endpoints import PROBE_TIMEOUT_SECONDS, Endpoint
from gateway.models.failures import classify

__all__ = ["ModelHealth"]

log = logging.getLogger(__name__)


class ModelHealth:
    def __init__(self, endpoints: list[Endpoint], interval: float) -> None:
        self.endpoints = endpoints
        self.interval = interval
        # Endpoint model -> why it does not answer; empty while every one answers.
        self.failing: dict[str, str] = {}
        self.listeners: list[Callable[[bool], None]] = []
        self._checked = False

    @property
    def answering(self) -> bool:
        return not self.failing

    async def check(self) -> bool:
        """Probes every endpoint once; logs what changed; returns whether all answer."""
        results = await asyncio.gather(*(self._probe(e) for e in self.endpoints))
        was = self.answering
        for endpoint, problem in zip(self.endpoints, results, strict=True):
            before = self.failing.get(endpoint.model)
            if problem is None and before is not None:
                del self.failing[endpoint.model]
                log.info("%s answers again (%s)", endpoint.model, endpoint.request)
            elif problem is not None and before is None:
                self.failing[endpoint.model] = problem
                log.warning(
                    "%s cannot be reached (%s: %s); /ping says Unhealthy until it answers",
                    endpoint.model,
                    endpoint.request,
                    problem,
                )
            elif problem is None and not self._checked:
                log.info("%s answers (%s)", endpoint.model, endpoint.request)
        self._checked = True
        if self.answering != was:
            for listener in self.listeners:
                listener(self.answering)
        return self.answering

    async def watch(self) -> None:
        """Probes every ``interval`` seconds until cancelled."""
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.check()
            except Exception:  # a probe that fails oddly must not stop the watch
                log.exception("probing the models failed")

    async def _probe(self, endpoint: Endpoint) -> str | None:
        """None if the endpoint answers, else why not, in a few words."""
        try:
            await asyncio.wait_for(endpoint.probe(), PROBE_TIMEOUT_SECONDS + 1)
        except TimeoutError:
            return f"no answer in {PROBE_TIMEOUT_SECONDS:.0f} s"
        except Exception as error:  # whatever a run would meet: the SDK's error
            failure = classify(error)
            return failure.detail if failure else f"{type(error).__name__}: {first_line(error)}"
        return None
