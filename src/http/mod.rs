//! Outbound HTTP: the one TLS/client set-up ([`tls`]) and the one API layer ([`Api`]) that owns
//! authentication, retries with back-off, rate limits, same-origin rules and response caps for
//! the forge clients.

mod api;
mod body;
mod origin;
mod retry;
mod text_tail;
mod tls;

pub(crate) use api::describe;
pub use api::{Api, ApiError, ApiSettings, Auth, Lookup, LookupResult, Replay, Response, kind_of};
pub(crate) use body::read_capped;
pub use origin::{Origin, next_link};
pub use retry::{RetryPolicy, retry_after};
pub use tls::{USER_AGENT, builder, client, tls_config};

/// Response bodies larger than this are refused unless a client configures another cap.
pub const DEFAULT_MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
