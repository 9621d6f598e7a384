//! AWS's shared config files (`~/.aws/credentials`, `~/.aws/config`), as `aws configure` writes
//! them: a profile's static key, region and endpoint, for users who keep their settings there
//! rather than in `AWS_*` variables. The variables win over the files, as in AWS's own tools.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A profile's settings, named as the environment variables that would carry them
/// (`AWS_ACCESS_KEY_ID`, `AWS_REGION`, ...), to be applied under the environment's.
pub type Settings = Vec<(&'static str, String)>;

/// A profile framecull cannot use, with what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("AWS_PROFILE={name}: no such profile in {credentials} or {config}")]
    Missing {
        name: String,
        credentials: String,
        config: String,
    },
    #[error(
        "AWS profile {name} gets its credentials by {key}, which framecull does not read: \
         export them first (aws configure export-credentials --profile {name} --format env)"
    )]
    Unread { name: String, key: &'static str },
}

/// The settings of the profile `$AWS_PROFILE` (else `default`) from the shared files, with
/// `env` the process's `AWS_*` variables: credentials from the profile only when `env` has no
/// key, region and endpoint only where `env` has none. An `AWS_PROFILE` that no file holds, or
/// a profile whose credentials framecull cannot read (assume-role, SSO, a credential process),
/// is an error that says what to do instead; no files and no `AWS_PROFILE` is no setting.
pub fn settings(
    env: &BTreeMap<String, String>,
    home: Option<&Path>,
) -> Result<Settings, ProfileError> {
    let chosen = env.get("AWS_PROFILE").cloned();
    let name = chosen.clone().unwrap_or_else(|| "default".to_string());
    let file = |variable: &str, default: &str| -> Option<PathBuf> {
        env.get(variable)
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join(".aws").join(default)))
    };
    let read = |path: Option<PathBuf>| -> Option<(PathBuf, String)> {
        let path = path?;
        let text = std::fs::read_to_string(&path).ok()?;
        Some((path, text))
    };
    let credentials = read(file("AWS_SHARED_CREDENTIALS_FILE", "credentials"));
    let config = read(file("AWS_CONFIG_FILE", "config"));
    // The credentials file names a profile `[name]`; the config file `[profile name]`, except
    // `[default]`.
    let in_credentials = credentials
        .as_ref()
        .and_then(|(_, text)| section(text, &name));
    let config_header = if name == "default" {
        "default".to_string()
    } else {
        format!("profile {name}")
    };
    let in_config = config
        .as_ref()
        .and_then(|(_, text)| section(text, &config_header));
    if in_credentials.is_none() && in_config.is_none() {
        return match chosen {
            Some(_) => Err(ProfileError::Missing {
                name,
                credentials: shown(
                    credentials.as_ref().map(|c| c.0.as_path()),
                    "~/.aws/credentials",
                ),
                config: shown(config.as_ref().map(|c| c.0.as_path()), "~/.aws/config"),
            }),
            None => Ok(Vec::new()),
        };
    }
    let get = |key: &str| -> Option<String> {
        in_credentials
            .as_ref()
            .and_then(|s| s.get(key))
            .or_else(|| in_config.as_ref().and_then(|s| s.get(key)))
            .cloned()
    };
    let mut out: Settings = Vec::new();
    if !env.contains_key("AWS_ACCESS_KEY_ID") {
        match (get("aws_access_key_id"), get("aws_secret_access_key")) {
            (Some(id), Some(secret)) => {
                out.push(("AWS_ACCESS_KEY_ID", id));
                out.push(("AWS_SECRET_ACCESS_KEY", secret));
                if let Some(token) = get("aws_session_token") {
                    out.push(("AWS_SESSION_TOKEN", token));
                }
            }
            _ => {
                let unread = [
                    "role_arn",
                    "sso_session",
                    "sso_start_url",
                    "credential_process",
                ]
                .into_iter()
                .find(|k| get(k).is_some());
                if let Some(key) = unread {
                    return Err(ProfileError::Unread { name, key });
                }
            }
        }
    }
    if !env.contains_key("AWS_REGION")
        && !env.contains_key("AWS_DEFAULT_REGION")
        && let Some(region) = get("region")
    {
        out.push(("AWS_REGION", region));
    }
    if !env.contains_key("AWS_ENDPOINT_URL")
        && !env.contains_key("AWS_ENDPOINT")
        && let Some(endpoint) = get("endpoint_url")
    {
        // An endpoint the user wrote as http:// is meant as http (a MinIO on the LAN).
        if endpoint.starts_with("http://") && !env.contains_key("AWS_ALLOW_HTTP") {
            out.push(("AWS_ALLOW_HTTP", "true".to_string()));
        }
        out.push(("AWS_ENDPOINT_URL", endpoint));
    }
    Ok(out)
}

