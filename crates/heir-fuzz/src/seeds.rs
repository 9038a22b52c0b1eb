//! The starting files: heir's examples and rt-app's reference files.

use std::path::{Path, PathBuf};

/// The repository root (two levels above this crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// rt-app's reference files, `../shared/reference/rt-app` beside the clone,
/// when present.
pub fn reference_dir() -> Option<PathBuf> {
    let dir = repo_root().join("../shared/reference/rt-app");
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

/// The seeds: `examples/*.json`, then the rt-app reference files if
/// `../shared` is there (`with_reference` says whether it was).
pub fn seeds() -> std::io::Result<(Files, bool)> {
    let mut all = json_files(&repo_root().join("examples"))?;
    let reference = reference_dir();
    if let Some(dir) = &reference {
        all.extend(
            json_files(dir)?
                .into_iter()
                .map(|(n, b)| (format!("rt-app/{n}"), b)),
        );
    }
    Ok((all, reference.is_some()))
}
