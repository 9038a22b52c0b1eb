//! heir-analysis: schedulability analysis. (Skeleton.)
#![forbid(unsafe_code)]
