//! Recognise media files by their first bytes, not by their names.

/// Bytes needed by [`sniff`].
pub const SNIFF_LEN: usize = 192;

/// What the first bytes of a file say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniffed {
    /// The file has no bytes.
    Empty,
    /// A still-image format with a known signature.
    Image(ImageFormat),
    /// A container or elementary stream signature FFmpeg reads as video.
    Video,
    /// No signature we know.
    Unknown,
}

/// Image formats framecull reads headers of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Jpeg,
    Png,
    Gif,
    Webp,
    Tiff,
    Bmp,
    Heif,
    Avif,
    Ico,
    Qoi,
    Psd,
    Exr,
    Jxl,
    Hdr,
    Dds,
    Sgi,
    Tga,
}

impl ImageFormat {
    pub fn name(self) -> &'static str {
        match self {
            ImageFormat::Jpeg => "jpeg",
            ImageFormat::Png => "png",
            ImageFormat::Gif => "gif",
            ImageFormat::Webp => "webp",
            ImageFormat::Tiff => "tiff",
            ImageFormat::Bmp => "bmp",
            ImageFormat::Heif => "heif",
            ImageFormat::Avif => "avif",
            ImageFormat::Ico => "ico",
            ImageFormat::Qoi => "qoi",
            ImageFormat::Psd => "psd",
            ImageFormat::Exr => "exr",
            ImageFormat::Jxl => "jxl",
            ImageFormat::Hdr => "hdr",
            ImageFormat::Dds => "dds",
            ImageFormat::Sgi => "sgi",
            ImageFormat::Tga => "tga",
        }
    }
}

/// Extensions of image files; a file with one of these is always catalogued.
pub const IMAGE_EXTENSIONS: &[&str] = &[
    "jpg", "jpeg", "jpe", "jfif", "png", "apng", "gif", "webp", "tif", "tiff", "bmp", "dib",
    "heic", "heif", "hif", "avif", "ico", "qoi", "psd", "exr", "jxl", "hdr", "dds", "sgi", "rgb",
    "tga", "mpo", "pbm", "pgm", "ppm", "pnm",
];

/// Extensions of video files; a file with one of these is always catalogued.
pub const VIDEO_EXTENSIONS: &[&str] = &[
    "mp4", "m4v", "mov", "qt", "mkv", "webm", "avi", "wmv", "asf", "flv", "f4v", "mpg", "mpeg",
    "m2v", "m1v", "vob", "ts", "m2ts", "mts", "3gp", "3g2", "ogv", "ogg", "ogm", "ivf", "rm",
    "rmvb", "h264", "264", "h265", "265", "hevc", "y4m", "mxf", "dv", "nut", "rcv", "vc1", "obu",
    "m4a", "mj2", "pva", "divx", "xvid", "gifv",
];

/// Extensions that are never media: skipped without reading the file.
pub const NON_MEDIA_EXTENSIONS: &[&str] = &[
    "txt", "json", "jsonl", "xml", "csv", "tsv", "yaml", "yml", "toml", "md", "rst", "py", "sh",
    "npy", "npz", "pt", "pth", "ckpt", "h5", "hdf5", "pkl", "pickle", "parquet", "arrow", "db",
    "sqlite", "zip", "tar", "gz", "bz2", "xz", "zst", "7z", "log", "html", "htm", "pdf", "srt",
    "vtt", "ass", "wav", "mp3", "flac", "aac", "opus", "lock", "cfg", "ini", "c", "rs", "js",
];

/// How a file's extension classifies it before any byte is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtensionClass {
    Image,
    Video,
    NonMedia,
    Unknown,
}

pub fn classify_extension(path: &std::path::Path) -> ExtensionClass {
    let Some(ext) = path.extension().and_then(|e| e.to_str()) else {
        return ExtensionClass::Unknown;
    };
    let ext = ext.to_ascii_lowercase();
    let ext = ext.as_str();
    if IMAGE_EXTENSIONS.contains(&ext) {
        ExtensionClass::Image
    } else if VIDEO_EXTENSIONS.contains(&ext) {
        ExtensionClass::Video
    } else if NON_MEDIA_EXTENSIONS.contains(&ext) {
        ExtensionClass::NonMedia
    } else {
        ExtensionClass::Unknown
    }
}

const HEIF_BRANDS: &[&[u8; 4]] = &[
    b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"hevm", b"hevs", b"mif1", b"msf1",
];
const AVIF_BRANDS: &[&[u8; 4]] = &[b"avif", b"avis"];

