//! `heir sweep`. (Skeleton: being written.)

use crate::{CliError, CliResult};

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn main(_args: Args) -> CliResult {
    Err(CliError::failure(anyhow::anyhow!(
        "heir sweep: not built yet"
    )))
}
