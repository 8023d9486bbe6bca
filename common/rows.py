"""Reading and writing dataset rows (verl's schema) as jsonl or parquet."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

JSONL_SUFFIXES = (".jsonl", ".json")
PARQUET_SUFFIXES = (".parquet",)


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """All rows of a ``.jsonl`` or ``.parquet`` file, as dicts.

    A malformed jsonl line is an error naming the file and line number.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"dataset file not found: {path}")
    suffix = path.suffix.lower()
    if suffix in PARQUET_SUFFIXES:
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    if suffix in JSONL_SUFFIXES:
        rows = []
        with path.open() as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{lineno}: not valid JSON: {exc}") from None
                if not isinstance(row, dict):
                    raise ValueError(f"{path}:{lineno}: expected a JSON object per line, got {type(row).__name__}")
                rows.append(row)
        return rows
    raise ValueError(f"{path}: unsupported file type '{suffix}'; use .jsonl or .parquet")


def write_rows(path: str | Path, rows: Iterable[dict[str, Any]]) -> None:
    """Write rows to ``.jsonl`` or ``.parquet`` (chosen by suffix), creating parent folders."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = list(rows)
    suffix = path.suffix.lower()
    if suffix in PARQUET_SUFFIXES:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    elif suffix in JSONL_SUFFIXES:
        with path.open("w") as f:
            for row in rows:
                f.write(json.dumps(row, default=_jsonable) + "\n")
    else:
        raise ValueError(f"{path}: unsupported file type '{suffix}'; use .jsonl or .parquet")


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    return repr(value)
