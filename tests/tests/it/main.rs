//! Lifeline's one integration-test binary: real processes, real loopback sockets, the
//! fixture server and real peers. Modules group tests by what they exercise.

mod bundle;
mod cli;
mod clients;
mod detail;
mod docs;
mod files;
mod fixture_selftest;
mod gateway;
mod history;
mod http;
mod import;
mod learned;
mod legacy;
mod oauth;
mod peers;
mod processes;
/// Unix only: the recorded story kills a fixture with SIGKILL, and the recording is
/// compared byte for byte with the checked-in one.
#[cfg(unix)]
mod recording;
mod secrets;
mod stateless;
mod stdio;
mod supervise;
mod support;
#[cfg(target_os = "linux")]
mod wake;