fn shown(path: Option<&Path>, default: &str) -> String {
    path.map_or_else(|| default.to_string(), |p| p.display().to_string())
}

/// The `key = value` lines of the section `[header]` of an INI text (the last one wins), or
/// `None` when there is no such section. Comments (`#`, `;`) and the indented lines of a nested
/// block (`s3 =` followed by `  addressing_style = path`) are skipped.
fn section(text: &str, header: &str) -> Option<BTreeMap<String, String>> {
    let mut found: Option<BTreeMap<String, String>> = None;
    let mut inside = false;
    let mut nested = false;
    for line in text.lines() {
        let indented = line.starts_with([' ', '\t']);
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if nested && indented {
            continue;
        }
        nested = false;
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
            inside = name == header;
            if inside {
                found.get_or_insert_with(BTreeMap::new);
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim();
        nested = value.is_empty();
        if let (true, Some(map)) = (inside && !nested, found.as_mut()) {
            map.insert(key.trim().to_ascii_lowercase(), value.to_string());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn home_with(credentials: &str, config: &str) -> tempfile::TempDir {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".aws")).unwrap();
        std::fs::write(home.path().join(".aws/credentials"), credentials).unwrap();
        std::fs::write(home.path().join(".aws/config"), config).unwrap();
        home
    }

    const CREDENTIALS: &str = "[default]\naws_access_key_id = AKIADEFAULT\n\
        aws_secret_access_key = s1\n\n# a comment\n[train]\n aws_access_key_id=AKIATRAIN \n\
        aws_secret_access_key = s2\naws_session_token = t2\n";
    const CONFIG: &str = "[default]\nregion = eu-west-1\n\n[profile train]\nregion = us-west-2\n\
        endpoint_url = http://minio.lan:9000\ns3 =\n  addressing_style = path\n\n\
        [profile assumed]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = default\n";

    #[test]
    fn a_profile_gives_its_key_region_and_endpoint_under_the_environment() {
        let home = home_with(CREDENTIALS, CONFIG);
        let got = settings(&env(&[("AWS_PROFILE", "train")]), Some(home.path())).unwrap();
        let expected: Settings = vec![
            ("AWS_ACCESS_KEY_ID", "AKIATRAIN".into()),
            ("AWS_SECRET_ACCESS_KEY", "s2".into()),
            ("AWS_SESSION_TOKEN", "t2".into()),
            ("AWS_REGION", "us-west-2".into()),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_ENDPOINT_URL", "http://minio.lan:9000".into()),
        ];
        assert_eq!(got, expected);
        // Without AWS_PROFILE: the default profile.
        let got = settings(&env(&[]), Some(home.path())).unwrap();
        assert_eq!(
            got,
            vec![
                ("AWS_ACCESS_KEY_ID", "AKIADEFAULT".to_string()),
                ("AWS_SECRET_ACCESS_KEY", "s1".into()),
                ("AWS_REGION", "eu-west-1".into()),
            ]
        );
        // The environment's key, region and endpoint win; nothing of the profile's is mixed in.
        let got = settings(
            &env(&[
                ("AWS_PROFILE", "train"),
                ("AWS_ACCESS_KEY_ID", "AKIAENV"),
                ("AWS_DEFAULT_REGION", "ap-south-1"),
                ("AWS_ENDPOINT_URL", "https://s3.example"),
            ]),
            Some(home.path()),
        )
        .unwrap();
        assert_eq!(got, Settings::new());
    }

    #[test]
    fn missing_profiles_and_unread_credentials_are_errors_that_say_what_to_do() {
        let home = home_with(CREDENTIALS, CONFIG);
        let e = settings(&env(&[("AWS_PROFILE", "nope")]), Some(home.path()))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("AWS_PROFILE=nope: no such profile in "),
            "{e}"
        );
        assert!(
            e.contains(".aws/credentials") && e.contains(".aws/config"),
            "{e}"
        );
        let e = settings(&env(&[("AWS_PROFILE", "assumed")]), Some(home.path()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("by role_arn"), "{e}");
        assert!(
            e.contains("aws configure export-credentials --profile assumed"),
            "{e}"
        );
        // No files at all, no AWS_PROFILE: nothing to add, no error.
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(settings(&env(&[]), Some(empty.path())).unwrap(), vec![]);
        assert!(settings(&env(&[("AWS_PROFILE", "x")]), Some(empty.path())).is_err());
        // Files named by the variables instead of the home folder's.
        let got = settings(
            &env(&[
                ("AWS_PROFILE", "train"),
                (
                    "AWS_SHARED_CREDENTIALS_FILE",
                    home.path().join(".aws/credentials").to_str().unwrap(),
                ),
            ]),
            None,
        )
        .unwrap();
        assert_eq!(got[0], ("AWS_ACCESS_KEY_ID", "AKIATRAIN".to_string()));
    }
}
