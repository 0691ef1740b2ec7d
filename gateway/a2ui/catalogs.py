"""What a client says it can render: A2UI's ``a2uiClientCapabilities``, a context entry.

The entry's ``value`` is the capabilities object as JSON text: ``supportedCatalogIds`` and,
optionally, ``inlineCatalogs`` (whole catalog definitions, each with its ``components``).
A2UI v0.9's own schema nests that object under ``"v0.9"``; both forms are read. The gateway
knows the components of the basic catalog, under either id A2UI has published it, and of
every inline catalog; of another supported catalog it knows only the id, so which components
it has is the client's word (a renderer shows one it lacks as an error, never as nothing).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import msgspec

from gateway import wire as p
from gateway.a2ui import BASIC_CATALOG_ID
from gateway.wire import bounds

__all__ = [
    "BASIC_CATALOG_IDS",
    "BASIC_COMPONENTS",
    "CAPABILITIES",
    "ClientCatalogs",
    "client_catalogs",
]

# The context entry's description.
CAPABILITIES = "a2uiClientCapabilities"
# A2UI moved the basic catalog within its v0.9 specification; both ids name the same one.
BASIC_CATALOG_IDS = frozenset(
    {BASIC_CATALOG_ID, "https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json"}
)
BASIC_COMPONENTS = frozenset(
    {
        "Text", "Image", "Icon", "Video", "AudioPlayer", "Row", "Column", "List", "Card",
        "Tabs", "Modal", "Divider", "Button", "TextField", "CheckBox", "ChoicePicker",
        "Slider", "DateTimeInput",
    }
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class ClientCatalogs:
    """The catalogs a client renders, by id: the names of their components, or None for a
    catalog the gateway knows only by its id."""

    catalogs: dict[str, frozenset[str] | None]

    def supports(self, catalog_id: str) -> bool:
        return catalog_id in self.catalogs

    def components(self, catalog_id: str) -> frozenset[str] | None:
        return self.catalogs.get(catalog_id)


class _InlineCatalog(msgspec.Struct, rename="camel"):
    catalog_id: str
    components: dict[str, Any] = msgspec.field(default_factory=dict)


class _Capabilities(msgspec.Struct, rename="camel"):
    supported_catalog_ids: list[str] = msgspec.field(default_factory=list)
    inline_catalogs: list[_InlineCatalog] = msgspec.field(default_factory=list)


def client_catalogs(context: Iterable[p.Context]) -> ClientCatalogs | None:
    """The catalogs an input's context advertises; None when it has no such entry.

    An entry that cannot be read is a VALIDATION_ERROR saying what it must hold.
    """
    entry = next((e for e in context if e.description == CAPABILITIES), None)
    if entry is None:
        return None
    try:
        value = bounds.parse_json(entry.value)
        if isinstance(value, dict) and isinstance(value.get("v0.9"), dict):
            value = value["v0.9"]
        capabilities = msgspec.convert(value, _Capabilities)
    except (ValueError, bounds.OutOfBounds) as bad:
        problem = bad.at("$") if isinstance(bad, bounds.OutOfBounds) else str(bad)
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            f"context {CAPABILITIES!r}: {problem}. Its value is JSON text of A2UI's client"
            ' capabilities: {"supportedCatalogIds": [...], "inlineCatalogs"?: [...]}.',
        ) from None
    catalogs: dict[str, frozenset[str] | None] = {}
    for catalog_id in capabilities.supported_catalog_ids:
        if catalog_id in BASIC_CATALOG_IDS:
            catalogs.update(dict.fromkeys(BASIC_CATALOG_IDS, BASIC_COMPONENTS))
        else:
            catalogs.setdefault(catalog_id, None)
    for inline in capabilities.inline_catalogs:
        catalogs[inline.catalog_id] = frozenset(inline.components)
    return ClientCatalogs(catalogs)
