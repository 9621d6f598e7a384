"""A project's catalog, read-only, as Arrow tables."""

from __future__ import annotations

import json
import os

import pyarrow as pa

from . import _framecull
from .manifest import _jsonl

_FLAG = pa.struct(
    [("code", pa.string()), ("severity", pa.string()), ("reason", pa.string()), ("source", pa.string())]
)

#: The fields of ``framecull list --format jsonl`` (docs/CLI.md), one row per file.
ITEMS_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("kind", pa.string()),
        ("status", pa.string()),
        ("error", pa.string()),
        ("container", pa.string()),
        ("codec", pa.string()),
        ("profile", pa.string()),
        ("pix_fmt", pa.string()),
        ("stream_index", pa.int64()),
        ("color_space", pa.string()),
        ("width", pa.int64()),
        ("height", pa.int64()),
        ("rotation_deg", pa.int64()),
        ("sample_aspect_ratio", pa.string()),
        ("fps", pa.float64()),
        ("fps_base", pa.float64()),
        ("time_base", pa.string()),
        ("duration_secs", pa.float64()),
        ("start_secs", pa.float64()),
        ("frame_count", pa.int64()),
        ("bit_rate", pa.int64()),
        ("size_bytes", pa.int64()),
        ("has_audio", pa.bool_()),
        ("exif_orientation", pa.int64()),
        ("fingerprint", pa.string()),
        ("motion_mean", pa.float64()),
        ("motion_p95", pa.float64()),
        ("cuts_secs", pa.list_(pa.float64())),
        ("decode_errors", pa.int64()),
        ("decoded_frames", pa.int64()),
        ("analysis_level", pa.string()),
        ("estimated", pa.list_(pa.string())),
        ("brightness", pa.float64()),
        ("sharpness", pa.float64()),
        ("phash", pa.string()),
        ("content_crop", pa.string()),
        ("field_order", pa.string()),
        ("dup_group", pa.int64()),
        ("dup_exact_group", pa.int64()),
        ("flags", pa.list_(_FLAG)),
        ("decision", pa.string()),
        ("tags", pa.list_(pa.string())),
        ("note", pa.string()),
        ("label", pa.string()),
        ("clip_labels", pa.list_(pa.string())),
    ]
)

CLIPS_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("id", pa.int64()),
        ("item_id", pa.int64()),
        ("start_pts", pa.int64()),
        ("end_pts", pa.int64()),
        ("time_base", pa.string()),
        ("start_secs", pa.float64()),
        ("end_secs", pa.float64()),
        ("start_frame", pa.int64()),
        ("end_frame", pa.int64()),
        ("label", pa.string()),
        ("origin", pa.string()),
        ("decision", pa.string()),
    ]
)

REVIEWS_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("decision", pa.string()),
        ("tags", pa.list_(pa.string())),
        ("note", pa.string()),
        ("label", pa.string()),
    ]
)

FLAGS_SCHEMA = pa.schema(
    [("path", pa.string())] + [(f.name, f.type) for f in _FLAG]
)


class Catalog:
    """The catalog of a project: ``project`` is a dataset folder, its ``.framecull`` project
    folder, or any folder inside the dataset. Each call reads the catalog as it is now."""

    def __init__(self, project: str | os.PathLike) -> None:
        self.project = _framecull.catalog_locate(os.fspath(project))

    def items(self, where: str | None = None, all: bool = False) -> pa.Table:
        """One row per media file with the fields of ``framecull list`` (:data:`ITEMS_SCHEMA`),
        optionally only those matching a filter in the window's ``--where`` form, e.g.
        ``"motion_mean>2 and flag:frozen"``. ``all``: also the files that are not media (kind
        ``other``, status ``not_media``, the reason in ``error``), as ``list --all``."""
        rows = _jsonl(_framecull.catalog_items(self.project, where, all))
        return pa.Table.from_pylist(rows, schema=ITEMS_SCHEMA)

    def to_polars(self, where: str | None = None):
        """:meth:`items` as a ``polars.DataFrame`` (needs polars)."""
        import polars as pl

        return pl.from_arrow(self.items(where))

    def flags(self) -> pa.Table:
        """One row per flag raised on a file: path, code, severity, reason, source."""
        out = []
        for row in _jsonl(_framecull.catalog_items(self.project, None, False)):
            for flag in row["flags"]:
                out.append({"path": row["path"], **flag})
        return pa.Table.from_pylist(out, schema=FLAGS_SCHEMA)

    def clips(self) -> pa.Table:
        """Every clip marked in the project (by a person or proposed and kept)."""
        rows = _jsonl(_framecull.catalog_clips(self.project))
        for row in rows:
            tb = row["time_base"]
            row["time_base"] = f"{tb['num']}/{tb['den']}"
        return pa.Table.from_pylist(rows, schema=CLIPS_SCHEMA)

    def decisions(self) -> pa.Table:
        """Every file's review: decision, tags, note, label."""
        return pa.Table.from_pylist(_jsonl(_framecull.catalog_reviews(self.project)), schema=REVIEWS_SCHEMA)

    def manifests(self) -> dict[str, list[dict]]:
        """Each manifest's versions, oldest first, with their metadata."""
        return json.loads(_framecull.catalog_manifests(self.project))

    def manifest_path(self, name: str) -> str:
        """The folder of the manifest ``name`` (what :class:`framecull.Loader` takes)."""
        return os.path.join(self.project, "manifests", name)

    def diff(self, name: str, a: int, b: int) -> dict:
        """What changed from version ``a`` to ``b`` of manifest ``name``: ``added``,
        ``removed``, ``changed`` and ``moved`` (split changes) clips, as
        ``framecull diff --json`` reports them."""
        return json.loads(_framecull.manifest_diff(self.project, name, a, b))

    def __repr__(self) -> str:
        return f"Catalog({self.project!r})"
