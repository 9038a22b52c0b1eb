//! The starting files: heir's examples and rt-app's own example files.

use std::path::{Path, PathBuf};

/// The repository root (two levels above this crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where the distribution's `rt-app` package installs rt-app's example
/// files (Debian: `rt-app`'s doc/examples).
pub const RTAPP_EXAMPLES: &str = "/usr/share/doc/rt-app/examples";

/// rt-app's example files ([`RTAPP_EXAMPLES`]), when the `rt-app` package
/// is installed.
pub fn reference_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(RTAPP_EXAMPLES);
    dir.is_dir().then_some(dir)
}

/// Named files: (name, bytes).
pub type Files = Vec<(String, Vec<u8>)>;

/// The `*.json` files of `dir`, sorted by name, as (name, bytes).
pub fn json_files(dir: &Path) -> std::io::Result<Files> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "json") {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push((name, std::fs::read(&path)?));
        }
    }
    out.sort();
    Ok(out)
}

/// The seeds: `examples/*.json`, then rt-app's example files if the
/// `rt-app` package is installed (`with_reference` says whether it was):
/// [`RTAPP_EXAMPLES`]`/*.json` and `tutorial/*.json`.
pub fn seeds() -> std::io::Result<(Files, bool)> {
    let mut all = json_files(&repo_root().join("examples"))?;
    let reference = reference_dir();
    if let Some(dir) = &reference {
        all.extend(
            json_files(dir)?
                .into_iter()
                .map(|(n, b)| (format!("rt-app/{n}"), b)),
        );
        let tutorial = dir.join("tutorial");
        if tutorial.is_dir() {
            all.extend(
                json_files(&tutorial)?
                    .into_iter()
                    .map(|(n, b)| (format!("rt-app/tutorial/{n}"), b)),
            );
        }
    }
    Ok((all, reference.is_some()))
}