/// Classify a file from its first bytes (up to [`SNIFF_LEN`]; more are not looked at, so
/// the verdict is the same wherever it is asked, however much of the file the caller read).
pub fn sniff(head: &[u8]) -> Sniffed {
    use ImageFormat as F;
    let head = &head[..head.len().min(SNIFF_LEN)];
    if head.is_empty() {
        return Sniffed::Empty;
    }
    let starts = |sig: &[u8]| head.starts_with(sig);
    let image = if starts(&[0xFF, 0xD8, 0xFF]) {
        Some(F::Jpeg)
    } else if starts(b"\x89PNG\r\n\x1a\n") {
        Some(F::Png)
    } else if starts(b"GIF87a") || starts(b"GIF89a") {
        Some(F::Gif)
    } else if starts(b"RIFF") && head.get(8..12) == Some(b"WEBP") {
        Some(F::Webp)
    } else if starts(b"II*\0") || starts(b"MM\0*") || starts(b"II+\0") || starts(b"MM\0+") {
        Some(F::Tiff)
    } else if starts(b"BM") && head.len() >= 18 && bmp_header_plausible(head) {
        Some(F::Bmp)
    } else if starts(&[0, 0, 1, 0]) && head.len() >= 6 && head[4..6] != [0, 0] {
        Some(F::Ico)
    } else if starts(b"qoif") {
        Some(F::Qoi)
    } else if starts(b"8BPS") {
        Some(F::Psd)
    } else if starts(&[0x76, 0x2F, 0x31, 0x01]) {
        Some(F::Exr)
    } else if starts(&[0xFF, 0x0A]) || starts(b"\0\0\0\x0cJXL \r\n\x87\n") {
        Some(F::Jxl)
    } else if starts(b"#?RADIANCE") || starts(b"#?RGBE") {
        Some(F::Hdr)
    } else if starts(b"DDS ") {
        Some(F::Dds)
    } else if starts(&[0x01, 0xDA]) {
        Some(F::Sgi)
    } else if head.get(4..8) == Some(b"ftyp") {
        ftyp_image(head)
    } else {
        None
    };
    if let Some(f) = image {
        return Sniffed::Image(f);
    }
    if is_video_signature(head) {
        Sniffed::Video
    } else {
        Sniffed::Unknown
    }
}

fn bmp_header_plausible(head: &[u8]) -> bool {
    // BITMAPINFOHEADER and friends are 12..=124 bytes long.
    let dib = u32::from_le_bytes([head[14], head[15], head[16], head[17]]);
    (12..=124).contains(&dib)
}

/// HEIF/AVIF files are ISO-BMFF with an image brand (major or compatible).
fn ftyp_image(head: &[u8]) -> Option<ImageFormat> {
    let box_len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let end = box_len.min(head.len());
    let major = head.get(8..12)?;
    // Brands: major at 8..12, minor version 12..16, compatible brands from 16.
    let mut brands = vec![major];
    let mut i = 16;
    while i + 4 <= end {
        brands.push(&head[i..i + 4]);
        i += 4;
    }
    // A video brand wins over image brands listed as compatible.
    if VIDEO_BRANDS.iter().any(|b| major == b.as_slice()) {
        return None;
    }
    if brands
        .iter()
        .any(|b| AVIF_BRANDS.iter().any(|a| *b == a.as_slice()))
    {
        Some(ImageFormat::Avif)
    } else if brands
        .iter()
        .any(|b| HEIF_BRANDS.iter().any(|a| *b == a.as_slice()))
    {
        Some(ImageFormat::Heif)
    } else {
        None
    }
}

const VIDEO_BRANDS: &[&[u8; 4]] = &[
    b"isom", b"iso2", b"iso4", b"iso5", b"iso6", b"mp41", b"mp42", b"avc1", b"qt  ", b"M4V ",
    b"M4A ", b"3gp4", b"3gp5", b"3gp6", b"3g2a", b"dash", b"mjp2", b"f4v ",
];

fn is_video_signature(head: &[u8]) -> bool {
    let starts = |sig: &[u8]| head.starts_with(sig);
    head.get(4..8) == Some(b"ftyp")
        || head.get(4..8) == Some(b"moov")
        || head.get(4..8) == Some(b"mdat")
        || head.get(4..8) == Some(b"wide")
        || starts(&[0x1A, 0x45, 0xDF, 0xA3]) // Matroska / WebM (EBML)
        || (starts(b"RIFF") && matches!(head.get(8..12), Some(b"AVI ") | Some(b"AVIX")))
        || starts(b"OggS")
        || starts(b"FLV\x01")
        || starts(&[0x00, 0x00, 0x01, 0xBA]) // MPEG program stream
        || starts(&[0x00, 0x00, 0x01, 0xB3]) // MPEG video elementary stream
        || starts(&[0x30, 0x26, 0xB2, 0x75, 0x8E, 0x66, 0xCF, 0x11]) // ASF / WMV
        || starts(b".RMF")
        || starts(b"DKIF") // IVF
        || starts(b"YUV4MPEG2")
        || starts(b"AVs") // PVA
        || (head.len() > 188 && head[0] == 0x47 && head[188] == 0x47) // MPEG-TS
        || starts(&[0x00, 0x00, 0x00, 0x01]) // Annex B H.264/H.265
        || starts(&[0x00, 0x00, 0x01])
}

