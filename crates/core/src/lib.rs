//! lifeline-core
