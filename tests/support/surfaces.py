"""A2UI as the demo uses it: ``CARD``, the surface of work request R-1042, and ``renders``,
the context entry with which a client says which catalogs it renders (``BASIC``: the basic
catalog alone)."""

from __future__ import annotations

import json
from typing import Any

from gateway import a2ui
from gateway.a2ui.catalogs import CAPABILITIES

CARD = "work-request-R-1042"


def renders(*catalogs: dict[str, Any], ids: tuple[str, ...] = (a2ui.BASIC_CATALOG_ID,)) -> Any:
    value = {"supportedCatalogIds": list(ids), "inlineCatalogs": list(catalogs)}
    return [{"description": CAPABILITIES, "value": json.dumps(value)}]


BASIC = renders()
