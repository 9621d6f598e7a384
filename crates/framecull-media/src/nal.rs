//! NAL units of H.264 and HEVC packets: how a stream frames them (lengths, as MP4 stores
//! them, or start codes), what their types mean to a cut or a decode, and the parameter sets
//! of a stream's header.

use ffmpeg_next as ff;

/// The stream header's codec data (`avcC`, `hvcC`, or Annex B parameter sets), copied.
pub fn extradata(params: &ff::codec::Parameters) -> Vec<u8> {
    // SAFETY: the parameters are valid while borrowed; the extradata is copied here.
    unsafe {
        let par = params.as_ptr();
        if (*par).extradata.is_null() || (*par).extradata_size <= 0 {
            Vec::new()
        } else {
            std::slice::from_raw_parts((*par).extradata, (*par).extradata_size as usize).to_vec()
        }
    }
}

/// How a stream's packets frame their NAL units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Each unit after its length, in this many bytes (MP4's `avcC`).
    Length(usize),
    /// Each unit after a start code (Annex B: MPEG-TS, raw streams).
    StartCodes,
}

/// The NAL units of `data`, or `None` where they do not make up the packet exactly (a length
/// past its end, bytes before the first start code).
pub fn nal_units(data: &[u8], framing: Framing) -> Option<Vec<&[u8]>> {
    let mut units = Vec::new();
    match framing {
        Framing::Length(n) => {
            let mut at = 0;
            while at < data.len() {
                let len = data
                    .get(at..at + n)?
                    .iter()
                    .fold(0usize, |acc, &b| (acc << 8) | b as usize);
                at += n;
                units.push(data.get(at..at + len)?);
                at += len;
            }
        }
        Framing::StartCodes => {
            let starts: Vec<usize> = (0..data.len().saturating_sub(2))
                .filter(|&i| data[i] == 0 && data[i + 1] == 0 && data[i + 2] == 1)
                .map(|i| i + 3)
                .collect();
            let before = starts.first().map_or(data.len(), |&s| s - 3);
            if data[..before].iter().any(|&b| b != 0) {
                return None;
            }
            for (n, &start) in starts.iter().enumerate() {
                let end = starts.get(n + 1).map_or(data.len(), |&s| s - 3);
                // Zeros before the next start code (its fourth byte, trailing zeros) are not
                // part of the unit.
                let mut unit = &data[start..end.max(start)];
                while let [rest @ .., 0] = unit {
                    unit = rest;
                }
                if !unit.is_empty() {
                    units.push(unit);
                }
            }
        }
    }
    Some(units)
}

/// The codecs whose GOPs are copied: the NAL unit types that matter, how the parameter sets
/// are recorded, and the encoder that writes the parts around the copied runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    H264,
    Hevc,
}

impl Family {
    pub fn of(id: ff::codec::Id) -> Option<Family> {
        match id {
            ff::codec::Id::H264 => Some(Family::H264),
            ff::codec::Id::HEVC => Some(Family::Hevc),
            _ => None,
        }
    }

    /// A NAL unit's type.
    pub fn nal_type(self, unit: &[u8]) -> u8 {
        match self {
            Family::H264 => unit.first().map_or(0, |b| b & 0x1f),
            Family::Hevc => unit.first().map_or(0, |b| (b >> 1) & 0x3f),
        }
    }

    /// A unit decoding can start at with nothing before it: an H.264 IDR; an HEVC IRAP (IDR,
    /// CRA or BLA: a CRA's leading pictures, which refer to the GOP before, come after it in
    /// decode order and show before it, so its GOP fails the plan's frame test and is
    /// encoded).
    pub fn is_sync(self, unit: &[u8]) -> bool {
        let t = self.nal_type(unit);
        match self {
            Family::H264 => t == 5,
            Family::Hevc => (16..=21).contains(&t),
        }
    }

    /// A unit that starts a new coded sequence, which a copied run may start at: H.264 IDR;
    /// HEVC BLA or IDR (after a part of another encoder, a CRA would go on counting from its
    /// pictures and change parameter sets mid-sequence).
    pub fn is_fresh(self, unit: &[u8]) -> bool {
        let t = self.nal_type(unit);
        match self {
            Family::H264 => t == 5,
            Family::Hevc => (16..=20).contains(&t),
        }
    }

