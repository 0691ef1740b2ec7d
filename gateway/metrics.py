"""What the gateway counts, for Prometheus: every metric's definition, in one place.

Theory of operation. The code that counts calls one small method of a ``Metrics`` at each
site, one line there, never a prometheus object. ``OFF`` (the default everywhere) is a
``Metrics`` whose methods do nothing, so a gateway with ``GATEWAY_METRICS=off`` pays one
empty call per site and never imports ``prometheus_client``. ``Prometheus`` is the
counting one: it owns a registry of its own, so each gateway of a process (tests build
many) counts alone, and ``GET /metrics`` (``gateway.doors.app``) exposes it.

A run's times are kept by its ``RunClock``, made when the hub takes the run on: it sees
each batch of events the run emits and observes, from that moment, the time to
RUN_STARTED, to the first text and to the run's end, and counts the run by how it ended.
A RUN_STARTED sent as its input was admitted (docs/first-event.md) is timed by the door
that sent it instead, from the admission to the moment it was written to the socket,
which is what its client waits for; the run's clock then leaves it out.
What other code already counts (runs in progress, the store's queue) is read when
Prometheus scrapes, through a function given once (``watch_*``), never counted twice.

Labels are bounded sets: an outcome, an error code of the AgentCore table, a door, a model
the hosted agent names, a kind of limit; never a user, a thread or a run id.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from gateway import wire as p

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.metrics_core import Metric


class PipeCounts(Protocol):
    """What crossed the worker processes' pipes, as their pool counts it
    (``gateway.adk.workers.channel.Counts``): message type's name -> [messages, bytes]."""

    sent: dict[str, list[int]]
    received: dict[str, list[int]]


# Where a run's latency falls, in seconds: from a few ms (RUN_STARTED) to minutes (the end).
START_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
RUN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)

# RUN_ERROR codes the gateway sends; anything else is counted as "other".
ERROR_CODES = frozenset(code.value for code in p.ErrorCode)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """Counts nothing: what a gateway with metrics off calls. ``Prometheus`` counts."""

    enabled = False

    def run_clock(self) -> RunClock | None:
        """A clock for a run the hub takes on; None: the run is not timed."""
        return None

    def watch_runs(self, in_progress: Callable[[], int]) -> None:
        """Runs in progress, read at each scrape."""

    def watch_store_queue(self, queued: Callable[[], int]) -> None:
        """Writes waiting for the store's writer, read at each scrape."""

    def watch_workers(self, ready: Callable[[], int]) -> None:
        """Worker processes ready to run invocations (docs/multicore.md), read at each scrape."""

    def watch_pipes(self, counts: PipeCounts) -> None:
        """What crossed the worker processes' pipes (messages and bytes each way, by message
        type: docs/multicore.md), read at each scrape."""

    def invocation_placed(self, where: str) -> None:
        """A run's invocation went to ``where``: "main" (this process) or "worker"; counted
        only with workers started on demand."""

    def connection_opened(self, door: str) -> None:
        """A WebSocket or an HTTP request came in (``door`` "ws" or "http")."""

    def connection_closed(self, door: str) -> None:
        """The connection ``connection_opened`` counted is over."""

    def run_ended(self, outcome: str, code: str | None, seconds: float) -> None:
        """A run ended: "success", "client_tools", "interrupt", "cancelled" or "error"."""

    def run_started(self, seconds: float) -> None: ...

    def first_text(self, seconds: float) -> None: ...

    def reattached(self) -> None:
        """A client reattached to a thread."""

    def input_deduped(self, found: str) -> None:
        """An input sent again did not run again (``gateway.hub.dedupe``): its runId was
        found "here" (admitted, or running, in this process) or "stored"."""

    def live_audio(self, direction: str, seconds: float) -> None:
        """Seconds of audio a live turn heard (``direction`` "in") or spoke ("out")."""

    def live_dropped(self, outcome: str) -> None:
        """A live turn's connection dropped: the turn was "held" for a reattach, then
        "resumed" by one or "ended" with nobody back."""

    def thread_door(self, verb: str) -> None:
        """The thread door answered a request: list, search, read, edit, delete or export."""

    def replayed(self, sent_bytes: int) -> None:
        """A reattach or a history page had the gateway send ``sent_bytes`` of a thread."""

    def store_committed(self, seconds: float, writes: int, ok: bool) -> None:
        """One transaction of the store's writer: its writes and how long it took."""

    def model_called(self, model: str, seconds: float, failed: bool) -> None:
        """A model call ended, answered (``failed`` False) or with an error."""

    def tokens_used(self, model: str, input_tokens: int | None, output_tokens: int | None) -> None:
        """Tokens a model call reported."""

    def client_tools_awaited(self, calls: int) -> None:
        """A run ended waiting on ``calls`` client-tool calls the browser executes."""

    def client_tools_expired(self, calls: int) -> None:
        """Client-tool calls nobody answered in time, closed with a timeout."""

    def approvals_asked(self, count: int) -> None: ...

    def approval_answered(self, decision: str) -> None:
        """A person's answer: "approved", "rejected", "cancelled", "unreadable", or
        "refused" (expired, answered already, or the input refused)."""

    def refused(self, limit: str) -> None:
        """A request refused by a limit: "rate", "reattach_bytes", "quota" or "runs"."""

    def lease_taken_over(self) -> None:
        """This process took over a thread whose process died mid-run."""

    def branch_moved(self, move: str) -> None:
        """A thread's branches moved (docs/branches.md): "fork" or "switch"."""

    def fenced(self) -> None:
        """The database refused a write of a thread another process took over."""

    def owed_reply_given_up(self) -> None:
        """A thread's owed reply was cut off ``FINISHING_ATTEMPTS`` times in a row and is
        not asked for again (``gateway.store.recovery``)."""

    def exposition(self) -> bytes:
        return b""


