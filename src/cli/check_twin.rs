//! The twin prior as `infertune check` reports it: whether it applies to a space and why not,
//! and when it does, the twin's evaluation of the space.

use crate::sim::CardScale;
use crate::space::{Prior, StudySpec};

/// The twin prior as `check` reports it: what it says in one line, and its view of the space
/// when it applies.
pub(crate) struct TwinCheck {
    pub line: String,
    pub view: Option<crate::prior::twin::TwinView>,
}

/// Whether the twin prior applies to `space` and why not; when it does, its evaluation.
pub(crate) fn twin_check(space: &StudySpec) -> TwinCheck {
    use crate::prior::twin::{self, NoTwin};
    let said = |line: String| TwinCheck { line, view: None };
    let objective = match crate::exec::objective(space) {
        Ok(objective) => objective,
        Err(e) => return said(format!("Twin prior: cannot score the twin's runs ({e:#})")),
    };
    let seed = space.search.seed;
    match twin::view(space, space, &objective, CardScale::default(), seed) {
        Err(NoTwin::Off) => said(match twin::deployment(&twin_on(space)) {
            Ok(_) => "Twin prior: off (search.prior: twin would apply: the twin models this \
                      engine, card and model)"
                .into(),
            Err(why) => format!("Twin prior: off; it would not apply here: {why}"),
        }),
        Err(why) if space.search.prior == Prior::Default => said(format!(
            "Twin prior: not by default here ({why}); the expert prior runs"
        )),
        Err(why) => said(format!("Twin prior: does not apply: {why}")),
        Ok(view) => TwinCheck {
            line: format!(
                "Twin prior ({}): {} configs evaluated, {} predicted feasible",
                if space.search.prior == Prior::Default {
                    "the default here"
                } else {
                    "search.prior: twin"
                },
                view.trials.len(),
                view.predicted_feasible()
            ),
            view: Some(view),
        },
    }
}

/// `space` with `search.prior: twin`.
fn twin_on(space: &StudySpec) -> StudySpec {
    let mut twin = space.clone();
    twin.search.prior = Prior::Twin;
    twin
}
