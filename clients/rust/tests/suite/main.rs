//! The Rust client's suite against a real daemon (`SVC_TESTKIT_COMMAND`, spec/testkit.md).
mod conformance;
mod daemon;
mod oauth;
mod operations;
mod scripted;
mod wire_vectors;
mod worker;
