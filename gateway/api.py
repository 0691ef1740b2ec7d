"""The Python API: the gateway for an agent as an ASGI app, or served.

    from gateway import Settings, create_app, serve

    app = create_app(root_agent, Settings(db="threads.db"))   # mount it, or
    serve(root_agent, Settings(port=9000))                     # run it

``agent`` is an ADK agent, an App, a ``gateway.Hosted``, or a string as ``agent-gateway
serve AGENT`` takes (see ``gateway.adk.loading``); None is the bundled demo.

Both read the environment (and the ``GATEWAY_CONFIG`` file) as the command does, under
what the code sets: a value of ``settings`` other than its default wins, every other
setting comes from ``GATEWAY_*`` (``gateway.config.resolve``), and the start-up log says
which came from where. ``environ=False`` takes ``settings`` as they are.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from google.adk.agents import BaseAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.plugins.base_plugin import BasePlugin

from gateway import config, metrics, timeline
from gateway.adk.hosting import Hosted
from gateway.adk.live import Transcripts
from gateway.adk.live_approvals import LiveApprovalPlugin
from gateway.config import Settings
from gateway.tools.catalog import Catalog

if TYPE_CHECKING:
    import uvicorn

    from gateway.a2ui.plugin import SurfacePlugin
    from gateway.adk.services import Services
    from gateway.adk.usage import UsagePlugin
    from gateway.adk.workers.pool import WorkerProcess
    from gateway.audit.plugin import ToolCallLog
    from gateway.doors.app import Gateway
    from gateway.models.calls import ModelCalls

__all__ = ["create_app", "serve", "server", "server_config"]

log = logging.getLogger(__name__)

LARGEST_FRAME_FACTOR = 4

# An agent, an App, a Hosted, a factory of the Settings returning one, or an AGENT string.
Hostable = BaseAgent | App | Hosted | Callable[[Settings], BaseAgent | App | Hosted] | str | None


def create_app(
    agent: Hostable = None,
    settings: Settings | None = None,
    *,
    catalog: Catalog | Path | str | None = None,
    model: BaseLlm | str | None = None,
    predict_state: Iterable[object] | None = None,
    environ: bool = True,
) -> Gateway:
    """The gateway for ``agent`` as an ASGI app; it opens its store in its lifespan (and
    warms itself up when it is the server's app). Mounted inside another app, run its
    ``lifespan`` from the host's.

    ``catalog`` (or ``GATEWAY_CATALOG``) restricts client tools to a catalog's; ``model``
    (or ``GATEWAY_MODEL``) replaces the model of every LlmAgent; ``predict_state`` (or
    ``GATEWAY_PREDICT_STATE``) gives tools predictive state: ``gateway.Prediction``s,
    ag-ui-adk ``PredictStateMapping``s or dicts with their fields. An agent that cannot be
    hosted raises ``HostingError`` here, with a sentence saying why.

    Settings come from ``settings`` over the environment (see the module's docstring),
    logged with where each came from; ``environ=False`` takes ``settings`` as they are.
    """
    from gateway.a2ui.plugin import SurfacePlugin
    from gateway.adk.engine import Engine, open_session_service
    from gateway.adk.hosting import prepare
    from gateway.adk.services import open_services
    from gateway.adk.stand_in import stand_in
    from gateway.adk.usage import UsagePlugin
    from gateway.adk.workers import WorkerPool
    from gateway.audit import AuditLog
    from gateway.cluster import Cluster
    from gateway.cluster import for_settings as cluster_for
    from gateway.doors.app import Gateway
    from gateway.hub.busy import Busy
    from gateway.hub.client_state import StateRules
    from gateway.hub.hub import Hub
    from gateway.hub.limits import Quota, RunSlots, SendBudget
    from gateway.models.calls import ModelCalls
    from gateway.store import SessionService
    from gateway.store.recovery import Afterwards
    from gateway.tools.client import ClientToolset

    if environ:
        resolved = config.resolve(given=settings)
        config.announce(resolved)
        settings = resolved.settings
    settings = settings or Settings()
    if isinstance(model, str):  # a name, as GATEWAY_MODEL takes it: a worker builds it too
        settings, model = dataclasses.replace(settings, model=model), None
    counted = metrics.for_setting(settings.metrics)
    state_rules = StateRules(config.client_state(settings), settings.max_state_bytes)
    hosted = _hosted(agent, settings, catalog, model, predict_state)
    _quiet_libraries()
    audit = AuditLog(settings.db, durability=settings.durability)
    client_tools = ClientToolset(hosted.catalog)
    usage = UsagePlugin(counted)
    model_calls = ModelCalls(counted)
    surfaces = SurfacePlugin()
    services = open_services(settings)
    plugins = _plugins(hosted, services, usage, model_calls, surfaces, audit)
    app = prepare(hosted, client_tools, plugins)
    # The warm-up's runs meet a stand-in unless the owner asks to warm the agent itself.
    warm_up = stand_in(app, client_tools, plugins) if settings.warm_up == "gateway" else None
    workers, on_demand = _workers(agent, settings, catalog, model, predict_state)
    service: list[SessionService] = []
    pools: list[WorkerPool] = []
    engines: list[Engine] = []
    clusters: list[Cluster] = []

    async def startup() -> Hub:
        timeline.start(settings.timeline, "main")  # GATEWAY_TIMELINE: off unless named
        # The store first: it refuses a new file that already holds tables of its own.
        assert app.root_agent is not None
        service.append(await open_session_service(settings, app.name, app.root_agent.name))
        service[0].count_into(counted)
        await audit.open()
        if workers:
            spec = agent if isinstance(agent, str) else None  # _workers: a spec or the demo
            spawn = partial(_spawn_worker, spec, settings)
            pool = WorkerPool(
                workers, spawn, service[0], on_demand=on_demand, audit=audit, metrics=counted
            )
            service[0].keeps_texts = True  # a worker's run is handed its rows' texts
            pools.append(pool)
            await pool.start()
        engine = Engine(
            hosted,
            app,
            client_tools,
            service[0],
            usage,
            model_calls,
            surfaces=surfaces,
            services=services,
            warm_up=warm_up,
            workers=pools[0] if pools else None,
        )
        engines.append(engine)
        hub = Hub(
            engine,
            client_tool_timeout=settings.client_tool_timeout,
            approval_timeout=settings.approval_timeout,
            audit=audit,
            context_allow=config.context_allow(settings),
            slots=RunSlots(settings.max_runs, settings.run_wait, counted),
            snapshot_bytes=settings.snapshot_bytes,
            cursor_bytes=settings.cursor_bytes,
            quota=Quota(settings.user_threads, settings.user_stored_bytes, counted),
            sends=SendBudget(
                settings.user_reattach_bytes, settings.user_reattach_burst, metrics=counted
            ),
            model_timeout=settings.model_timeout,
            busy_policy=Busy(settings.busy),
            cluster=cluster_for(settings),
            state_rules=state_rules,
            metrics=counted,
            titles=settings.titles,
            branches_per_thread=settings.branches_per_thread,
        )
        for closed in service[0].cut_off:
            # The log ends the run as the store now does, before any client follows it.
            await hub.takeovers.end_logged_run(closed.user_id, closed.thread_id)
            if closed.afterwards is not Afterwards.NOTHING:
                hub.finish_cut_off(closed)
        # Joined last: from now on other processes may hand this one their threads.
        await hub.cluster.start(hub)
        clusters.append(hub.cluster)
        return hub

    async def shutdown() -> None:
        # After the hub's runs stopped: the leases they held go with the node.
        if clusters:
            await clusters[0].close()
        if engines:
            await engines[0].close()
        if pools:
            await pools[0].close()
        await audit.close()
        if service:
            await service[0].close()
        # The marks still batched: uvicorn ends a process it stopped on SIGTERM by raising
        # the signal again, so the exit handler ``timeline.start`` registered never runs.
        timeline.stop()

    return Gateway(settings, startup, shutdown, counted)


def _plugins(
    hosted: Hosted,
    services: Services,
    usage: UsagePlugin,
    model_calls: ModelCalls,
    surfaces: SurfacePlugin,
    audit: ToolCallLog | None,
) -> list[BasePlugin]:
    """The gateway's plugins of the App, in their order; without ``audit``, no audit plugin.
    A worker process's ``audit`` hands its records to the main process's log."""
    from gateway.adk.approvals import ApprovalPlugin
    from gateway.adk.confirm_changes import ConfirmChangesPlugin
    from gateway.adk.memory import MemoryPlugin
    from gateway.adk.thoughts import ThoughtsPlugin
    from gateway.audit import AuditPlugin
    from gateway.doors.warmup import WarmUpPlugin
    from gateway.tools import mcp
    from gateway.tools.long_running import LongRunningPlugin
    from gateway.translate.attribution import AttributionPlugin

    plugins: list[BasePlugin] = [
        # First: it reads a tool's result before any other plugin may replace it.
        LongRunningPlugin(),
        # Before the audit's and the approvals': a live turn's call waits for its answer here.
        LiveApprovalPlugin(),
        *([AuditPlugin(audit)] if audit is not None else []),
        ApprovalPlugin(),
        AttributionPlugin(),
        surfaces,
        usage,
        ThoughtsPlugin(),
        WarmUpPlugin(),
        mcp.McpFailurePlugin(),
        # After the warm-up's: a call it answers never reaches the model, so is not watched.
        model_calls,
        # A live turn's transcripts keep one message id per utterance (docs/voice.md).
        Transcripts(),
    ]
    if any(prediction.confirm for prediction in hosted.predict_state):
        plugins.append(ConfirmChangesPlugin(hosted.predict_state))
    if services.memory is not None:
        plugins.append(MemoryPlugin())
    return plugins


def _workers(
    agent: Hostable,
    settings: Settings,
    catalog: Catalog | Path | str | None,
    model: BaseLlm | None,
    predict_state: Iterable[object] | None,
) -> tuple[int, bool]:
    """How many worker processes run the invocations, and whether they start on demand
    (docs/multicore.md). ``GATEWAY_WORKERS=auto`` (the default): up to one per core, on
    demand, when there is more than one; N ≥ 2: N, started with the gateway; else none.
    Workers need a new process to load the same agent, which it can from an AGENT spec
    (or the demo) and the settings alone."""
    auto = settings.workers == config.AUTO_WORKERS
    count = cores() if auto else settings.workers
    if count < 2:
        if auto:
            log.info("invocations run in this process: it has one core (GATEWAY_WORKERS=auto)")
        return 0, False
    if not (agent is None or isinstance(agent, str)) or (catalog, model, predict_state) != (
        None,
        None,
        None,
    ):
        # Asked for, it is worth a warning; the default's fallback is only said.
        log.log(
            logging.INFO if auto else logging.WARNING,
            "serving in one process, not with GATEWAY_WORKERS=%s: the agent (or its catalog,"
            " model or predict_state) was given as an object, which a worker process cannot"
            " load; pass the agent's AGENT spec and settings instead",
            "auto" if auto else settings.workers,
        )
        return 0, False
    return count, auto


def cores() -> int:
    """The cores this process may run on (``os.process_cpu_count`` from Python 3.13), fewer
    if its cgroup's CPU quota says so: a container limited to 2 CPUs on a 64-core host
    starts 2 workers at most, not 64."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        count = os.cpu_count() or 1
    quota = cpu_quota()
    return max(1, min(count, math.ceil(quota))) if quota is not None else count


def cpu_quota(cgroup: Path = Path("/sys/fs/cgroup")) -> float | None:
    """CPUs the cgroup's quota allows (v2 ``cpu.max``, else v1's), None: no quota."""
    try:
        limit, period = (cgroup / "cpu.max").read_text().split()[:2]
        return None if limit == "max" else int(limit) / int(period)
    except (OSError, ValueError):
        pass
    try:
        v1 = cgroup / "cpu"
        limit_us = int((v1 / "cpu.cfs_quota_us").read_text())
        period_us = int((v1 / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return limit_us / period_us if limit_us > 0 and period_us > 0 else None


def _spawn_worker(agent: str | None, settings: Settings, path: str, index: int) -> WorkerProcess:
    """Starts worker process ``index`` (spawned: nothing of this process is forked)."""
    import multiprocessing

    process = multiprocessing.get_context("spawn").Process(
        target=_worker_main,
        args=(agent, settings, path, index),
        name=f"gateway-worker-{index}",
        daemon=True,
    )
    process.start()
    return process


def _worker_main(agent: str | None, settings: Settings, path: str, index: int) -> None:
    """A worker process's life: the App as ``create_app`` builds it, over a session
    service that stores through the main process at ``path``, until that lets it go."""
    from gateway import garbage, logs, timeline, tracing
    from gateway.a2ui.plugin import SurfacePlugin
    from gateway.adk.hosting import prepare
    from gateway.adk.invocation import Invocation, runner_for
    from gateway.adk.services import open_services
    from gateway.adk.stand_in import stand_in
    from gateway.adk.usage import UsagePlugin
    from gateway.adk.workers import first_turn, relay, remote_session, worker
    from gateway.adk.workers.warm_up import warm_up
    from gateway.models.calls import ModelCalls
    from gateway.tools.client import ClientToolset

    logs.configure(settings, worker=index)
    timeline.start(settings.timeline, f"worker-{index}")
    _quiet_libraries()  # the agent's model, tools and MCP servers run here
    tracing.configure()  # the same OTEL_* as the main process: its spans go to the same place
    # The main process loaded the same agent with the same settings, and said what there was.
    with _said_already():
        hosted = _hosted(agent, settings, None, None, None)
        client_tools = ClientToolset(hosted.catalog)
        # The main process keeps the audit and the metrics: the worker's are handed to it.
        recorded = relay.Relay(counting=settings.metrics == "on")
        usage, model_calls = UsagePlugin(recorded), ModelCalls(recorded)
        surfaces = SurfacePlugin()
        services = open_services(settings)
        plugins = _plugins(hosted, services, usage, model_calls, surfaces, audit=recorded)
        app = prepare(hosted, client_tools, plugins)
    sessions = remote_session.RemoteSessions()
    runner = runner_for(app, sessions, services)
    invocation = Invocation(client_tools, surfaces, sessions.surfaces)
    # The warm-up meets what the main process's meets (gateway.adk.workers.warm_up).
    warm_app = stand_in(app, client_tools, plugins) if settings.warm_up == "gateway" else app

    async def life() -> None:
        await warm_up(warm_app, invocation, services, client_tools.in_catalog())
        garbage.settle()  # freezes what start-up and the warm-up built (gateway.garbage)
        await worker.serve(
            path,
            index,
            runner,
            invocation,
            sessions,
            usage,
            model_calls,
            settings.model_timeout,
            recorded,
        )

    # Not uvloop: a starting run's steps go first on this loop (gateway.adk.workers.first_turn).
    first_turn.run(life(), counting=timeline.on())  # counted for the timeline, when on
    tracing.flush()  # the spans still batched, before the process exits
    timeline.stop()


@contextlib.contextmanager
def _said_already() -> Iterator[None]:
    """Inside, log records up to WARNING and Python's warnings are not shown: a worker
    loads the agent the main process loaded, with the same settings, and would say again,
    once a worker, what loading it said there (the loader's warnings, ADK's, the agent's
    module's own). Errors are shown: a worker that cannot load says why. Warnings are still
    filtered as set (one an agent's module turns into an error raises); only the showing is
    left out."""
    disabled = logging.root.manager.disable
    shown = warnings.showwarning

    def unshown(*_: object, **__: object) -> None:
        return None

    logging.disable(logging.WARNING)
    warnings.showwarning = unshown
    try:
        yield
    finally:
        logging.disable(disabled)
        if warnings.showwarning is unshown:  # else the agent's module set its own
            warnings.showwarning = shown


def _quiet_libraries() -> None:
    """Keeps out of the log what libraries say that the gateway says better in a line of its
    own (MCP, usage, google-genai, httpx's line a request): in the main process and in each
    worker alike."""
    from gateway.adk.usage import install_log_filter as usage_log_filter
    from gateway.models import sdk_noise
    from gateway.tools import mcp

    mcp.install_log_filter()
    usage_log_filter()
    sdk_noise.install_log_filter()


def _hosted(
    agent: Hostable,
    settings: Settings,
    catalog: Catalog | Path | str | None,
    model: BaseLlm | None,
    predict_state: Iterable[object] | None,
) -> Hosted:
    from gateway.adk import loading
    from gateway.adk.hosting import HostingError
    from gateway.doors import warmup
    from gateway.tools import catalog as tool_catalog
    from gateway.translate import predictions

    warmup.skip_absent_a2a()
    hosted = loading.load(settings.agent if agent is None else agent, settings)
    catalog = catalog or settings.catalog or None
    if catalog is not None:
        loaded = catalog if isinstance(catalog, Catalog) else tool_catalog.load(catalog)
        hosted = dataclasses.replace(hosted, catalog=loaded)
    if model is not None:
        hosted = dataclasses.replace(hosted, model=model)
    try:  # given here or by the setting, it replaces what an ADKAgent carried
        predicted = predictions.predictions(predict_state) or predictions.parse(
            settings.predict_state
        )
    except predictions.PredictionError as error:
        raise HostingError(str(error)) from None
    if predicted:
        hosted = dataclasses.replace(hosted, predict_state=predicted)
    return hosted


# What a worker that found serve() in the script it re-ran says, and so exits.
RERUN_IN_A_WORKER = (
    "agent-gateway: gateway.serve() was called again in a worker process as it started: "
    "a worker (GATEWAY_WORKERS, docs/multicore.md) runs the script that started the gateway "
    'again, as Python\'s spawn does, and serve() is not under `if __name__ == "__main__":`. '
    "Put it there."
)


def _worker_starting() -> bool:
    """Whether this is a spawned process still re-running its parent's main script (where
    multiprocessing itself refuses to start a process)."""
    import multiprocessing

    return bool(getattr(multiprocessing.current_process(), "_inheriting", False))


def server_config(settings: Settings, app: Gateway) -> uvicorn.Config:
    """uvicorn on uvloop with the websockets engine, bounded by ``gateway.doors.transport``.

    No compression by default; logging is ``gateway.logs``'s, uvicorn's records included.
    """
    import uvicorn

    from gateway.doors.transport import protocols

    http, ws = protocols(settings)
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        loop="uvloop",
        http=http,
        ws=ws,
        # The app answers frames over the limit with VALIDATION_ERROR and keeps the
        # connection; only frames far beyond it are cut off by the protocol engine.
        ws_max_size=LARGEST_FRAME_FACTOR * settings.max_frame_bytes,
        ws_per_message_deflate=False,
        ws_ping_interval=settings.ws_ping_interval,
        ws_ping_timeout=settings.ws_ping_timeout,
        timeout_keep_alive=settings.keepalive_timeout,
        lifespan="on",
        log_config=None,
        log_level=settings.log_level,
        access_log=False,
    )


def server(settings: Settings, app: Gateway) -> uvicorn.Server:
    """uvicorn's server for ``app`` (``server_config``), which on SIGTERM drains the gateway
    (``gateway.doors.drain``) before it closes a socket."""
    import asyncio

    from gateway.doors.drain import DrainingServer

    return DrainingServer(server_config(settings, app), lambda: asyncio.ensure_future(app.drain()))


def serve(
    agent: Hostable = None,
    settings: Settings | None = None,
    *,
    catalog: Catalog | Path | str | None = None,
    model: BaseLlm | str | None = None,
    predict_state: Iterable[object] | None = None,
    environ: bool = True,
) -> None:
    """Serves ``agent`` until the process is stopped: uvicorn on ``settings.host:port``,
    with the gateway's logging; SIGTERM drains it (``GATEWAY_DRAIN_SECONDS``). The
    environment is read as ``create_app`` reads it, unless ``environ`` is False."""
    from gateway import logs, tracing
    from gateway.doors import open_files

    if _worker_starting():
        raise SystemExit(RERUN_IN_A_WORKER)
    resolved = config.resolve(given=settings) if environ else None
    settings = resolved.settings if resolved else settings or Settings()
    # Only a gateway that will serve takes over the process's logging; before the agent
    # is loaded, so what loading it says (an ADKAgent's settings not kept) is seen.
    logs.configure(settings)
    if resolved:
        config.announce(resolved)
    settings = open_files.fit(settings)  # a file descriptor for each connection it lets in
    tracing.configure()  # by the standard OTEL_* variables; off without them
    app = create_app(
        agent,
        settings,
        catalog=catalog,
        model=model,
        predict_state=predict_state,
        environ=False,
    )
    server(settings, app).run()
