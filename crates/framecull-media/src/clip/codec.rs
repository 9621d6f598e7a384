//! The codecs a smart cut copies packets of, and how each tells where decoding may start,
//! joins packets of different parts, and is encoded: H.264 and HEVC by their NAL units
//! ([`crate::nal`]), VP9 and AV1 by their frame headers (a packet is one shown frame, a
//! shown key frame refreshes every reference: its GOP stands alone).

use ffmpeg_next as ff;

use crate::nal::{Family, Framing, annex_b, nal_units};

/// A codec whose packets a clip copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Codec {
    Nal(Family),
    Vp9,
    Av1,
}

/// AV1's OBU types that matter here.
const OBU_SEQUENCE_HEADER: u8 = 1;
const OBU_TEMPORAL_DELIMITER: u8 = 2;
const OBU_FRAME_HEADER: u8 = 3;
const OBU_FRAME: u8 = 6;

impl Codec {
    pub fn of(id: ff::codec::Id) -> Option<Codec> {
        match id {
            ff::codec::Id::VP9 => Some(Codec::Vp9),
            ff::codec::Id::AV1 => Some(Codec::Av1),
            id => Family::of(id).map(Codec::Nal),
        }
    }

    /// The encoder of the parts around copied runs.
    pub fn encoder(self) -> &'static str {
        match self {
            Codec::Nal(family) => family.encoder(),
            Codec::Vp9 => "libvpx-vp9",
            Codec::Av1 => "libaom-av1",
        }
    }

    pub fn id(self) -> ff::codec::Id {
        match self {
            Codec::Nal(family) => family.id(),
            Codec::Vp9 => ff::codec::Id::VP9,
            Codec::Av1 => ff::codec::Id::AV1,
        }
    }

    /// The MP4 sample entry: for H.264 and HEVC, with parameter sets in the stream (they
    /// change between parts) or only in the header.
    pub fn tag(self, in_stream: bool) -> &'static [u8; 4] {
        match self {
            Codec::Nal(family) => family.tag(in_stream),
            Codec::Vp9 => b"vp09",
            Codec::Av1 => b"av01",
        }
    }

    /// How many places an encoded part's packets come before their frames, at most: x264's
    /// and x265's B-frames with a pyramid (two, and one to spare); none where the encoder is
    /// told to look no frame ahead (VP9, AV1: no hidden frames, one packet a frame in order).
    pub fn encoder_delay(self) -> usize {
        match self {
            Codec::Nal(_) => 3,
            Codec::Vp9 | Codec::Av1 => 0,
        }
    }

    /// The framing of the stream's packets and what a copied run's first packet needs from
    /// the stream's header (`extradata`): H.264 and HEVC parameter sets; AV1's sequence
    /// header (the `av1C` record's OBUs).
    pub fn setup(self, extradata: &[u8]) -> (Framing, Vec<Vec<u8>>) {
        match self {
            Codec::Nal(family) => family.setup(extradata),
            Codec::Vp9 => (Framing::StartCodes, Vec::new()),
            Codec::Av1 => {
                // av1C: a marker and version byte, three of profile and flags, then OBUs.
                let obus = match extradata.first() {
                    Some(0x81) => extradata.get(4..).unwrap_or_default(),
                    _ => extradata,
                };
                let sets = obus_of(obus)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|(t, _, _)| *t == OBU_SEQUENCE_HEADER)
                    .map(|(_, whole, _)| whole.to_vec())
                    .collect();
                (Framing::StartCodes, sets)
            }
        }
    }

    /// Whether a packet starts a GOP that decodes alone (`sync`) and a copied run may start
    /// at (`fresh`): an H.264 IDR, an HEVC IRAP (IDR or BLA for a run); a VP9 or AV1 shown
    /// key frame. `None` where the packet is not what the codec's stream holds.
    pub fn starts(self, data: &[u8], framing: Framing) -> Option<(bool, bool)> {
        match self {
            Codec::Nal(family) => {
                let units = nal_units(data, framing)?;
                let sync = units.iter().any(|u| family.is_sync(u));
                Some((sync, sync && units.iter().any(|u| family.is_fresh(u))))
            }
            Codec::Vp9 => {
                let key = vp9_shown_key(data)?;
                Some((key, key))
            }
            Codec::Av1 => {
                let key = av1_shown_key(data)?;
                Some((key, key))
            }
        }
    }

    /// A copied packet as the clip stores it: H.264 and HEVC in Annex B with `lead` (the
    /// source's parameter sets, for a run's first packet) after its delimiter and before its
    /// own units (its own sets, where it has them, win); AV1 with `lead` (the source's
    /// sequence header) after its temporal delimiter where it has no sequence header of its
    /// own; VP9 as it is.
    pub fn copied(self, data: &[u8], framing: Framing, lead: &[Vec<u8>]) -> Option<Vec<u8>> {
        match self {
            Codec::Nal(family) => {
                let units = nal_units(data, framing)?;
                let delimiter = units.first().filter(|u| family.is_delimiter(u)).copied();
                let rest = &units[usize::from(delimiter.is_some())..];
                Some(annex_b(
                    delimiter
                        .into_iter()
                        .chain(lead.iter().map(Vec::as_slice))
                        .chain(rest.iter().copied()),
                ))
            }
            Codec::Vp9 => Some(data.to_vec()),
            Codec::Av1 => {
                let obus = obus_of(data)?;
                if lead.is_empty() || obus.iter().any(|(t, _, _)| *t == OBU_SEQUENCE_HEADER) {
                    return Some(data.to_vec());
                }
                let at = match obus.first() {
                    Some((OBU_TEMPORAL_DELIMITER, whole, _)) => whole.len(),
                    _ => 0,
                };
                let mut out = data[..at].to_vec();
                lead.iter().for_each(|s| out.extend_from_slice(s));
                out.extend_from_slice(&data[at..]);
                Some(out)
            }
        }
    }

    /// What the clip's stream header holds, from its first packet: H.264 and HEVC parameter
    /// sets (Annex B, which the muxer writes as `avcC` or `hvcC`); AV1's sequence header
    /// OBUs (written as `av1C`), `None` where the packet has none (the header keeps the
    /// source's); VP9: nothing (`vpcC` comes from the stream's parameters).
    pub fn header(self, first: &[u8]) -> Option<Vec<u8>> {
        match self {
            Codec::Nal(family) => Some(annex_b(
                nal_units(first, Framing::StartCodes)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|u| family.is_parameter_set(u)),
            )),
            Codec::Vp9 => Some(Vec::new()),
            Codec::Av1 => {
                let sets: Vec<u8> = obus_of(first)?
                    .into_iter()
                    .filter(|(t, _, _)| *t == OBU_SEQUENCE_HEADER)
                    .flat_map(|(_, whole, _)| whole.iter().copied())
                    .collect();
                (!sets.is_empty()).then_some(sets)
            }
        }
    }
}

