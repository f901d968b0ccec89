//! End-to-end runs of the built binary against the fake GitHub API.
