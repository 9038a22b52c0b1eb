//! heir-rt: the engine on real Linux threads. (Skeleton.)
