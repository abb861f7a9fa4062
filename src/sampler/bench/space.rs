//! A search space given in code: parameter definitions plus a resolve function. Used by the
//! benchmark's synthetic scenarios and by sampler tests as a stand-in for a YAML space.

use crate::space::{Feasibility, ParamDef, Params, Rejection};

/// Completes and checks a sampled config, like `Space`'s resolve.
pub type ResolveFn = dyn Fn(&Params) -> Result<Params, Rejection> + Send + Sync;

/// A space defined by `parameters` and a `resolve` closure.
pub struct FnSpace {
    parameters: Vec<ParamDef>,
    resolve: Box<ResolveFn>,
}

impl FnSpace {
    /// A space over `parameters` whose configs are completed and checked by `resolve`.
    pub fn new(
        parameters: Vec<ParamDef>,
        resolve: impl Fn(&Params) -> Result<Params, Rejection> + Send + Sync + 'static,
    ) -> Self {
        FnSpace {
            parameters,
            resolve: Box::new(resolve),
        }
    }
}

impl Feasibility for FnSpace {
    fn parameters(&self) -> &[ParamDef] {
        &self.parameters
    }

    fn resolve(&self, sampled: &Params) -> Result<Params, Rejection> {
        (self.resolve)(sampled)
    }
}

/// A searchable parameter `name` over `kind`, with no condition, target or default.
pub fn param(name: &str, kind: crate::space::ParamKind) -> ParamDef {
    ParamDef {
        name: name.into(),
        kind,
        when: None,
        target: None,
        default: None,
    }
}
