"""The ``agent-gateway`` command: ``serve`` (the default) and small operator commands.

This is their command line; what the operator commands read is ``gateway.cli.operator``
(``threads``, ``export``) and ``gateway.audit.reading`` (``audit``).
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import json
import os
import socket
import sys
from collections.abc import Sequence

from gateway import config


def serve(resolved: config.Resolved) -> None:
    from gateway import logs
    from gateway.adk.hosting import HostingError
    from gateway.api import serve as serve_agent
    from gateway.auth import AuthSettingsError
    from gateway.models import ModelError
    from gateway.tools.catalog import CatalogError

    settings = resolved.settings
    _working_directory_first()
    # The version and every setting, by where it came from, before anything is loaded.
    logs.configure(settings)
    config.announce(resolved)
    _port_free(settings)
    try:
        # Read here already: the environment is not read a second time.
        serve_agent(settings.agent or None, settings, environ=False)
    except (AuthSettingsError, HostingError, ModelError, CatalogError) as error:
        sys.exit(f"agent-gateway: {error}")


def _port_free(settings: config.Settings) -> None:
    """Refuses a port another process listens on before any start-up work (the database
    opened, the agent built), in one line: uvicorn would find out only once all is done.

    A test bind with SO_REUSEADDR, as uvicorn binds: a port left in TIME_WAIT is free."""
    if settings.port == 0:
        return
    try:
        infos = socket.getaddrinfo(settings.host, settings.port, type=socket.SOCK_STREAM)
    except OSError:
        return  # a host that does not resolve: uvicorn's own error names it
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            where = f"{settings.host}:{settings.port}"
            if error.errno == errno.EADDRINUSE:
                sys.exit(
                    f"agent-gateway: {where} is in use by another process (another gateway?): "
                    "stop it, or choose another port with --port or GATEWAY_PORT"
                )
            sys.exit(f"agent-gateway: cannot listen on {where}: {error.strerror}")


def _working_directory_first() -> None:
    """AGENT's module is found in the folder the command runs in, as ``uvicorn main:app``
    and ``python -m`` find theirs: an installed console script's path has only its own."""
    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)


def _print(rows: object) -> None:
    json.dump(rows, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


def parse(argv: Sequence[str] | None = None) -> tuple[argparse.Namespace, config.Resolved]:
    """The command line: a command, and the settings from its flags and the environment.

    Settings flags go before the command or after it (``serve --port 9000``); the operator
    commands take ``--db`` (and ``--app``) after theirs.
    """
    # No abbreviations: a subcommand's --user must never read as a setting's --user-rate.
    parser = argparse.ArgumentParser(
        prog="agent-gateway",
        description="AG-UI 1.0 gateway for Google ADK agents.",
        allow_abbrev=False,
    )
    config.add_arguments(parser)
    config.add_config_argument(parser)
    commands = parser.add_subparsers(dest="command")
    serve_command = commands.add_parser(
        "serve", help="run the gateway (the default)", allow_abbrev=False
    )
    serve_command.add_argument(
        "agent",
        nargs="?",
        default=argparse.SUPPRESS,
        metavar="AGENT",
        help="package.module:attr, package.module or an ADK agent folder (env GATEWAY_AGENT;"
        " default: the bundled demo)",
    )
    # AGENT is the positional argument here; --agent stays a flag before the command.
    everything_else = [name for name in config.setting_names() if name != "agent"]
    config.add_arguments(serve_command, only=everything_else, default=argparse.SUPPRESS)
    config.add_config_argument(serve_command, default=argparse.SUPPRESS)
    threads = commands.add_parser(
        "threads", help="list a user's threads, or quarantined ones", allow_abbrev=False
    )
    threads.add_argument("--user")
    threads.add_argument(
        "--quarantined", action="store_true", help="only threads set aside as unreadable"
    )
    export = commands.add_parser(
        "export", help="print a thread as AG-UI messages (JSON)", allow_abbrev=False
    )
    export.add_argument("thread")
    audit_command = commands.add_parser(
        "audit",
        help="print the tool calls and door actions of a thread, a user or an address",
        allow_abbrev=False,
    )
    whose = audit_command.add_mutually_exclusive_group(required=True)
    whose.add_argument("--thread")
    whose.add_argument("--user")
    whose.add_argument("--client", help="a client address: what was done from it")
    for operator_command in (threads, export):
        operator_command.add_argument(
            "--app", help="the App whose threads to read (default: the database's only one)"
        )
    for operator_command in (threads, export, audit_command):
        config.add_arguments(operator_command, only=("db",), default=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.command == "threads" and args.user is None and not args.quarantined:
        threads.error("give --user, --quarantined, or both")
    return args, config.resolve(args)


def main(argv: Sequence[str] | None = None) -> int:
    args, resolved = parse(argv)
    settings = resolved.settings
    if args.command in (None, "serve"):
        serve(resolved)
        return 0
    from gateway.audit import AuditError, print_audit
    from gateway.cli import operator
    from gateway.store import StoreError

    try:
        if args.command == "threads":
            listing = operator.list_threads(
                settings.db, args.user, args.app, quarantined=args.quarantined
            )
            _print(asyncio.run(listing))
        elif args.command == "export":
            _print(asyncio.run(operator.export_thread(settings.db, args.thread, args.app)))
        elif args.command == "audit":
            asyncio.run(
                print_audit(settings.db, thread=args.thread, user=args.user, client=args.client)
            )
    except (
        operator.ThreadNotFoundError,
        operator.AppNotFoundError,
        StoreError,
        AuditError,
    ) as error:
        sys.exit(f"agent-gateway {args.command}: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
