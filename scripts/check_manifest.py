#!/usr/bin/env python3
"""Open a framecull manifest with pyarrow, polars and pandas and check the documented schema
(docs/MANIFEST.md). usage: check_manifest.py PATH/vNNNN.parquet   (pip install pyarrow polars pandas)"""
import sys

import pandas as pd
import polars as pl
import pyarrow.parquet as pq

EXPECTED = {
    "clip_id": "string", "path": "string", "file_fingerprint": "string", "size_bytes": "int64",
    "kind": "string", "start_secs": "double", "end_secs": "double", "start_frame": "int64",
    "end_frame": "int64", "start_pts": "int64", "end_pts": "int64", "time_base": "string",
    "fps": "double", "width": "int64", "height": "int64", "rotation_deg": "int64",
    "stream_index": "int64", "color_matrix": "string", "analysis_level": "string",
    "label": "string", "tags": "list<string>", "split": "string", "group_key": "string",
    "motion": "double", "brightness": "double", "sharpness": "double", "flags": "list<string>",
    "clip_file": "string", "clip_bytes": "int64", "clip_hash": "string",
    "clip_fingerprint": "string", "clip_frames": "int64", "clip_copied_frames": "int64",
    "clip_encoded_frames": "int64", "clip_note": "string", "frame_map": "string",
    "content_crop": "string",
}

path = sys.argv[1]
table = pq.read_table(path)
names = [f.name for f in table.schema]
assert names == list(EXPECTED), f"columns {names}"
for field in table.schema:
    t = str(field.type).replace("large_", "").replace("string_view", "string")
    t = t.replace("list<item: string>", "list<string>").replace("list<element: string>", "list<string>")
    assert t == EXPECTED[field.name], f"{field.name}: {field.type}"
df = pl.read_parquet(path)
pdf = pd.read_parquet(path)
assert df.height == len(pdf) == table.num_rows
print(f"ok: {table.num_rows} rows, {len(names)} columns; pyarrow, polars and pandas agree")
