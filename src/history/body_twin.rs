//! `EntryBody` and its externally tagged twin from one list of variants (see
//! [`super::entry_de`], the reader that uses the twin).

/// Declares `EntryBody` and, from the same variants, its externally tagged twin: the reader that
/// takes the variant name first and the fields as a map, which is what an entry line is once its
/// `type` has been read.
macro_rules! entry_body {
    ($(#[$meta:meta])* pub enum EntryBody { $($variants:tt)* }) => {
        $(#[$meta])*
        pub enum EntryBody { $($variants)* }

        #[derive(serde::Deserialize)]
        #[serde(remote = "EntryBody", rename_all = "snake_case")]
        #[allow(dead_code, clippy::large_enum_variant)]
        pub(super) enum TaggedBody { $($variants)* }
    };
}
pub(crate) use entry_body;
