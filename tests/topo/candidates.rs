//! Binding candidates and the `numa` parameter on fixture hosts.

use infertune::space::NumaCandidates;
use infertune::topo::{
    numactl_available, resolve_numa_candidates, resolve_numa_choices, FixtureRunner, NumaError,
    Topology,
};
use std::path::{Path, PathBuf};

const GIB: u64 = 1 << 30;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/topo")
        .join(name)
}

fn host(tree: &str) -> Topology {
    let commands = fixture(tree).join("commands");
    let runner = if commands.is_dir() {
        FixtureRunner::from_dir(&commands).unwrap()
    } else {
        FixtureRunner::new()
    };
    Topology::from_root(fixture(tree), &runner).unwrap()
}

fn list(values: &[&str]) -> NumaCandidates {
    NumaCandidates::List(values.iter().map(|v| v.to_string()).collect())
}

#[test]
fn one_node_host_offers_only_none_with_a_note() {
    let topo = host("one-node");
    let c = topo.candidates(Some(0), None).unwrap();
    assert_eq!(c.values(), ["none"]);
    assert!(c.notes[0].contains("only `none`"), "{:?}", c.notes);
    // No numactl on that host, and none is needed.
    let values = resolve_numa_candidates(&NumaCandidates::Auto, &topo, None, None).unwrap();
    assert_eq!(values, ["none"]);
}

#[test]
fn accelerator_local_candidates_on_the_seed_003_host() {
    let topo = host("eight-node");
    let c = topo.candidates(Some(0), None).unwrap();
    assert_eq!(
        c.values(),
        [
            "none",
            "-N 0 -m 0",
            "-N 0 --preferred=0",
            "-C 0-15 -m 0",
            "-N 0,1 --interleave=0,1",
        ]
    );
    // Node 4's nearest neighbours are 1, 5, 6, 7 (all at 22): the lowest id wins.
    let c4 = topo.candidates(Some(4), None).unwrap();
    assert!(
        c4.values().contains(&"-N 4,1 --interleave=4,1".to_string()),
        "{:?}",
        c4.values()
    );
}

#[test]
fn membind_is_skipped_when_the_node_lacks_free_memory() {
    let topo = host("eight-node");
    // Node 0 has 4950 MB free (seed 003), below an 8 GiB floor.
    let c = topo.candidates(Some(0), Some(8 * GIB)).unwrap();
    assert_eq!(
        c.values(),
        ["none", "-N 0 --preferred=0", "-N 0,1 --interleave=0,1"]
    );
    assert!(
        c.notes
            .iter()
            .any(|n| n.starts_with("warning") && n.contains("node 0")),
        "{:?}",
        c.notes
    );
    // Node 1 has 12524 MB free: kept.
    let c1 = topo.candidates(Some(1), Some(8 * GIB)).unwrap();
    assert!(c1.values().contains(&"-N 1 -m 1".to_string()));
}

#[test]
fn unknown_node_is_an_error_listing_the_nodes() {
    let err = host("eight-node").candidates(Some(9), None).unwrap_err();
    assert_eq!(
        err,
        NumaError::UnknownNode {
            node: 9,
            known: "0-7".into()
        }
    );
    assert!(err.to_string().contains("nodes: 0-7"));
}

#[test]
fn without_an_accelerator_node_each_node_gets_a_whole_node_binding() {
    let c = host("two-socket").candidates(None, None).unwrap();
    assert_eq!(c.values(), ["none", "-N 0 -m 0", "-N 1 -m 1"]);
    assert!(c.notes.iter().any(|n| n.contains("no accelerator node")));
}

#[test]
fn container_limits_decide_what_can_be_bound() {
    let topo = host("ascend-910b");
    // Node 6 is outside the allowed cpuset: nothing but none.
    let c6 = topo.candidates(Some(6), None).unwrap();
    assert_eq!(c6.values(), ["none"]);
    assert!(c6.notes[0].contains("allowed"), "{:?}", c6.notes);
    // Node 0's nearest node (1) is not allowed, so the interleave partner is node 2.
    let c0 = topo.candidates(Some(0), None).unwrap();
    assert_eq!(
        c0.values(),
        [
            "none",
            "-N 0 -m 0",
            "-N 0 --preferred=0",
            "-C 0-23 -m 0",
            "-N 0,2 --interleave=0,2"
        ]
    );
}

