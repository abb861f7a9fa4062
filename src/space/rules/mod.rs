//! Engine rule packs: the checks each engine applies at start-up, with the engine's own messages.

use super::{EngineKind, Params, Rejection};

/// Apply `kind`'s rule pack (for `version` on `platform`, both optional) to a resolved config.
pub fn check(
    _kind: EngineKind,
    _version: Option<&str>,
    _platform: Option<&str>,
    _params: &Params,
) -> Result<(), Rejection> {
    Ok(())
}
