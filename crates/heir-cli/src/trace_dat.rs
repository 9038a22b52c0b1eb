//! `--trace-dat OUT.dat` of `heir run` and `heir exec`: the run's
//! ring-buffer pages as trace-cmd's trace.dat
//! ([`heir_runner::tracedat`]), written as the other outputs are (a
//! temporary file beside the target, renamed over it when complete).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use heir_runner::tracedat::DatCapture;

use crate::output::PendingFile;
use crate::CliError;

/// Writes `dat` at `path`; the path written.
pub fn write(path: &Path, dat: &DatCapture) -> Result<PathBuf, CliError> {
    let (pending, file) = PendingFile::create(path).map_err(CliError::bad_input)?;
    let mut w = std::io::BufWriter::new(&file);
    dat.write(&mut w)
        .and_then(|()| w.flush())
        .with_context(|| format!("writing {}", path.display()))
        .map_err(CliError::failure)?;
    drop(w);
    pending.commit(file).map_err(CliError::failure)
}