/// A VP9 packet's first frame is a key frame that shows (a superframe's first frame starts
/// the packet): the uncompressed header's frame marker, profile, `show_existing_frame`,
/// `frame_type` and `show_frame` bits.
fn vp9_shown_key(data: &[u8]) -> Option<bool> {
    let mut bits = Bits::new(data);
    if bits.read(2)? != 2 {
        return None;
    }
    let profile = bits.read(1)? | (bits.read(1)? << 1);
    if profile == 3 {
        bits.read(1)?;
    }
    if bits.read(1)? == 1 {
        // show_existing_frame: shows a frame decoded before.
        return Some(false);
    }
    let key = bits.read(1)? == 0;
    let shown = bits.read(1)? == 1;
    Some(key && shown)
}

/// An AV1 temporal unit's first frame is a key frame that shows: its frame header's
/// `show_existing_frame`, `frame_type` and `show_frame` bits (a sequence with reduced still
/// picture headers holds only such frames).
fn av1_shown_key(data: &[u8]) -> Option<bool> {
    let obus = obus_of(data)?;
    let reduced = obus
        .iter()
        .find(|(t, _, _)| *t == OBU_SEQUENCE_HEADER)
        .and_then(|(_, _, payload)| payload.first())
        .map(|b| (b >> 3) & 1 == 1);
    let Some((_, _, header)) = obus
        .iter()
        .find(|(t, _, _)| matches!(*t, OBU_FRAME | OBU_FRAME_HEADER))
    else {
        return Some(false);
    };
    if reduced == Some(true) {
        return Some(true);
    }
    let mut bits = Bits::new(header);
    if bits.read(1)? == 1 {
        return Some(false);
    }
    let key = bits.read(2)? == 0;
    let shown = bits.read(1)? == 1;
    Some(key && shown)
}

