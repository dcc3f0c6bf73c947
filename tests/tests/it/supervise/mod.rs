//! The supervisor end to end, through the real `lifeline` binary: `watch --json` (the event
//! stream), `check` and `call SERVER`, against real fixture processes and loopback HTTP
//! servers, in real time with small configured delays. Tests wait on events (an event line,
//! a fixture log entry, a process exit), each wait bounded, never on sleeps.
//!
//! - `scenarios`: the table. A row names servers and their fixture scripts, the events to
//!   wait for, and what the run must show; `scenario::run` runs any row and checks the
//!   invariants every run keeps. Adding a case is adding a row.
//! - `mid_run`: runs the table cannot describe, because the test acts while `watch` runs
//!   (restarts a server, starts one late, signals `watch` at once).
//! - `commands`: the one-shot commands `check` and `call SERVER`, and an invalid config.
//! - `watch`, `events`, `fixtures`: running `watch`, reading its events, building configs.

mod commands;
mod events;
mod fixtures;
mod mid_run;
mod scenario;
mod scenarios;
pub(crate) mod watch;
