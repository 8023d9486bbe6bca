"""Reading and writing dataset rows (verl's schema) as jsonl or parquet."""
from __future__ import annotations

import json
import os
import tempfile
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

        table = pq.read_table(path)
        rows = table.to_pylist()
        for name in json.loads((table.schema.metadata or {}).get(JSON_COLUMNS_KEY, b"[]")):
            for row in rows:
                if row.get(name) is not None:
                    row[name] = json.loads(row[name])
        return rows
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


# Parquet schema metadata key listing the columns written as JSON text (see write_rows).
JSON_COLUMNS_KEY = b"rewardsmith.json_columns"


def write_rows(path: str | Path, rows: Iterable[dict[str, Any]]) -> list[str]:
    """Write rows to ``.jsonl`` or ``.parquet`` (chosen by suffix), creating parent folders.

    The rows are written to a temporary file in the same folder, then renamed
    into place: a failure half-way leaves any old file at ``path`` untouched. A
    row that cannot be serialized is a ``ValueError`` naming the row and field.
    A parquet column whose values parquet cannot hold in one type (a string in
    one row, a dict in another) is written as JSON text and listed in the file's
    metadata, so :func:`read_rows` gives the values back; the names of such
    columns are returned (always empty for jsonl).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = list(rows)
    suffix = path.suffix.lower()
    json_columns: list[str] = []
    # Serialize everything before touching the disk, so a bad row costs nothing.
    if suffix in PARQUET_SUFFIXES:
        table, json_columns = _arrow_table(path, rows)
    elif suffix in JSONL_SUFFIXES:
        text = "".join(_json_line(path, i, row) for i, row in enumerate(rows))
    else:
        raise ValueError(f"{path}: unsupported file type '{suffix}'; use .jsonl or .parquet")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        if suffix in PARQUET_SUFFIXES:
            import pyarrow.parquet as pq

            pq.write_table(table, tmp)
        else:
            Path(tmp).write_text(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 is not what a plain open() would give
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return json_columns


def _json_line(path: Path, i: int, row: dict[str, Any]) -> str:
    try:
        return json.dumps(row, default=_jsonable) + "\n"
    except (TypeError, ValueError):
        for key, value in row.items():  # json's error names no field: find it
            _json_value(path, i, f"field '{key}'", value)
        return _json_value(path, i, "the row", row) + "\n"


def _json_value(path: Path, i: int, what: str, value: Any) -> str:
    """``value`` as JSON text; a ``ValueError`` naming the row and ``what`` when it cannot be."""
    try:
        return json.dumps(value, default=_jsonable)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: row {i}: {what} cannot be written as JSON ({exc}); nothing was written") from None


def _arrow_table(path: Path, rows: list[dict[str, Any]]) -> tuple[Any, list[str]]:
    """The rows as an arrow table; columns arrow cannot type are JSON-encoded (their names returned)."""
    import pyarrow as pa

    names = list(dict.fromkeys(key for row in rows for key in row))
    columns, json_columns = {}, []
    for name in names:
        values = [row.get(name) for row in rows]
        try:
            columns[name] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            columns[name] = pa.array([None if value is None else _json_value(path, i, f"field '{name}'", value)
                                      for i, value in enumerate(values)], type=pa.string())
            json_columns.append(name)
    table = pa.table(columns)
    if json_columns:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               JSON_COLUMNS_KEY: json.dumps(json_columns).encode()})
    return table, json_columns


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    return repr(value)
