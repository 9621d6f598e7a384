"""Manifests as Arrow tables."""

from __future__ import annotations

import json
import os

import pyarrow as pa

from . import _framecull

#: The manifest's columns and their types (docs/MANIFEST.md).
MANIFEST_SCHEMA = pa.schema(
    [
        ("clip_id", pa.string()),
        ("path", pa.string()),
        ("file_fingerprint", pa.string()),
        ("size_bytes", pa.int64()),
        ("kind", pa.string()),
        ("start_secs", pa.float64()),
        ("end_secs", pa.float64()),
        ("start_frame", pa.int64()),
        ("end_frame", pa.int64()),
        ("start_pts", pa.int64()),
        ("end_pts", pa.int64()),
        ("time_base", pa.string()),
        ("fps", pa.float64()),
        ("width", pa.int64()),
        ("height", pa.int64()),
        ("rotation_deg", pa.int64()),
        ("stream_index", pa.int64()),
        ("color_matrix", pa.string()),
        ("analysis_level", pa.string()),
        ("label", pa.string()),
        ("tags", pa.list_(pa.string())),
        ("split", pa.string()),
        ("group_key", pa.string()),
        ("motion", pa.float64()),
        ("brightness", pa.float64()),
        ("sharpness", pa.float64()),
        ("flags", pa.list_(pa.string())),
        # The clip file of a version exported with --materialize (null otherwise).
        ("clip_file", pa.string()),
        ("clip_bytes", pa.int64()),
        ("clip_hash", pa.string()),
        ("clip_fingerprint", pa.string()),
        ("clip_frames", pa.int64()),
        ("clip_copied_frames", pa.int64()),
        ("clip_encoded_frames", pa.int64()),
        ("clip_note", pa.string()),
        ("frame_map", pa.string()),
        ("content_crop", pa.string()),
    ]
)


def _jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line]


def read_manifest(path: str | os.PathLike, version: int | None = None) -> pa.Table:
    """A manifest version's rows as a ``pyarrow.Table`` with :data:`MANIFEST_SCHEMA`.

    ``path`` is a manifest folder (its latest version, or ``version``) or a version's file.
    The version's metadata (``vNNNN.json``: name, version, dataset root, settings, rows hash)
    is in the schema metadata under ``b"framecull"``, and :func:`manifest_meta` reads it."""
    meta, rows = _framecull.manifest_rows(os.fspath(path), version)
    table = pa.Table.from_pylist(_jsonl(rows), schema=MANIFEST_SCHEMA)
    return table.replace_schema_metadata({"framecull": meta})


def manifest_meta(table: pa.Table) -> dict:
    """The version metadata :func:`read_manifest` put in a table's schema."""
    return json.loads(table.schema.metadata[b"framecull"])
