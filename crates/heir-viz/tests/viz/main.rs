//! heir-viz integration tests: one binary, a module per behaviour.

mod chrome;
mod support;
mod svg;
mod tee;
mod xml;
