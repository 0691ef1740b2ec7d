"""What a worker's plugins record, handed to the main process, which keeps it.

A worker has no audit file and no metrics registry: the main process owns both (one
writer of the audit table, one ``/metrics`` to scrape). ``Relay`` stands in for them in
the worker's plugins: ``AuditPlugin`` records tool calls and notes client calls sent into
it, ``ModelCalls`` and ``UsagePlugin`` count model calls and tokens into it, and each of
those becomes one message on the pipe, sent as it happens. The main process's pool hands
each to the real ``AuditLog`` and ``Metrics`` (``WorkerPool``), so a tool call run in a
worker is in the same audit table, and its model calls in the same counters, as one run
in the main process.

An audit record travels as its row (``AuditRecord.as_row``), the one description of it
the table has already. Counters are sent only when the main process counts
(``GATEWAY_METRICS=on``): with metrics off, the worker's plugins count into nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from gateway.adk.workers.messages import Audited, CallSent, ModelCalled, TokensUsed
from gateway.audit.records import AuditRecord
from gateway.metrics import Metrics

__all__ = ["Relay"]


class Relay(Metrics):
    """The audit log and the metrics of a worker's plugins; see the module's docstring.

    ``counting``: whether the main process counts, so whether counters are sent at all.
    """

    def __init__(self, counting: bool) -> None:
        self.counting = counting
        self._send: Callable[[msgspec.Struct], None] | None = None

    def connect(self, send: Callable[[msgspec.Struct], None]) -> None:
        """Records go through ``send`` from now on (before, a worker runs nothing)."""
        self._send = send

    def _relay(self, message: msgspec.Struct) -> None:
        if self._send is not None:
            self._send(message)

    # --- as an AuditLog --------------------------------------------------------------------

    def record(self, record: AuditRecord) -> None:
        self._relay(Audited(list(record.as_row())))

    def note_sent(self, call_id: str) -> None:
        self._relay(CallSent(call_id))

    # --- as Metrics ----------------------------------------------------------------------

    def model_called(self, model: str, seconds: float, failed: bool) -> None:
        if self.counting:
            self._relay(ModelCalled(model, seconds, failed))

    def tokens_used(self, model: str, input_tokens: int | None, output_tokens: int | None) -> None:
        if self.counting:
            self._relay(TokensUsed(model, input_tokens, output_tokens))
