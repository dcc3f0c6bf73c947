//! lifeline-it