/// An AV1 OBU: its type, its bytes with header, and its payload.
type Obu<'a> = (u8, &'a [u8], &'a [u8]);

/// The OBUs of an AV1 packet (low overhead format), or `None` where they do not make up the
/// packet exactly.
fn obus_of(data: &[u8]) -> Option<Vec<Obu<'_>>> {
    let mut obus = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let start = at;
        let header = data[at];
        if header & 0x80 != 0 {
            return None;
        }
        let kind = (header >> 3) & 0x0f;
        at += 1 + usize::from(header & 0x04 != 0);
        let size = if header & 0x02 != 0 {
            let mut value = 0usize;
            let mut i = 0;
            loop {
                let byte = *data.get(at)?;
                value |= ((byte & 0x7f) as usize) << (7 * i);
                at += 1;
                i += 1;
                if byte & 0x80 == 0 {
                    break;
                }
                if i == 8 {
                    return None;
                }
            }
            value
        } else {
            data.len().checked_sub(at)?
        };
        let payload = data.get(at..at.checked_add(size)?)?;
        at += size;
        obus.push((kind, &data[start..at], payload));
    }
    Some(obus)
}

/// Bits of a byte string, most significant first.
struct Bits<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Bits<'a> {
    fn new(data: &'a [u8]) -> Bits<'a> {
        Bits { data, at: 0 }
    }

    fn read(&mut self, n: usize) -> Option<u32> {
        let mut value = 0u32;
        for _ in 0..n {
            let byte = *self.data.get(self.at / 8)?;
            value = (value << 1) | u32::from((byte >> (7 - self.at % 8)) & 1);
            self.at += 1;
        }
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vp9_key_frames_are_told_from_their_headers() {
        // Frame marker 10, profile 0, shown-existing 0, key frame (0), shown (1).
        assert_eq!(vp9_shown_key(&[0b1000_0010]), Some(true));
        // An inter frame, shown.
        assert_eq!(vp9_shown_key(&[0b1000_0110]), Some(false));
        // A key frame, hidden.
        assert_eq!(vp9_shown_key(&[0b1000_0000]), Some(false));
        // Showing a frame decoded before.
        assert_eq!(vp9_shown_key(&[0b1000_1000]), Some(false));
        // Profile 3 has a reserved bit before them.
        assert_eq!(vp9_shown_key(&[0b1011_0001]), Some(true));
        // Not a VP9 frame.
        assert_eq!(vp9_shown_key(&[0b0100_0010]), None);
    }

    #[test]
    fn av1_key_frames_and_sequence_headers_are_found_in_their_obus() {
        let td = [0x12, 0x00];
        let seq = [0x0a, 0x02, 0x00, 0x00];
        // A frame OBU: not shown-existing, key (00), shown (1).
        let key = [0x32, 0x02, 0b0001_0000, 0x00];
        let inter = [0x32, 0x02, 0b0011_0000, 0x00];
        let tu = |parts: &[&[u8]]| parts.concat();
        assert_eq!(av1_shown_key(&tu(&[&td, &seq, &key])), Some(true));
        assert_eq!(av1_shown_key(&tu(&[&td, &inter])), Some(false));
        assert_eq!(av1_shown_key(&[0x32, 0x05, 0]), None);
        let (_, sets) = Codec::Av1.setup(&tu(&[&[0x81, 0, 0, 0], &seq]));
        assert_eq!(sets, vec![seq.to_vec()]);
        // A run's first packet gets the sequence header after its delimiter, once.
        assert_eq!(
            Codec::Av1.copied(&tu(&[&td, &key]), Framing::StartCodes, &sets),
            Some(tu(&[&td, &seq, &key]))
        );
        assert_eq!(
            Codec::Av1.copied(&tu(&[&td, &seq, &key]), Framing::StartCodes, &sets),
            Some(tu(&[&td, &seq, &key]))
        );
        assert_eq!(
            Codec::Av1.header(&tu(&[&td, &seq, &key])),
            Some(seq.to_vec())
        );
        assert_eq!(Codec::Av1.header(&tu(&[&td, &key])), None);
    }
}
