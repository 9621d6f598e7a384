//! Numbered schema migrations. `PRAGMA user_version` holds the number applied last.

/// Migration `i` brings the schema from version `i` to `i + 1`. Append only; never edit one
/// that has shipped.
pub const MIGRATIONS: &[&str] = &[
    // 1: items and scans.
    r#"
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    CREATE TABLE scans (
        id          INTEGER PRIMARY KEY,
        root        TEXT NOT NULL,
        started_at  INTEGER NOT NULL,
        finished_at INTEGER,
        state       TEXT NOT NULL,          -- running | finished | cancelled
        seen        INTEGER NOT NULL DEFAULT 0,
        probed      INTEGER NOT NULL DEFAULT 0,
        unchanged   INTEGER NOT NULL DEFAULT 0,
        missing     INTEGER NOT NULL DEFAULT 0,
        problems    INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE items (
        id               INTEGER PRIMARY KEY,
        path             TEXT NOT NULL UNIQUE,  -- relative to the dataset root, '/'-separated
        kind             TEXT NOT NULL,         -- image | video | other
        status           TEXT NOT NULL,         -- ok | error | unsupported | missing
        error            TEXT,
        size_bytes       INTEGER NOT NULL,
        mtime_ns         INTEGER NOT NULL,
        fingerprint      TEXT,
        container        TEXT,
        codec            TEXT,
        profile          TEXT,
        pix_fmt          TEXT,
        width            INTEGER,
        height           INTEGER,
        rotation_deg     INTEGER,
        sar              TEXT,
        fps              REAL,
        fps_base         REAL,
        time_base        TEXT,
        start_secs       REAL,
        duration_secs    REAL,
        frame_count      INTEGER,
        bit_rate         INTEGER,
        has_audio        INTEGER,
        exif_orientation INTEGER,
        probed_at        INTEGER NOT NULL,
        scan_id          INTEGER REFERENCES scans(id)
    );
    CREATE INDEX items_status ON items(status);
    CREATE INDEX items_fingerprint ON items(fingerprint);
    "#,
];
