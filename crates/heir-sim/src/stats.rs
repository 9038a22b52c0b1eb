//! Streaming response-time statistics: exact count, min, max and mean;
//! percentiles from a log-linear histogram with bounded memory. (Skeleton.)

use serde::Serialize;

/// `{"min":…,"mean":…,"p50":…,"p90":…,"p99":…,"max":…}` in µs; all `null`
/// when there were no jobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ResponseSummary {
    pub min: Option<f64>,
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

/// Accumulates response times (ns).
#[derive(Clone, Debug, Default)]
pub struct ResponseStats {}

impl ResponseStats {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn record(&mut self, _ns: u64) {
        todo!()
    }
    pub fn count(&self) -> u64 {
        todo!()
    }
    pub fn summary(&self) -> ResponseSummary {
        todo!()
    }
}
