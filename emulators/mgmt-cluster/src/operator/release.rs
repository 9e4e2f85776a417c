//! Which releases the simulated operator accepts.

use hypersaga_hypershift::release_version;

/// Releases this operator supports (HyperShift's `supportedversion`: a minimum for the
/// platform and a latest it knows).
const MIN_SUPPORTED: (u64, u64) = (4, 14);
const LATEST_SUPPORTED: (u64, u64) = (4, 22);

/// HyperShift's release check: an image it cannot read is refused like an unsupported one
/// (reason `InvalidImage`, messages as `validateReleaseImage` words them).
pub(super) fn check_release(image: &str) -> Result<(), String> {
    let Some(version) = release_version(image) else {
        return Err(format!(
            "failed to lookup release image: failed to extract release metadata: failed to \
             obtain root manifest for {image}: manifest unknown"
        ));
    };
    let mut parts = version.split('.').map(|p| p.parse::<u64>().ok());
    let (Some(Some(major)), Some(Some(minor))) = (parts.next(), parts.next()) else {
        return Err(format!("failed to parse release version {version:?}"));
    };
    let show = |(a, b): (u64, u64)| format!("{a}.{b}.0");
    if (major, minor) > LATEST_SUPPORTED {
        return Err(format!(
            "the latest version supported is: {:?}. Attempting to use: {version:?}",
            show(LATEST_SUPPORTED)
        ));
    }
    if (major, minor) < MIN_SUPPORTED {
        return Err(format!(
            "the minimum version supported for platform Azure is: {:?}. Attempting to use: \
             {version:?}",
            show(MIN_SUPPORTED)
        ));
    }
    Ok(())
}
