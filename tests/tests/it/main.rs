
mod fixture_selftest;
mod support;
mod peers;
