//! heir-scenario's integration tests: one binary, one module per behaviour.

mod common;

mod bad_input;
mod donation;
mod events;
mod gang;
mod global;
mod limits;
mod messages;
mod program;
mod props;
mod reader;
mod rename;
mod resources;
mod rtapp_files;
mod tasks;
