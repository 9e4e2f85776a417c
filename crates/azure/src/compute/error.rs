//! [`ComputeError`]: why a typed compute read failed, keeping the kind of what failed.

use crate::classify::ErrorKind;
use crate::error::ArmError;

use super::sizes::SizeError;

/// A failed [`crate::ArmClient::vm_size`]: ARM's own failure, or an answer that does not offer
/// the size.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ComputeError {
    /// The Resource SKUs list could not be read.
    #[error(transparent)]
    Arm(#[from] ArmError),
    /// The list was read and does not offer the size (or says nothing usable about it).
    #[error(transparent)]
    Size(#[from] SizeError),
}

impl ComputeError {
    /// What the caller should do: ARM's failure keeps its own kind; see [`SizeError::kind`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Arm(e) => e.kind(),
            Self::Size(e) => e.kind(),
        }
    }

    /// ARM's failure, when that is what it was.
    pub fn arm_error(&self) -> Option<&ArmError> {
        match self {
            Self::Arm(e) => Some(e),
            Self::Size(_) => None,
        }
    }
}
