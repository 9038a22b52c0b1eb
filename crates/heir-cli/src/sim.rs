//! `heir sim`. (Skeleton: being written.)

use crate::{CliError, CliResult};

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn main(_args: Args) -> CliResult {
    Err(CliError::failure(anyhow::anyhow!(
        "heir sim: not built yet"
    )))
}
