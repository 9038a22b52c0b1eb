//! heir-viz: observers that write what a run did. (Skeleton.)
#![forbid(unsafe_code)]
