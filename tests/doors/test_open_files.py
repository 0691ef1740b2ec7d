"""The open-file limit the gateway asks for at start-up, decided with no system call: raised
to fit its caps where the hard limit allows, the connection cap lowered where it does not."""

from __future__ import annotations

import resource

import pytest

from gateway.config import Settings
from gateway.doors.open_files import FILES_BESIDES, Plan, plan

pytestmark = pytest.mark.unit

DEFAULTS = Settings()
# 4,096 connections, 200 runs and the rest.
NEEDED = DEFAULTS.max_connections + DEFAULTS.max_runs + FILES_BESIDES


def test_a_soft_limit_of_1024_is_raised_to_what_the_caps_need() -> None:
    assert Plan.needed(DEFAULTS) == NEEDED
    assert plan(DEFAULTS, 1024, 524_288) == Plan(NEEDED, DEFAULTS.max_connections)
    assert plan(DEFAULTS, 1024, resource.RLIM_INFINITY) == Plan(NEEDED, 4096)


def test_a_soft_limit_already_high_enough_is_left_alone() -> None:
    assert plan(DEFAULTS, NEEDED, NEEDED) == Plan(None, 4096)
    assert plan(DEFAULTS, 1 << 20, 1 << 20) == Plan(None, 4096)
    assert plan(DEFAULTS, resource.RLIM_INFINITY, resource.RLIM_INFINITY) == Plan(None, 4096)


def test_a_short_hard_limit_lowers_the_connection_cap_to_fit_under_it() -> None:
    # Raised to the hard limit, and room kept for the runs' connections and the rest.
    assert plan(DEFAULTS, 1024, 2048) == Plan(2048, 2048 - 200 - FILES_BESIDES)
    assert plan(DEFAULTS, 1024, 1024) == Plan(None, 1024 - 200 - FILES_BESIDES)
    # Never below one connection, however small the limit.
    assert plan(DEFAULTS, 16, 16) == Plan(None, 1)


def test_runs_without_a_cap_count_a_connection_each() -> None:
    uncapped = Settings(max_runs=0, max_connections=100)
    assert Plan.needed(uncapped) == 200 + FILES_BESIDES