#[test]
fn auto_follows_the_instance_accelerator() {
    let topo = host("eight-node");
    let values = resolve_numa_candidates(&NumaCandidates::Auto, &topo, Some(2), None).unwrap();
    assert_eq!(values[1], "-N 4 -m 4");
    let err = resolve_numa_candidates(&NumaCandidates::Auto, &topo, Some(9), None).unwrap_err();
    assert!(
        matches!(err, NumaError::UnknownDevice { device: 9, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("found: 0-3"), "{err}");
}

#[test]
fn auto_without_a_device_uses_the_node_all_accelerators_share() {
    // Seed 003's own mx-smi output: all four GPUs on node 0. The measured winner
    // (`numactl -N0 -m0`, +13%) is a candidate; the measured losers are not.
    let runner = FixtureRunner::from_dir(&fixture("captured/seed-003")).unwrap();
    let topo = Topology::from_root(fixture("eight-node"), &runner).unwrap();
    let values = resolve_numa_candidates(&NumaCandidates::Auto, &topo, None, None).unwrap();
    assert!(values.contains(&"-N 0 -m 0".to_string()), "{values:?}");
    assert!(!values
        .iter()
        .any(|v| v.contains("0,2,4,6") || v.contains("0,1,2,3")));
    // GPUs on different nodes: no shared node, so whole-node bindings for each node.
    let spread = host("eight-node");
    let choices = resolve_numa_choices(&NumaCandidates::Auto, &spread, None, None).unwrap();
    assert_eq!(choices.bindings.len(), 9, "{:?}", choices.values());
}

#[test]
fn explicit_lists_pass_through_validated_and_deduplicated() {
    let topo = host("eight-node");
    let values = resolve_numa_candidates(
        &list(&[
            "none",
            "-N0 -m0",
            "--cpunodebind=0,2,4,6 --membind=0,2,4,6",
            "-C 0-15 -l",
            "none",
        ]),
        &topo,
        Some(0),
        None,
    )
    .unwrap();
    assert_eq!(
        values,
        [
            "none",
            "-N0 -m0",
            "--cpunodebind=0,2,4,6 --membind=0,2,4,6",
            "-C 0-15 -l"
        ]
    );
}

#[test]
fn bad_explicit_entries_say_what_is_wrong() {
    let topo = host("eight-node");
    let reason = |entry: &str| -> String {
        resolve_numa_candidates(&list(&[entry]), &topo, None, None)
            .unwrap_err()
            .to_string()
    };
    assert!(reason("-N 9 -m 9").contains("node 9 does not exist"));
    assert!(reason("-C 0-200").contains("CPU 128 does not exist"));
    assert!(reason("numactl -N 0").contains("drop the leading `numactl`"));
    assert!(reason("--huge").contains("unsupported numactl option `--huge`"));
    assert!(reason("-m").contains("needs a list"));
    assert!(reason("-N 0 vllm").contains("`vllm` is not a numactl option"));
    assert!(reason("-N '0").contains("unbalanced quotes"));
    assert!(reason("--localalloc=1").contains("takes no value"));
    assert_eq!(
        resolve_numa_candidates(&list(&[]), &topo, None, None).unwrap_err(),
        NumaError::EmptyList
    );
}

#[test]
fn bindings_without_numactl_fail_with_an_install_hint() {
    // The eight-node tree without its `commands/` folder: no numactl on that host.
    let topo = Topology::from_root(fixture("eight-node"), &FixtureRunner::new()).unwrap();
    let err = resolve_numa_candidates(&NumaCandidates::Auto, &topo, None, None).unwrap_err();
    assert_eq!(err, NumaError::NumactlMissing);
    assert!(err.to_string().contains("apt-get install numactl"));
    // `none` alone never needs numactl.
    assert_eq!(
        resolve_numa_candidates(&list(&["none"]), &topo, None, None).unwrap(),
        ["none"]
    );
}

#[test]
fn numactl_lookup_answers_with_a_path_or_the_hint() {
    match numactl_available() {
        Ok(path) => assert!(
            path.is_file() && path.ends_with("numactl"),
            "{}",
            path.display()
        ),
        Err(e) => assert!(e.to_string().contains("apt-get install numactl"), "{e}"),
    }
}