/// Bytes of a file's start that [`ffmpeg_recognises`] looks at.
pub const FFMPEG_PROBE_LEN: usize = 4096;

/// The name of the FFmpeg demuxer that recognises `head` (a file's first bytes) by its content
/// alone, with a score above what a file extension would give (so a weak or extension-only
/// match never makes a data file look like media). For files neither the extension nor the
/// signature table knows: a Windows TV recording, a JPEG 2000 codestream, and whatever else
/// this FFmpeg can read.
pub fn ffmpeg_recognises(head: &[u8]) -> Option<String> {
    ffmpeg_format_of(head)
        .filter(|(_, score)| *score > ffmpeg_next::ffi::AVPROBE_SCORE_EXTENSION)
        .map(|(name, _)| name)
}

/// The FFmpeg demuxer that `head` (a file's first bytes) looks most like by its content, with
/// FFmpeg's score for it (up to 100), whatever the score: what FFmpeg itself will open a file
/// that is known to be media with.
pub fn ffmpeg_format_of(head: &[u8]) -> Option<(String, i32)> {
    use ffmpeg_next::ffi;
    if head.is_empty() {
        return None;
    }
    crate::init();
    let len = head.len().min(FFMPEG_PROBE_LEN);
    // FFmpeg reads up to AVPROBE_PADDING_SIZE bytes past the end: give it zeros there.
    let mut buf = vec![0u8; len + ffi::AVPROBE_PADDING_SIZE as usize];
    buf[..len].copy_from_slice(&head[..len]);
    let empty = c"";
    let data = ffi::AVProbeData {
        filename: empty.as_ptr(),
        buf: buf.as_mut_ptr(),
        buf_size: len as i32,
        mime_type: std::ptr::null(),
    };
    let mut score = 0;
    // SAFETY: `data` points at `buf`, which outlives the call and has the zero padding FFmpeg
    // requires; the returned format is a static FFmpeg table entry (never freed).
    let format = unsafe { ffi::av_probe_input_format3(&data, 1, &mut score) };
    if format.is_null() {
        return None;
    }
    // SAFETY: a non-null demuxer has a NUL-terminated static name.
    let name = unsafe { std::ffi::CStr::from_ptr((*format).name) };
    Some((name.to_string_lossy().into_owned(), score))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_common_signatures() {
        assert_eq!(sniff(b""), Sniffed::Empty);
        assert_eq!(
            sniff(b"\xFF\xD8\xFF\xE0rest"),
            Sniffed::Image(ImageFormat::Jpeg)
        );
        assert_eq!(
            sniff(b"\x89PNG\r\n\x1a\n...."),
            Sniffed::Image(ImageFormat::Png)
        );
        assert_eq!(
            sniff(b"RIFF\0\0\0\0WEBPVP8 "),
            Sniffed::Image(ImageFormat::Webp)
        );
        assert_eq!(sniff(b"RIFF\0\0\0\0AVI LIST"), Sniffed::Video);
        assert_eq!(
            sniff(b"\0\0\0\x18ftypheic\0\0\0\0mif1heic"),
            Sniffed::Image(ImageFormat::Heif)
        );
        assert_eq!(
            sniff(b"\0\0\0\x1cftypisom\0\0\x02\0isomiso2mp41"),
            Sniffed::Video
        );
        assert_eq!(sniff(b"\x1a\x45\xdf\xa3...."), Sniffed::Video);
        assert_eq!(sniff(b"hello world, a text file"), Sniffed::Unknown);
    }

    #[test]
    fn extension_classes() {
        use std::path::Path;
        assert_eq!(
            classify_extension(Path::new("a/B.JPG")),
            ExtensionClass::Image
        );
        assert_eq!(
            classify_extension(Path::new("a.mkv")),
            ExtensionClass::Video
        );
        assert_eq!(
            classify_extension(Path::new("labels.json")),
            ExtensionClass::NonMedia
        );
        assert_eq!(
            classify_extension(Path::new("noext")),
            ExtensionClass::Unknown
        );
    }
}
