//! Scans of a bucket (triage, deep, in shards, the corpus) give the local folder's rows.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{
    assert_only_listed, comparable_rows, differences, local_deep_rows, local_rows, requests_of,
    scan,
};
use crate::common;
use crate::common::s3::{Server, moto_server};

/// `rows` with the FFmpeg message that details a decode error left out of flag reasons: in a
/// bucket, the packets of an MP4 are read by its index, their bytes fetched only where they
/// are decoded, so FFmpeg's parser, which on a local file logs the first fault it meets in a
/// damaged packet, has no bytes to parse (the counts and codes stay, and are compared).
fn without_error_details(mut rows: BTreeMap<String, Value>) -> BTreeMap<String, Value> {
    for row in rows.values_mut() {
        let Some(flags) = row["flags"].as_array_mut() else {
            continue;
        };
        for flag in flags {
            if let Some(reason) = flag["reason"].as_str()
                && let Some(at) = reason.find("; first: ")
            {
                flag["reason"] = Value::String(reason[..at].to_string());
            }
        }
    }
    rows
}

/// A triage of an MP4 in a bucket fetches its index and the packets it decodes, not the
/// file: at most 30% of the bytes of a 720p video with sound (its index first or last), with
/// the rows a triage of the local folder gives.
#[test]
fn a_triage_of_an_mp4_in_a_bucket_fetches_its_index_and_the_packets_it_decodes() {
    let Some(moto) = moto_server() else { return };
    let server = Server::start(&moto, None);
    for (name, index_first) in [("index_first", true), ("index_last", false)] {
        let data = tempfile::tempdir().unwrap();
        let path = data.path().join("720p.mp4");
        let mut args = vec![
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=1280x720:rate=25:duration=16",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=440:duration=16",
            "-vf",
            "noise=alls=5:allf=t",
            "-c:v",
            "libx264",
            "-preset",
            "veryfast",
            "-g",
            "50",
            "-c:a",
            "aac",
        ];
        if index_first {
            args.extend(["-movflags", "+faststart"]);
        }
        args.push(path.to_str().unwrap());
        common::ffmpeg(&args);
        let size = std::fs::metadata(&path).unwrap().len();
        server.upload(data.path(), "datasets", name, false);
        let project = tempfile::tempdir().unwrap();
        let url = format!("s3://datasets/{name}");
        let out = scan(&server, &url, project.path(), &["--triage", "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
        let requests = requests_of(&out);
        let read = requests["bytes_read"].as_u64().unwrap();
        eprintln!(
            "{name}: {read} of {size} bytes ({:.1}%) in {} requests",
            100.0 * read as f64 / size as f64,
            requests["get"]
        );
        assert!(read * 10 <= size * 3, "{name}: {read} of {size} bytes read");
        let remote = comparable_rows(project.path());
        let local = local_rows(data.path(), "--triage", &[0]);
        assert_eq!(differences(&local, &remote), Vec::<String>::new());
        assert_eq!(remote["720p.mp4"]["analysis_level"], "triage");
        assert!(remote["720p.mp4"]["motion_mean"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn generated_media_in_a_bucket_scan_like_the_local_folder_and_rescans_only_list() {
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    let server = Server::start(&moto, None);
    server.upload(data.path(), "datasets", "mixed", false);

    let project = tempfile::tempdir().unwrap();
    let out = scan(&server, "s3://datasets/mixed", project.path(), &["--deep"]);
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    let stderr = common::stderr(&out);
    assert!(
        stderr.contains("s3://datasets/mixed: ") && stderr.contains("MiB read"),
        "{stderr}"
    );
    assert!(!stderr.contains("test-secret"), "{stderr}");
    let remote = comparable_rows(project.path());
    let local = local_deep_rows(data.path());
    assert_eq!(differences(&local, &remote), Vec::<String>::new());
    // Paths are keys relative to the root; the root URL is what the project records.
    assert!(remote.contains_key("clips/h264.mp4"));
    let catalog = std::fs::read(project.path().join("catalog.db")).unwrap();
    let text = String::from_utf8_lossy(&catalog);
    assert!(text.contains("s3://datasets/mixed"));
    assert!(!text.contains("test-secret"));

    let out = scan(&server, "s3://datasets/mixed", project.path(), &["--json"]);
    assert_only_listed(&out);

    // The same URL in two shards (as a cluster's tasks scan it), merged: the same rows.
    let work = tempfile::tempdir().unwrap();
    let shards: Vec<PathBuf> = (0..2)
        .map(|i| work.path().join(format!("shard-{i}")))
        .collect();
    for (i, shard) in shards.iter().enumerate() {
        let out = scan(
            &server,
            "s3://datasets/mixed",
            shard,
            &["--deep", "--shard", &format!("{i}/2")],
        );
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{}",
            common::stderr(&out)
        );
    }
    let merged = work.path().join("merged");
    let out = common::bin()
        .arg("merge")
        .args(&shards)
        .arg("--project")
        .arg(&merged)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        common::stderr(&out)
    );
    let sharded = comparable_rows(&merged);
    assert!(comparable_rows(&shards[0]).len() < sharded.len());
    assert_eq!(differences(&remote, &sharded), Vec::<String>::new());
}

/// A triage of a bucket gives the rows a triage of the local folder gives, damaged videos
/// (an MP4 cut short, bits flipped in a keyframe) flagged alike.
#[test]
fn a_triage_of_a_bucket_gives_the_rows_of_the_local_folder() {
    use framecull::media::synth::damage::{self, Damage};
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    let mut spec = framecull::media::synth::VideoSpec::new("libx264", 320, 180, 25, 250);
    spec.faststart = true;
    spec.noise = 8;
    spec.gop = 50;
    let base = common::video(data.path(), "damaged/base.mp4", &spec);
    let gops = damage::gops(&base).unwrap().len();
    let keys = data.path().join("damaged/keyframe_flips.mp4");
    damage::write_damaged(&base, &keys, Damage::KeyFlips, &damage::pick(gops, 1, 1)).unwrap();
    let cut = data.path().join("damaged/cut.mp4");
    damage::write_damaged(&base, &cut, Damage::Truncated, &[gops / 2]).unwrap();
    let server = Server::start(&moto, None);
    server.upload(data.path(), "datasets", "mixed", false);

    let project = tempfile::tempdir().unwrap();
    let out = scan(
        &server,
        "s3://datasets/mixed",
        project.path(),
        &["--triage"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    let remote = without_error_details(comparable_rows(project.path()));
    let local = without_error_details(local_rows(data.path(), "--triage", &[1]));
    assert_eq!(differences(&local, &remote), Vec::<String>::new());
    assert_eq!(remote["damaged/base.mp4"]["analysis_level"], "triage");
    let codes = |path: &str| common::flag_codes(&remote[path]);
    assert!(
        codes("damaged/keyframe_flips.mp4").contains(&"decode_errors".to_string()),
        "{:?}",
        codes("damaged/keyframe_flips.mp4")
    );
    assert!(codes("damaged/cut.mp4").contains(&"truncated".to_string()));
    assert!(!codes("damaged/base.mp4").contains(&"decode_errors".to_string()));
}

#[test]
fn corpus_in_a_bucket_deep_scans_like_the_local_folder() {
    let Some(media) = common::corpus_dir() else {
        return;
    };
    let Some(moto) = moto_server() else { return };
    // FFmpeg picks its demuxer by the file name for a path (`image2` for .jpg) and by content
    // for a stream: this damaged JPEG reads as a picture only through the stream (and then
    // moves the image statistics). The corpus without it, as links, is scanned both ways.
    let known = Path::new("broken/fate_embedded_small.jpg");
    let linked = tempfile::tempdir().unwrap();
    for entry in walkdir::WalkDir::new(&media).min_depth(1) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(&media).unwrap();
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(linked.path().join(rel)).unwrap();
        } else if rel != known {
            std::os::unix::fs::symlink(entry.path(), linked.path().join(rel)).unwrap();
        }
    }
    let server = Server::start(&moto, None);
    server.upload(linked.path(), "corpus", "media", false);
    let project = tempfile::tempdir().unwrap();
    let out = scan(
        &server,
        "s3://corpus/media",
        project.path(),
        &["--deep", "--json"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    eprintln!("deep scan of the corpus: {}", requests_of(&out));
    let remote = comparable_rows(project.path());
    let local = local_deep_rows(linked.path());
    assert_eq!(differences(&local, &remote), Vec::<String>::new());

    let out = scan(&server, "s3://corpus/media", project.path(), &["--json"]);
    let requests = requests_of(&out);
    assert_eq!(requests["get"], 0, "{requests}");
    assert_eq!(requests["head"], 0, "{requests}");
}

/// Interlaced and letterboxed videos read from a bucket, one of them an MPEG-2 elementary
/// stream (no container, no timestamps) under a name with a space: the deep pass finds the
/// same field order, content crop and flags as in a folder.
#[test]
fn interlacing_and_bars_are_found_in_a_bucket_as_in_a_folder() {
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    let pal = "testsrc2=size=720x576:rate=50,tinterlace=mode=interleave_top,setfield=tff";
    let mpeg2 = [
        "-c:v",
        "mpeg2video",
        "-flags",
        "+ildct+ilme",
        "-top",
        "1",
        "-b:v",
        "8M",
    ];
    for (name, graph, format) in [
        ("interlaced.mpg", pal, "mpeg"),
        ("interlaced es.m2v", pal, "mpeg2video"),
        (
            "letterbox.mpg",
            "testsrc2=size=640x360:rate=25,pad=640:480:0:60:black",
            "mpeg",
        ),
    ] {
        let out = data.path().join(name);
        let mut args = vec!["-f", "lavfi", "-i", graph, "-t", "2"];
        args.extend(mpeg2);
        args.extend(["-pix_fmt", "yuv420p", "-f", format, out.to_str().unwrap()]);
        common::ffmpeg(&args);
    }
    let server = Server::start(&moto, None);
    server.upload(data.path(), "datasets", "fields", false);
    let project = tempfile::tempdir().unwrap();
    let out = scan(&server, "s3://datasets/fields", project.path(), &["--deep"]);
    assert!(out.status.code().unwrap() <= 1, "{}", common::stderr(&out));
    let remote = comparable_rows(project.path());
    let local = local_deep_rows(data.path());
    assert_eq!(differences(&local, &remote), Vec::<String>::new());
    for name in ["interlaced.mpg", "interlaced es.m2v"] {
        assert_eq!(remote[name]["field_order"], "tff", "{name}");
        assert!(common::flag_codes(&remote[name]).contains(&"interlaced".into()));
    }
    assert_eq!(remote["letterbox.mpg"]["field_order"], "progressive");
    assert!(common::flag_codes(&remote["letterbox.mpg"]).contains(&"letterbox".into()));
    assert!(!remote["letterbox.mpg"]["content_crop"].is_null());
}
