"""Writes the JSON Schemas generated from gateway/wire/__init__.py into gateway/schemas/.

Run after changing a wire type; tests/wire/test_protocol.py fails while the files are stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gateway.wire import json_schemas  # noqa: E402

OUT = ROOT / "gateway" / "schemas"


def rendered() -> dict[str, str]:
    return {
        name: json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
        for name, schema in json_schemas().items()
    }


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in rendered().items():
        (OUT / name).write_text(text, encoding="utf-8")
        print(f"wrote {OUT / name}")


if __name__ == "__main__":
    main()
