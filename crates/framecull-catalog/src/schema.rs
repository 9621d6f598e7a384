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
        probe_version    INTEGER NOT NULL,      -- re-probed when framecull reads files differently
        scan_id          INTEGER REFERENCES scans(id)
    );
    CREATE INDEX items_status ON items(status);
    CREATE INDEX items_fingerprint ON items(fingerprint);
    "#,
    // 2: deep analysis: metrics, curves, duplicate groups, flags.
    r#"
    CREATE TABLE metrics (
        item_id          INTEGER PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
        analysed_at      INTEGER NOT NULL,
        analysis_version INTEGER NOT NULL,
        item_size        INTEGER NOT NULL,   -- the item's size and mtime when analysed
        item_mtime_ns    INTEGER NOT NULL,
        decoded_frames   INTEGER NOT NULL,
        decode_errors    INTEGER NOT NULL,
        first_error      TEXT,
        decoder_messages INTEGER NOT NULL,
        first_message    TEXT,
        repeat_frames    INTEGER NOT NULL,
        undecodable      TEXT,
        no_decoder       TEXT,
        timed_out        INTEGER NOT NULL,
        motion_mean      REAL,
        motion_p95       REAL,
        static_share     REAL,
        brightness       REAL,
        brightness_p5    REAL,
        brightness_p95   REAL,
        sharpness        REAL,
        entropy          REAL,
        colorfulness     REAL,
        black_share      REAL,
        frozen_share     REAL,
        decoded_duration_secs REAL,
        pts_backwards    INTEGER NOT NULL,
        pts_repeats      INTEGER NOT NULL,
        vfr              INTEGER,
        interval_cv      REAL,
        resolution_changes INTEGER NOT NULL,
        truncated        INTEGER NOT NULL,
        structure_error  TEXT,
        phash            INTEGER,
        content_hash     TEXT
    );
    CREATE INDEX metrics_content_hash ON metrics(content_hash);
    CREATE TABLE curves (
        item_id      INTEGER PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
        motion       BLOB,   -- f32 little-endian per 0.5 s bucket
        cuts         TEXT,   -- JSON [{frame, time_secs}]
        frame_hashes BLOB    -- u64 little-endian: videos one per second; images the 8 flips/rotations
    );
    CREATE TABLE dups (
        item_id     INTEGER PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
        dup_group   INTEGER NOT NULL,
        relation    TEXT NOT NULL,        -- exact | near
        like_item   INTEGER NOT NULL,
        exact_group INTEGER
    );
    CREATE TABLE flags (
        id       INTEGER PRIMARY KEY,
        item_id  INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
        code     TEXT NOT NULL,
        severity TEXT NOT NULL,           -- error | warning | info
        reason   TEXT NOT NULL,
        source   TEXT NOT NULL            -- probe | decode | rule | statistics | duplicates
    );
    CREATE INDEX flags_item ON flags(item_id);
    CREATE INDEX flags_code ON flags(code);
    "#,
    // 3: review decisions, clips and exported manifests.
    r#"
    CREATE TABLE reviews (
        item_id    INTEGER PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
        decision   TEXT NOT NULL DEFAULT 'unreviewed',   -- unreviewed | accepted | rejected
        tags       TEXT NOT NULL DEFAULT '[]',           -- JSON array of strings
        note       TEXT,
        updated_at INTEGER NOT NULL
    );
    CREATE TABLE clips (
        id          INTEGER PRIMARY KEY,
        item_id     INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
        start_pts   INTEGER NOT NULL,      -- stream timestamps in time_base units, [start, end)
        end_pts     INTEGER NOT NULL,
        time_base   TEXT NOT NULL,
        start_secs  REAL NOT NULL,
        end_secs    REAL NOT NULL,
        start_frame INTEGER,
        end_frame   INTEGER,
        label       TEXT,
        origin      TEXT NOT NULL DEFAULT 'manual',   -- manual | cuts | auto
        decision    TEXT NOT NULL DEFAULT 'unreviewed',
        created_at  INTEGER NOT NULL
    );
    CREATE INDEX clips_item ON clips(item_id);
    CREATE TABLE ops (                          -- the operations journal: audit, undo, redo
        id     INTEGER PRIMARY KEY,
        at     INTEGER NOT NULL,
        edits  TEXT NOT NULL,                   -- JSON list of edits (before and after)
        state  TEXT NOT NULL                    -- done | undone
    );
    CREATE TABLE manifests (
        name                TEXT NOT NULL,
        version             INTEGER NOT NULL,
        parent              INTEGER,
        created_at          INTEGER NOT NULL,
        rows                INTEGER NOT NULL,
        rows_hash           TEXT NOT NULL,
        catalog_fingerprint TEXT NOT NULL,
        PRIMARY KEY (name, version)
    );
    "#,
    // 4: where in a video the decode errors are (the timeline's markers).
    r#"
    ALTER TABLE curves ADD COLUMN errors TEXT;  -- JSON [seconds from the first frame]
    "#,
    // 5: the frame table of the deep pass: per frame pts, content hash, clean keyframe and
    // damage flags (model::FrameTable::to_bytes), the ground truth of the loader's seeks.
    r#"
    ALTER TABLE curves ADD COLUMN frames BLOB;
    "#,
    // 6: the regular files of the last finished walk that are not media, and their count.
    r#"
    CREATE TABLE other_files (
        path       TEXT PRIMARY KEY,          -- relative to the dataset root, '/'-separated
        size_bytes INTEGER NOT NULL,
        reason     TEXT NOT NULL
    );
    ALTER TABLE scans ADD COLUMN other INTEGER NOT NULL DEFAULT 0;
    "#,
    // 7: merged shards (`framecull merge`): each shard's identity and content stamp, and the
    // shard each merged row came from (NULL: not from a shard).
    r#"
    CREATE TABLE merged_shards (
        shard_index INTEGER PRIMARY KEY,
        shard_count INTEGER NOT NULL,
        deep        INTEGER NOT NULL,
        source_dir  TEXT NOT NULL,
        stamp       TEXT NOT NULL,          -- changes whenever the shard's content does
        items       INTEGER NOT NULL,
        finished_at INTEGER NOT NULL,       -- the shard's scan
        merged_at   INTEGER NOT NULL
    );
    ALTER TABLE items ADD COLUMN shard_index INTEGER;
    ALTER TABLE clips ADD COLUMN shard_index INTEGER;
    ALTER TABLE other_files ADD COLUMN shard_index INTEGER;
    CREATE INDEX items_shard ON items(shard_index);
    "#,
    // 8: entries of the walk that are not regular files (broken links, FIFOs, devices) are
    // listed with the files that are not media, told apart by their status.
    r#"
    ALTER TABLE other_files ADD COLUMN status TEXT NOT NULL DEFAULT 'not_media';  -- not_media | not_a_file
    "#,
    // 9: the video stream read (its index among the file's streams), the one analysed, and
    // the colour matrix the stream declares (FFmpeg's name; NULL: none declared, or probed
    // before this).
    r#"
    ALTER TABLE items ADD COLUMN stream_index INTEGER;
    ALTER TABLE items ADD COLUMN color_space TEXT;
    ALTER TABLE metrics ADD COLUMN item_stream INTEGER;  -- the stream analysed (NULL: before 9)
    "#,
    // 10: the level of each analysis: a triage (a video's packets read, a few GOPs decoded) or
    // the deep pass (every frame decoded). Rows before it are deep.
    r#"
    ALTER TABLE metrics ADD COLUMN analysis_level TEXT NOT NULL DEFAULT 'deep';  -- triage | deep
    ALTER TABLE metrics ADD COLUMN suspect TEXT;  -- a triage's doubt without proof
    "#,
    // 11: the analysis level a merged shard ran (`deep` alone said whether it was deep).
    r#"
    ALTER TABLE merged_shards ADD COLUMN analysis_level TEXT NOT NULL DEFAULT 'none';
    UPDATE merged_shards SET analysis_level = 'deep' WHERE deep;
    "#,
    // 12: frames an edit list discards (counted by the header, shown never).
    r#"
    ALTER TABLE metrics ADD COLUMN discarded_frames INTEGER NOT NULL DEFAULT 0;
    "#,
    // 13: a file's label (its class; clips without a label of their own take it).
    r#"
    ALTER TABLE reviews ADD COLUMN label TEXT;
    "#,
    // 14: a video's picture without its letterbox or pillarbox bars (`w:h:x:y` of the coded
    // picture; NULL: no bars, or analysed before this).
    r#"
    ALTER TABLE metrics ADD COLUMN content_crop TEXT;
    "#,
    // 15: interlacing: the field order measured and the one the frames declare (NULL: not
    // told, or analysed before this), and the frames tested and what each showed.
    r#"
    ALTER TABLE metrics ADD COLUMN field_order TEXT;
    ALTER TABLE metrics ADD COLUMN declared_field_order TEXT;
    ALTER TABLE metrics ADD COLUMN fields_tested INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE metrics ADD COLUMN tff_frames INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE metrics ADD COLUMN bff_frames INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE metrics ADD COLUMN progressive_frames INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE metrics ADD COLUMN repeated_fields INTEGER NOT NULL DEFAULT 0;
    "#,
];
