//! Field paths and sets of them, the vocabulary of server-side apply's ownership tracking
//! (a Rust port of the parts of `sigs.k8s.io/structured-merge-diff/v6/fieldpath` the
//! emulator needs).

mod element;
mod serialize;
mod set;

pub use element::{Path, PathElement, compare_values, path_string};
pub use serialize::{FieldsError, from_fields_v1, to_fields_v1};
pub use set::Set;
