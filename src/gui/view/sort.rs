//! The table's order: by a measure or a text column, kept by the column's name.

use super::View;
use crate::model::Measure;

/// What the table can be sorted by: a measure or a text column. Saved by name (a measure's
/// name, or `path`, `kind`, `status`, `codec`, `resolution`, `review`, `flags`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum SortKey {
    Path,
    Kind,
    Status,
    Level,
    Codec,
    Resolution,
    Review,
    Label,
    Flags,
    Measure(Measure),
}

impl SortKey {
    const TEXT: [(SortKey, &'static str); 9] = [
        (SortKey::Path, "path"),
        (SortKey::Kind, "kind"),
        (SortKey::Status, "status"),
        (SortKey::Level, "analysis"),
        (SortKey::Codec, "codec"),
        (SortKey::Resolution, "resolution"),
        (SortKey::Review, "review"),
        (SortKey::Label, "label"),
        (SortKey::Flags, "flags"),
    ];

    pub fn name(self) -> &'static str {
        match self {
            SortKey::Measure(m) => m.name(),
            key => SortKey::TEXT
                .iter()
                .find(|(k, _)| *k == key)
                .map_or("path", |(_, n)| n),
        }
    }
}

/// A saved sort column this version does not have.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a table column")]
pub struct UnknownColumn(String);

impl TryFrom<String> for SortKey {
    type Error = UnknownColumn;

    fn try_from(name: String) -> Result<Self, UnknownColumn> {
        SortKey::TEXT
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(k, _)| *k)
            .or_else(|| Measure::parse(&name).map(SortKey::Measure))
            .ok_or(UnknownColumn(name))
    }
}

impl From<SortKey> for String {
    fn from(key: SortKey) -> String {
        key.name().to_string()
    }
}

/// Order `rows` (indices into the view) by a table column; files without a value last.
pub fn sort_rows(view: &View, rows: &mut [usize], key: SortKey, ascending: bool) {
    let flip = |o: std::cmp::Ordering| if ascending { o } else { o.reverse() };
    if let SortKey::Measure(m) = key {
        let Some(values) = view.columns.get(&m) else {
            return;
        };
        rows.sort_by(|&a, &b| match (values[a].is_nan(), values[b].is_nan()) {
            (false, false) => flip(values[a].total_cmp(&values[b])),
            (x, y) => x.cmp(&y),
        });
        return;
    }
    let text = |i: usize| -> String {
        let r = &view.rows[i];
        match key {
            SortKey::Kind => r.kind.as_str().to_string(),
            SortKey::Status => r.status.as_str().to_string(),
            // Shallow first: none, triage, deep.
            SortKey::Level => format!("{}", r.level as u8),
            SortKey::Codec => r.codec.clone(),
            SortKey::Resolution => r.resolution(),
            SortKey::Review => view
                .review
                .decisions
                .get(&r.id)
                .copied()
                .unwrap_or_default()
                .as_str()
                .to_string(),
            // Labelled first, by their labels.
            SortKey::Label => {
                let labels: Vec<&str> = view.labels.of(i).collect();
                if labels.is_empty() {
                    "\u{10ffff}".into()
                } else {
                    labels.join(";")
                }
            }
            SortKey::Flags => format!("{:04}", r.flags.len()),
            SortKey::Path | SortKey::Measure(_) => r.path.clone(),
        }
    };
    rows.sort_by_cached_key(|&i| text(i));
    if !ascending {
        rows.reverse();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_keys_are_saved_by_column_name() {
        for key in [
            SortKey::Path,
            SortKey::Review,
            SortKey::Measure(Measure::Fps),
        ] {
            let text = serde_json::to_string(&key).unwrap();
            assert_eq!(serde_json::from_str::<SortKey>(&text).unwrap(), key);
        }
        // A state saved when the sort was a plain column name still loads.
        let saved: (SortKey, bool) = serde_json::from_str(r#"["duration_secs", true]"#).unwrap();
        assert_eq!(saved, (SortKey::Measure(Measure::DurationSecs), true));
        assert!(serde_json::from_str::<SortKey>(r#""colour""#).is_err());
    }
}
