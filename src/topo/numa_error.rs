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
    /// Bindings were requested but numactl is not installed.
    #[error("numactl is not installed, but NUMA bindings were requested; install it (`apt-get install numactl`, or `yum install numactl`) or set the numa candidates to [none]")]
    NumactlMissing,
}
