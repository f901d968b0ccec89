//! The one integration-test binary: every test module is declared here.

mod support;

mod harness;
