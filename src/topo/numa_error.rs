//! Why a `numa` parameter could not be resolved.

/// Why a `numa` parameter could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NumaError {
    /// A node id that the host does not have.
    #[error("NUMA node {node} does not exist on this host (nodes: {known}); use one of those")]
    UnknownNode {
        /// The id asked for.
        node: u32,
        /// The host's node ids.
        known: String,
    },
    /// An accelerator index that discovery did not find.
    #[error("accelerator {device} was not found (found: {known}); check the instance's device index or run `infertune topo`")]
    UnknownDevice {
        /// The index asked for.
        device: u32,
        /// The indices found.
        known: String,
    },
    /// An explicit candidate that is not a valid numactl option list for this host.
    #[error("numa candidate `{binding}`: {reason}")]
    BadBinding {
        /// The candidate as written.
        binding: String,
        /// What is wrong with it and how to fix it.
        reason: String,
    },
    /// An explicit list with nothing in it.
    #[error("the numa parameter lists no candidates; give at least `none`")]
    EmptyList,
    /// A binding chosen for one node that has no binding of the same kind on another.
    #[error("the binding `{binding}` has no counterpart on NUMA node {node} (its candidates there: {there}); add a binding of that kind for the node or leave it out of the slots")]
    NoCounterpart {
        /// The binding as chosen.
        binding: String,
        /// The node it was to move to.
        node: u32,
        /// That node's candidates.
        there: String,
    },
    /// Bindings were requested but numactl is not installed.
    #[error("numactl is not installed, but NUMA bindings were requested; install it (`apt-get install numactl`, or `yum install numactl`) or set the numa candidates to [none]")]
    NumactlMissing,
}