OFF = Metrics()


class RunClock:
    """One run's times, observed as its events go out; see the module's docstring."""

    __slots__ = ("_ended", "_metrics", "_since", "_started", "_texted")

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._since = time.perf_counter()
        self._started = False
        self._texted = False
        self._ended = False

    def started_early(self) -> None:
        """The run's RUN_STARTED went out as its input was admitted, timed by its door."""
        self._started = True

    def saw(self, batch: Iterable[p.Event]) -> None:
        for event in batch:
            if isinstance(event, p.TextMessageContent):
                if not self._texted:
                    self._texted = True
                    self._metrics.first_text(time.perf_counter() - self._since)
            elif isinstance(event, p.RunStarted) and not self._started:
                self._started = True
                self._metrics.run_started(time.perf_counter() - self._since)
            elif isinstance(event, p.RunFinished | p.RunError) and not self._ended:
                self._ended = True
                outcome, code = _outcome(event)
                self._metrics.run_ended(outcome, code, time.perf_counter() - self._since)
                if isinstance(event, p.RunFinished) and isinstance(
                    event.outcome, p.InterruptOutcome
                ):
                    self._metrics.approvals_asked(len(event.outcome.interrupts))


def _outcome(event: p.RunFinished | p.RunError) -> tuple[str, str | None]:
    if isinstance(event, p.RunError):
        return "error", event.code if event.code in ERROR_CODES else "other"
    outcome = event.outcome
    if isinstance(outcome, p.InterruptOutcome):
        return "interrupt", None
    if isinstance(outcome, p.CancelledOutcome):
        return "cancelled", None
    if isinstance(outcome, p.SuccessOutcome) and outcome.pending_tool_call_ids:
        return "client_tools", None
    return "success", None


