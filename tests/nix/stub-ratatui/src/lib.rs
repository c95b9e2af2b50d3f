//! Stand-in crate for offline flake tests; never built.
