"""The ``agent-gateway`` command: ``serve`` (the default) and small operator commands."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gateway import config
from gateway.config import Settings

if TYPE_CHECKING:
    import uvicorn
    from google.adk.models.base_llm import BaseLlm

    from gateway.server import Gateway


LARGEST_FRAME_FACTOR = 4


def build_app(settings: Settings, model: BaseLlm | None = None) -> Gateway:
    """The ASGI app with its start-up: store, catalog, agent (the app warms itself up).

    ``model`` replaces the configured one (tests use it to inject failures).
    """
    from gateway import runner, warmup
    from gateway.audit import AuditLog, AuditPlugin
    from gateway.hub import Hub
    from gateway.limits import Quota, RunSlots
    from gateway.store import SessionService
    from gateway.tools import catalog as tool_catalog

    service: list[SessionService] = []
    audit = AuditLog(settings.db)

    async def startup() -> Hub:
        warmup.skip_absent_a2a()
        catalog = tool_catalog.load()
        agent = runner.build_agent(model or runner.build_model(settings), catalog)
        # The store first: it refuses a new file that already holds tables of its own.
        service.append(await runner.open_session_service(settings, agent.name))
        await audit.open()
        engine = runner.Engine(agent, service[0], catalog, plugins=[AuditPlugin(audit)])
        hub = Hub(
            engine,
            client_tool_timeout=settings.client_tool_timeout,
            approval_timeout=settings.approval_timeout,
            audit=audit,
            context_allow=config.context_allow(settings),
            slots=RunSlots(settings.max_runs, settings.run_wait),
            snapshot_bytes=settings.snapshot_bytes,
            quota=Quota(settings.user_threads, settings.user_stored_bytes),
        )
        return hub

    async def shutdown() -> None:
        await audit.close()
        if service:
            await service[0].close()

    from gateway.server import Gateway

    return Gateway(settings, startup, shutdown)


def server_config(settings: Settings, app: Gateway) -> uvicorn.Config:
    """uvicorn on uvloop with the websockets protocol engine, bounded by ``gateway.transport``.

    No compression by default; logging is ``gateway.logs``'s, uvicorn's records included.
    """
    import uvicorn

    from gateway.transport import protocols

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


def serve(settings: Settings) -> None:
    import uvicorn

    from gateway import logs
    from gateway.auth import AuthSettingsError

    try:
        app = build_app(settings)
    except AuthSettingsError as error:
        sys.exit(f"agent-gateway: {error}")
    # Only a gateway that will serve takes over the process's logging.
    logs.configure(settings)
    uvicorn.Server(server_config(settings, app)).run()


def _print(rows: object) -> None:
    json.dump(rows, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


def main(argv: Sequence[str] | None = None) -> int:
    # No abbreviations: a subcommand's --user must never read as a setting's --user-rate.
    parser = argparse.ArgumentParser(
        prog="agent-gateway",
        description="AG-UI 1.0 gateway for Google ADK agents.",
        allow_abbrev=False,
    )
    config.add_arguments(parser)
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("serve", help="run the gateway (the default)")
    threads = commands.add_parser("threads", help="list a user's threads, or quarantined ones")
    threads.add_argument("--user")
    threads.add_argument(
        "--quarantined", action="store_true", help="only threads set aside as unreadable"
    )
    export = commands.add_parser("export", help="print a thread as AG-UI messages (JSON)")
    export.add_argument("thread")
    audit_command = commands.add_parser(
        "audit", help="print the tool calls and door actions of a thread, a user or an address"
    )
    whose = audit_command.add_mutually_exclusive_group(required=True)
    whose.add_argument("--thread")
    whose.add_argument("--user")
    whose.add_argument("--client", help="a client address: what was done from it")
    args = parser.parse_args(argv)
    if args.command == "threads" and args.user is None and not args.quarantined:
        threads.error("give --user, --quarantined, or both")
    settings = config.load(args)
    if args.command in (None, "serve"):
        serve(settings)
        return 0
    from gateway import operator
    from gateway.audit import AuditError, print_audit
    from gateway.store import StoreError

    try:
        if args.command == "threads":
            listing = operator.list_threads(settings.db, args.user, quarantined=args.quarantined)
            _print(asyncio.run(listing))
        elif args.command == "export":
            _print(asyncio.run(operator.export_thread(settings.db, args.thread)))
        elif args.command == "audit":
            asyncio.run(
                print_audit(settings.db, thread=args.thread, user=args.user, client=args.client)
            )
    except (operator.ThreadNotFoundError, StoreError, AuditError) as error:
        sys.exit(f"agent-gateway {args.command}: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