class Prometheus(Metrics):
    """The counting ``Metrics``: a registry of its own, every metric defined here."""

    enabled = True

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, GCCollector, Histogram

        self.registry: CollectorRegistry = CollectorRegistry(auto_describe=True)
        r = self.registry
        # The collector's work by generation (``gateway.garbage``): each one stalls the loop.
        GCCollector(registry=r)
        self._runs = Counter(
            "gateway_runs",
            "Runs ended, by outcome (and RUN_ERROR code)",
            ["outcome", "code"],
            registry=r,
        )
        self._run_started = Histogram(
            "gateway_run_started_seconds",
            "From the input admitted to its RUN_STARTED sent (or from the run taken on)",
            buckets=START_BUCKETS,
            registry=r,
        )
        self._first_text = Histogram(
            "gateway_run_first_text_seconds",
            "From the run taken on to its first text",
            buckets=RUN_BUCKETS,
            registry=r,
        )
        self._run_seconds = Histogram(
            "gateway_run_seconds",
            "From the run taken on to its end",
            buckets=RUN_BUCKETS,
            registry=r,
        )
        self._runs_in_progress = Gauge("gateway_runs_in_progress", "Runs in progress", registry=r)
        self._connections = Gauge(
            "gateway_connections",
            "Open WebSockets and HTTP requests in progress",
            ["door"],
            registry=r,
        )
        self._reattaches = Counter("gateway_reattaches", "Reattaches to a thread", registry=r)
        self._deduped = Counter(
            "gateway_inputs_deduped",
            "Inputs sent again with a runId their thread had received: not run again",
            ["found"],
            registry=r,
        )
        self._live_audio = Counter(
            "gateway_live_audio_seconds",
            "Seconds of audio live turns heard (in) and spoke (out)",
            ["direction"],
            registry=r,
        )
        self._live_drops = Counter(
            "gateway_live_drops",
            "Live turns whose connection dropped: held for a reattach, then resumed or ended",
            ["outcome"],
            registry=r,
        )
        self._thread_door = Counter(
            "gateway_thread_requests", "Requests the thread door answered", ["verb"], registry=r
        )
        self._replay_bytes = Counter(
            "gateway_replay_bytes",
            "Bytes of threads sent by reattaches and history pages",
            registry=r,
        )
        self._commit = Histogram(
            "gateway_store_commit_seconds",
            "Transactions of the store's writer",
            buckets=COMMIT_BUCKETS,
            registry=r,
        )
        self._commit_failures = Counter(
            "gateway_store_commit_failures",
            "Transactions of the store's writer that failed",
            registry=r,
        )
        self._writes = Counter(
            "gateway_store_writes", "Writes the store's writer committed", registry=r
        )
        self._store_queue = Gauge(
            "gateway_store_queue_depth", "Writes waiting for the store's writer", registry=r
        )
        self._workers = Gauge(
            "gateway_workers", "Worker processes ready to run invocations", registry=r
        )
        self._pipes = _Pipes()
        r.register(self._pipes)  # a collector: its collect() is all the registry calls
        self._placed = Counter(
            "gateway_invocations",
            "Runs' invocations by where they ran, with workers on demand (main or worker)",
            ["where"],
            registry=r,
        )
        self._model_calls = Counter(
            "gateway_model_calls",
            "Model calls, by model and result",
            ["model", "result"],
            registry=r,
        )
        self._model_seconds = Histogram(
            "gateway_model_call_seconds",
            "Model calls, from the request to the last chunk",
            ["model"],
            buckets=RUN_BUCKETS,
            registry=r,
        )
        self._tokens = Counter(
            "gateway_model_tokens",
            "Tokens the models reported, by model and direction",
            ["model", "direction"],
            registry=r,
        )
        self._client_waits = Counter(
            "gateway_client_tool_waits", "Client-tool calls a run ended waiting on", registry=r
        )
        self._client_expiries = Counter(
            "gateway_client_tool_expiries", "Client-tool calls closed unanswered", registry=r
        )
        self._approvals_asked = Counter(
            "gateway_approvals_asked", "Approvals runs asked a person for", registry=r
        )
        self._approvals = Counter(
            "gateway_approvals_answered",
            "Answers to approvals, by decision",
            ["decision"],
            registry=r,
        )
        self._refusals = Counter(
            "gateway_limit_refusals",
            "Requests refused by a limit, by limit",
            ["limit"],
            registry=r,
        )
        self._branch_moves = Counter(
            "gateway_branch_moves",
            "Regenerates and edits (fork) and branch switches (switch), by move",
            ["move"],
            registry=r,
        )
        self._takeovers = Counter(
            "gateway_lease_takeovers",
            "Threads taken over from a process that died",
            registry=r,
        )
        self._fenced = Counter(
            "gateway_fencing_refusals",
            "Writes refused: another process took the thread",
            registry=r,
        )
        self._given_up = Counter(
            "gateway_owed_replies_given_up",
            "Replies the model owed, cut off in every run that asked for them again",
            registry=r,
        )

    def run_clock(self) -> RunClock:
        return RunClock(self)

    def watch_runs(self, in_progress: Callable[[], int]) -> None:
        self._runs_in_progress.set_function(in_progress)

    def watch_store_queue(self, queued: Callable[[], int]) -> None:
        self._store_queue.set_function(queued)

    def watch_workers(self, ready: Callable[[], int]) -> None:
        self._workers.set_function(ready)

    def watch_pipes(self, counts: PipeCounts) -> None:
        self._pipes.counts = counts

    def invocation_placed(self, where: str) -> None:
        self._placed.labels(where).inc()

    def connection_opened(self, door: str) -> None:
        self._connections.labels(door).inc()

    def connection_closed(self, door: str) -> None:
        self._connections.labels(door).dec()

    def run_ended(self, outcome: str, code: str | None, seconds: float) -> None:
        self._runs.labels(outcome, code or "").inc()
        self._run_seconds.observe(seconds)

    def run_started(self, seconds: float) -> None:
        self._run_started.observe(seconds)

    def first_text(self, seconds: float) -> None:
        self._first_text.observe(seconds)

    def reattached(self) -> None:
        self._reattaches.inc()

    def input_deduped(self, found: str) -> None:
        self._deduped.labels(found).inc()

    def live_audio(self, direction: str, seconds: float) -> None:
        self._live_audio.labels(direction).inc(seconds)

    def live_dropped(self, outcome: str) -> None:
        self._live_drops.labels(outcome).inc()

    def thread_door(self, verb: str) -> None:
        self._thread_door.labels(verb).inc()

    def replayed(self, sent_bytes: int) -> None:
        self._replay_bytes.inc(sent_bytes)

    def store_committed(self, seconds: float, writes: int, ok: bool) -> None:
        self._commit.observe(seconds)
        if ok:
            self._writes.inc(writes)
        else:
            self._commit_failures.inc()

    def model_called(self, model: str, seconds: float, failed: bool) -> None:
        self._model_calls.labels(model, "error" if failed else "ok").inc()
        self._model_seconds.labels(model).observe(seconds)

    def tokens_used(self, model: str, input_tokens: int | None, output_tokens: int | None) -> None:
        if input_tokens:
            self._tokens.labels(model, "input").inc(input_tokens)
        if output_tokens:
            self._tokens.labels(model, "output").inc(output_tokens)

    def client_tools_awaited(self, calls: int) -> None:
        self._client_waits.inc(calls)

    def client_tools_expired(self, calls: int) -> None:
        self._client_expiries.inc(calls)

    def approvals_asked(self, count: int) -> None:
        self._approvals_asked.inc(count)

    def approval_answered(self, decision: str) -> None:
        self._approvals.labels(decision).inc()

    def refused(self, limit: str) -> None:
        self._refusals.labels(limit).inc()

    def lease_taken_over(self) -> None:
        self._takeovers.inc()

    def branch_moved(self, move: str) -> None:
        self._branch_moves.labels(move).inc()

    def fenced(self) -> None:
        self._fenced.inc()

    def owed_reply_given_up(self) -> None:
        self._given_up.inc()

    def exposition(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


class _Pipes:
    """The workers' pipes' counts as counters, read from the pool's ``Counts`` when scraped
    (one dict update a message there, no prometheus object on the pipe's path)."""

    def __init__(self) -> None:
        self.counts: PipeCounts | None = None

    def collect(self) -> Iterable[Metric]:
        from prometheus_client.metrics_core import CounterMetricFamily

        labels = ["direction", "message"]
        messages = CounterMetricFamily(
            "gateway_worker_pipe_messages",
            "Messages across the worker processes' pipes, by direction and message type",
            labels=labels,
        )
        sizes = CounterMetricFamily(
            "gateway_worker_pipe_bytes",
            "Bytes (frames) across the worker processes' pipes, by direction and message type",
            labels=labels,
        )
        if self.counts is not None:
            for direction, counted in (
                ("to_worker", self.counts.sent),
                ("from_worker", self.counts.received),
            ):
                for kind, (count, size) in sorted(counted.items()):
                    messages.add_metric([direction, kind], count)
                    sizes.add_metric([direction, kind], size)
        return [messages, sizes]


def for_setting(setting: str) -> Metrics:
    """``GATEWAY_METRICS``: "on" counts, "off" (the default) does not."""
    return Prometheus() if setting == "on" else OFF


def sample(metrics: Metrics, name: str, **labels: str) -> Any:
    """One sample's value, by its exposed name (``gateway_runs_total``); None if absent."""
    registry = getattr(metrics, "registry", None)
    return registry.get_sample_value(name, labels) if registry is not None else None
