"""What the worker pool raises to its callers: a run's worker died, a run's invocation
failed in its worker, or the workers ``GATEWAY_WORKERS=N`` asks for could not start."""

from __future__ import annotations

from gateway import wire as p

__all__ = ["RemoteFailure", "WorkerLost", "WorkersNotStarted"]


class WorkerLost(p.GatewayError):
    """The worker running the run died mid-run."""

    def __init__(self) -> None:
        super().__init__(
            p.ErrorCode.RUN_INTERRUPTED,
            "The process running this turn stopped before it finished; send it again.",
        )


class WorkersNotStarted(RuntimeError):
    """``GATEWAY_WORKERS=N``'s workers could not all start: the gateway does not either."""

    def __init__(self, why: str) -> None:
        super().__init__(
            f"{why}; the lines it logged above say why (an agent that imports in this process"
            " but not in a new one; a script that starts the gateway outside"
            ' `if __name__ == "__main__":`). GATEWAY_WORKERS=0 serves in one process.'
        )


class RemoteFailure(Exception):
    """The run's invocation raised in its worker (the model or a tool failed)."""
