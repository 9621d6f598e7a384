//! Build metadata: the git revision the binary was built from, for `framecull --version`
//! ("unknown" outside a git checkout, e.g. from a source tarball).
//!
//! Cargo reruns a build script on every build when a path it watches does not exist, and on any
//! change to the package when it watches nothing: so it watches `build.rs` and, of HEAD, the
//! folder of the branch HEAD names and the packed refs, those that exist. A no-op build then
//! compiles nothing, and a commit reruns it.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    let rev = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=FRAMECULL_GIT_REV={rev}");
    println!("cargo:rerun-if-changed=build.rs");
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        // The folder, not the file: a branch packed away has no file, and its first commit
        // after that makes one.
        watched.extend(Path::new(&branch).parent().map(|p| p.display().to_string()));
    }
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--path-format=absolute", "--git-path", &name])
            && Path::new(&path).exists()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
