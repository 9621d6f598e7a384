//! How a video is read: which of its streams, and with which YUV -> RGB matrix when the
//! stream declares none. One rule for every reader: the probe, the analysis, the player, the
//! loader and the manifest's record.

use serde::{Deserialize, Serialize};

/// How a video is read: its stream, and the matrix when it declares none. The defaults are
/// what FFmpeg does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReadAs {
    pub stream: StreamChoice,
    pub color_matrix_guess: MatrixGuess,
}

/// Which video stream of a file is read (`[video] stream` in `framecull.toml`): `"best"`,
/// `"first"` or a stream index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum StreamChoice {
    /// The one FFmpeg picks (`av_find_best_stream`), as `ffmpeg`, torchcodec and decord do:
    /// the default stream first, then the one that decoded frames while probing, then the
    /// highest bit rate. Cover art only when there is nothing else.
    #[default]
    Best,
    /// The first video stream that is not cover art.
    First,
    /// The stream with this index, where it is a video stream and not cover art (else
    /// [`StreamChoice::Best`]).
    Index(u32),
}

impl StreamChoice {
    /// The stream a catalog or manifest records (the probe's choice); FFmpeg's best where it
    /// records none (a file probed before streams were recorded).
    pub fn recorded(stream_index: Option<u32>) -> StreamChoice {
        stream_index.map_or(StreamChoice::Best, StreamChoice::Index)
    }
}

impl Serialize for StreamChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            StreamChoice::Best => s.serialize_str("best"),
            StreamChoice::First => s.serialize_str("first"),
            StreamChoice::Index(i) => s.serialize_u32(*i),
        }
    }
}

impl<'de> Deserialize<'de> for StreamChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Index(u32),
            Name(String),
        }
        match Wire::deserialize(d)? {
            Wire::Index(i) => Ok(StreamChoice::Index(i)),
            Wire::Name(n) if n == "best" => Ok(StreamChoice::Best),
            Wire::Name(n) if n == "first" => Ok(StreamChoice::First),
            Wire::Name(n) => Err(serde::de::Error::custom(format!(
                "video stream {n:?}: expected \"best\", \"first\" or a stream index"
            ))),
        }
    }
}

/// YUV -> RGB matrix (ignored for RGB frames).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Matrix {
    Bt601,
    Bt709,
    /// BT.2020 non-constant luminance (HDR10, HLG and most 10-bit UHD video). FFmpeg converts
    /// constant-luminance BT.2020 with the same matrix, and so does the loader.
    Bt2020,
}

/// How the matrix of a stream that declares none is chosen (`[video] color_matrix_guess` in
/// `framecull.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatrixGuess {
    /// BT.601, as swscale does, and with it `ffmpeg`, PyAV, torchcodec and decord: frames
    /// equal to theirs, whatever the size.
    #[default]
    Ffmpeg,
    /// BT.709 from 720 lines up, else BT.601: what HD video is usually made with, and what
    /// players such as mpv and browsers assume.
    BySize,
}

impl Matrix {
    /// (Kr, Kb).
    pub fn coefficients(self) -> (f32, f32) {
        match self {
            Matrix::Bt601 => (0.299, 0.114),
            Matrix::Bt709 => (0.2126, 0.0722),
            Matrix::Bt2020 => (0.2627, 0.0593),
        }
    }

    /// Its name in listings and manifests: `bt601`, `bt709` or `bt2020`.
    pub fn as_str(self) -> &'static str {
        match self {
            Matrix::Bt601 => "bt601",
            Matrix::Bt709 => "bt709",
            Matrix::Bt2020 => "bt2020",
        }
    }

    pub fn parse(name: &str) -> Option<Matrix> {
        [Matrix::Bt601, Matrix::Bt709, Matrix::Bt2020]
            .into_iter()
            .find(|m| m.as_str() == name)
    }

    /// The matrix FFmpeg's colour-space name declares (`av_color_space_name`: `bt709`,
    /// `smpte170m`, `bt470bg`, `bt2020nc`, ...); `None` for `unknown`, `reserved` and the
    /// matrices read as another (`smpte240m`, `ycgco`, `gbr`).
    pub fn declared(color_space: &str) -> Option<Matrix> {
        match color_space {
            "bt709" => Some(Matrix::Bt709),
            "bt470bg" | "smpte170m" | "fcc" => Some(Matrix::Bt601),
            "bt2020nc" | "bt2020c" => Some(Matrix::Bt2020),
            _ => None,
        }
    }

    /// The matrix a stream of `height` lines is read with: the one it declares (its
    /// FFmpeg colour-space name), else `guess`'s.
    pub fn of_stream(color_space: Option<&str>, height: u32, guess: MatrixGuess) -> Matrix {
        color_space
            .and_then(Matrix::declared)
            .unwrap_or(match guess {
                MatrixGuess::BySize if height >= 720 => Matrix::Bt709,
                MatrixGuess::Ffmpeg | MatrixGuess::BySize => Matrix::Bt601,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declared_matrix_wins_and_an_undeclared_one_follows_the_guess() {
        for guess in [MatrixGuess::Ffmpeg, MatrixGuess::BySize] {
            assert_eq!(Matrix::of_stream(Some("bt709"), 480, guess), Matrix::Bt709);
            assert_eq!(
                Matrix::of_stream(Some("smpte170m"), 1080, guess),
                Matrix::Bt601
            );
            assert_eq!(
                Matrix::of_stream(Some("bt2020nc"), 2160, guess),
                Matrix::Bt2020
            );
            assert_eq!(Matrix::of_stream(None, 480, guess), Matrix::Bt601);
        }
        assert_eq!(
            Matrix::of_stream(None, 720, MatrixGuess::Ffmpeg),
            Matrix::Bt601
        );
        assert_eq!(
            Matrix::of_stream(Some("unknown"), 1080, MatrixGuess::Ffmpeg),
            Matrix::Bt601
        );
        assert_eq!(
            Matrix::of_stream(None, 720, MatrixGuess::BySize),
            Matrix::Bt709
        );
        assert_eq!(
            Matrix::of_stream(None, 719, MatrixGuess::BySize),
            Matrix::Bt601
        );
        for m in [Matrix::Bt601, Matrix::Bt709, Matrix::Bt2020] {
            assert_eq!(Matrix::parse(m.as_str()), Some(m));
        }
    }

    #[test]
    fn a_stream_choice_reads_as_a_name_or_an_index() {
        #[derive(Deserialize, Serialize)]
        struct T {
            stream: StreamChoice,
        }
        for (text, choice) in [
            ("stream = \"best\"", StreamChoice::Best),
            ("stream = \"first\"", StreamChoice::First),
            ("stream = 3", StreamChoice::Index(3)),
        ] {
            let t: T = toml::from_str(text).unwrap();
            assert_eq!(t.stream, choice);
            assert_eq!(toml::to_string(&t).unwrap().trim(), text);
        }
        let e = toml::from_str::<T>("stream = \"biggest\"").err().unwrap();
        assert!(e.to_string().contains("expected \"best\""), "{e}");
    }
}