    /// The units of a packet that a decoder may leave out when it does not show the packet's
    /// picture: an H.264 picture that no other refers to (every slice's `nal_ref_idc` 0, as
    /// FFmpeg's `skip_frame=nonref` drops), with nothing else but delimiters, SEI and filler
    /// (no parameter set, which later pictures would need). HEVC: never (a sub-layer
    /// non-reference picture may still be referred to by a higher temporal layer).
    pub fn unreferenced(self, units: &[&[u8]]) -> bool {
        match self {
            Family::H264 => {
                let slice = |u: &&[u8]| u.first().is_some_and(|b| b & 0x1f == 1 && b & 0x60 == 0);
                units.iter().any(slice)
                    && units
                        .iter()
                        .all(|u| slice(u) || matches!(self.nal_type(u), 6 | 9 | 12))
            }
            Family::Hevc => false,
        }
    }

    /// An access unit delimiter, which must stay an access unit's first unit.
    pub fn is_delimiter(self, unit: &[u8]) -> bool {
        let t = self.nal_type(unit);
        match self {
            Family::H264 => t == 9,
            Family::Hevc => t == 35,
        }
    }

    /// A parameter set (H.264 SPS, PPS; HEVC VPS, SPS, PPS).
    pub fn is_parameter_set(self, unit: &[u8]) -> bool {
        let t = self.nal_type(unit);
        match self {
            Family::H264 => matches!(t, 7 | 8),
            Family::Hevc => matches!(t, 32..=34),
        }
    }

    /// The encoder of the parts around copied runs.
    pub fn encoder(self) -> &'static str {
        match self {
            Family::H264 => "libx264",
            Family::Hevc => "libx265",
        }
    }

    pub fn id(self) -> ff::codec::Id {
        match self {
            Family::H264 => ff::codec::Id::H264,
            Family::Hevc => ff::codec::Id::HEVC,
        }
    }

    /// The MP4 sample entry: with parameter sets in the stream (they change between parts),
    /// or only in the header.
    pub fn tag(self, in_stream: bool) -> &'static [u8; 4] {
        match (self, in_stream) {
            (Family::H264, true) => b"avc3",
            (Family::H264, false) => b"avc1",
            (Family::Hevc, true) => b"hev1",
            (Family::Hevc, false) => b"hvc1",
        }
    }

    /// The framing of a stream's packets and its parameter sets, from its extradata: an
    /// `avcC` or `hvcC` record, or Annex B units (where it starts with a start code, as
    /// FFmpeg tells them apart).
    pub fn setup(self, extradata: &[u8]) -> (Framing, Vec<Vec<u8>>) {
        if extradata.starts_with(&[0, 0, 1]) || extradata.starts_with(&[0, 0, 0, 1]) {
            let sets = nal_units(extradata, Framing::StartCodes)
                .unwrap_or_default()
                .into_iter()
                .filter(|u| self.is_parameter_set(u))
                .map(<[u8]>::to_vec)
                .collect();
            return (Framing::StartCodes, sets);
        }
        let mut sets = Vec::new();
        let mut unit = |at: &mut usize| -> Option<()> {
            let len = extradata.get(*at..*at + 2)?;
            let len = u16::from_be_bytes([len[0], len[1]]) as usize;
            sets.push(extradata.get(*at + 2..*at + 2 + len)?.to_vec());
            *at += 2 + len;
            Some(())
        };
        match self {
            Family::H264 => {
                let length = extradata.get(4).map_or(4, |b| (b & 3) as usize + 1);
                let mut at = 5;
                // SPS count (low five bits), then the PPS count (a byte) after them.
                for mask in [0x1f, 0xff] {
                    let Some(&count) = extradata.get(at) else {
                        break;
                    };
                    at += 1;
                    for _ in 0..(count & mask) {
                        if unit(&mut at).is_none() {
                            break;
                        }
                    }
                }
                (Framing::Length(length), sets)
            }
            Family::Hevc => {
                let length = extradata.get(21).map_or(4, |b| (b & 3) as usize + 1);
                let arrays = extradata.get(22).copied().unwrap_or(0);
                let mut at = 23;
                for _ in 0..arrays {
                    // The unit type (a byte), then a count of units (two).
                    let Some(count) = extradata.get(at + 1..at + 3) else {
                        break;
                    };
                    let count = u16::from_be_bytes([count[0], count[1]]);
                    at += 3;
                    for _ in 0..count {
                        if unit(&mut at).is_none() {
                            break;
                        }
                    }
                }
                (Framing::Length(length), sets)
            }
        }
    }
}

/// `units` in Annex B form.
pub fn annex_b<'a>(units: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for unit in units {
        out.extend_from_slice(&[0, 0, 0, 1]);
        out.extend_from_slice(unit);
    }
    out
}
