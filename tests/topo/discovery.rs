//! Discovery on fixture sysfs trees and captured vendor-tool outputs.

use infertune::topo::{FixtureRunner, Topology, Vendor};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/topo")
        .join(name)
}

fn with_commands(tree: &str) -> Topology {
    let runner = FixtureRunner::from_dir(&fixture(tree).join("commands")).unwrap();
    Topology::from_root(fixture(tree), &runner).unwrap()
}

fn nodes_and_sources(topo: &Topology) -> Vec<(Option<u32>, Option<String>)> {
    topo.accelerators
        .iter()
        .map(|a| (a.numa_node, a.node_source.clone()))
        .collect()
}

fn set(ids: std::ops::RangeInclusive<u32>) -> BTreeSet<u32> {
    ids.collect()
}

#[test]
fn one_node_host_without_accelerators() {
    let topo = Topology::from_root(fixture("one-node"), &FixtureRunner::new()).unwrap();
    assert_eq!(topo.nodes.len(), 1);
    let node = &topo.nodes[0];
    assert_eq!(node.cpus, set(0..=1));
    assert_eq!(node.mem_total_bytes, Some(11_232_940 * 1024));
    assert_eq!(node.mem_free_bytes, Some(3_257_044 * 1024));
    assert_eq!(node.distances.get(&0), Some(&10));
    assert_eq!(topo.allowed.cpus, Some(set(0..=1)));
    assert_eq!(topo.allowed.mems, Some(set(0..=0)));
    assert!(topo.accelerators.is_empty(), "{:?}", topo.accelerators);
    assert_eq!(topo.numactl, None);
    assert!(topo.notes.is_empty(), "{:?}", topo.notes);
}

#[test]
fn two_socket_nvidia_from_nvidia_smi_and_sysfs() {
    let topo = with_commands("two-socket");
    assert_eq!(topo.nodes.len(), 2);
    assert_eq!(topo.nodes[1].distances.get(&0), Some(&21));
    assert_eq!(
        topo.accelerators.len(),
        8,
        "NIC rows and the BMC VGA are not accelerators"
    );
    let gpu0 = &topo.accelerators[0];
    assert_eq!(gpu0.vendor, Vendor::Nvidia);
    assert_eq!(gpu0.name, "NVIDIA H100 80GB HBM3");
    assert_eq!(gpu0.bus_id.as_deref(), Some("0000:18:00.0"));
    assert_eq!(gpu0.memory_mib, Some(81559));
    let sources = nodes_and_sources(&topo);
    assert_eq!(sources[0], (Some(0), Some("sysfs numa_node".into())));
    assert_eq!(sources[4], (Some(1), Some("sysfs numa_node".into())));
    // numa_node = -1 and nvidia-smi says N/A: the node comes from local_cpulist.
    assert_eq!(sources[7], (Some(1), Some("sysfs local_cpulist".into())));
    assert!(topo.numactl.is_some());
}

#[test]
fn generic_pci_scan_when_no_vendor_tool_answers() {
    let topo = Topology::from_root(fixture("two-socket"), &FixtureRunner::new()).unwrap();
    assert_eq!(topo.accelerators.len(), 8);
    assert!(topo.accelerators.iter().all(|a| a.vendor == Vendor::Pci));
    assert_eq!(
        topo.accelerators[0].name,
        "NVIDIA 10de:2330 (3D controller)"
    );
    assert_eq!(topo.accelerators[0].index, 0);
    let nodes: Vec<Option<u32>> = topo.accelerators.iter().map(|a| a.numa_node).collect();
    assert_eq!(nodes, [0, 0, 0, 0, 1, 1, 1, 1].map(Some));
}

#[test]
fn eight_node_host_like_seed_003_with_metax_on_even_nodes() {
    let topo = with_commands("eight-node");
    assert_eq!(topo.nodes.len(), 8);
    assert_eq!(topo.nodes[0].cpus, set(0..=15));
    assert_eq!(topo.nodes[7].cpus, set(112..=127));
    assert_eq!(topo.nodes[0].mem_free_bytes, Some(4950 * 1024 * 1024));
    assert_eq!(topo.nodes[0].distances.get(&4), Some(&28));
    assert_eq!(topo.nodes[0].distances.get(&1), Some(&22));
    let metax: Vec<_> = topo
        .accelerators
        .iter()
        .filter(|a| a.vendor == Vendor::Metax)
        .collect();
    assert_eq!(metax.len(), 4);
    assert_eq!(metax[0].memory_mib, Some(65536));
    assert_eq!(
        nodes_and_sources(&topo),
        vec![
            (Some(0), Some("sysfs numa_node".into())),
            (Some(2), Some("sysfs numa_node".into())),
            (Some(4), Some("mx-smi topo affinity".into())),
            (Some(6), Some("mx-smi topo affinity".into())),
        ]
    );
    assert_eq!(topo.accelerators[3].local_cpus, Some(set(96..=111)));
}

#[test]
fn seed_003_captured_mx_smi_puts_every_gpu_on_node_0() {
    let runner = FixtureRunner::from_dir(&fixture("captured/seed-003")).unwrap();
    let topo = Topology::from_root(fixture("eight-node"), &runner).unwrap();
    let bus: Vec<_> = topo
        .accelerators
        .iter()
        .map(|a| a.bus_id.clone().unwrap())
        .collect();
    assert_eq!(
        bus,
        [
            "0000:05:00.0",
            "0000:08:00.0",
            "0000:0e:00.0",
            "0000:0f:00.0"
        ]
    );
    // 05:00.0 has a sysfs entry in the tree (node 0); the rest rely on mx-smi's Node Affinity.
    assert!(topo.accelerators.iter().all(|a| a.numa_node == Some(0)));
    assert_eq!(
        topo.accelerators[1].node_source.as_deref(),
        Some("mx-smi topo affinity")
    );
}

#[test]
fn ascend_910b_nodes_follow_npu_smi_cpu_affinity() {
    let topo = with_commands("ascend-910b");
    assert_eq!(topo.accelerators.len(), 8);
    assert!(topo.accelerators.iter().all(|a| a.vendor == Vendor::Ascend));
    assert_eq!(topo.accelerators[0].bus_id.as_deref(), Some("0000:c1:00.0"));
    assert_eq!(topo.accelerators[0].memory_mib, Some(65536));
    let nodes: Vec<Option<u32>> = topo.accelerators.iter().map(|a| a.numa_node).collect();
    assert_eq!(nodes, [6, 6, 4, 4, 0, 0, 2, 2].map(Some));
    assert_eq!(
        topo.accelerators[0].node_source.as_deref(),
        Some("npu-smi CPU affinity")
    );
    let mut allowed = set(0..=23);
    allowed.extend(48..=71);
    assert_eq!(topo.allowed.cpus, Some(allowed));
    assert_eq!(topo.allowed.mems, Some([0, 2].into_iter().collect()));
}

#[test]
fn a_failing_vendor_tool_leaves_a_note_and_falls_back_to_pci() {
    let runner = FixtureRunner::new().with_program("nvidia-smi");
    let topo = Topology::from_root(fixture("two-socket"), &runner).unwrap();
    assert!(
        topo.notes
            .iter()
            .any(|n| n.contains("nvidia-smi") && n.contains("failed")),
        "{:?}",
        topo.notes
    );
    assert!(topo.accelerators.iter().all(|a| a.vendor == Vendor::Pci));
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn local_cpus_spanning_nodes_leave_the_node_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "sys/devices/system/node/node0/cpulist", "0-3\n");
    write(root, "sys/devices/system/node/node1/cpulist", "4-7\n");
    let dev = "sys/bus/pci/devices/0000:17:00.0";
    write(root, &format!("{dev}/class"), "0x120000\n");
    write(root, &format!("{dev}/vendor"), "0x19e5\n");
    write(root, &format!("{dev}/device"), "0xd802\n");
    write(root, &format!("{dev}/numa_node"), "-1\n");
    write(root, &format!("{dev}/local_cpulist"), "0-7\n");
    let topo = Topology::from_root(root, &FixtureRunner::new()).unwrap();
    assert_eq!(topo.accelerators.len(), 1);
    assert_eq!(
        topo.accelerators[0].name,
        "Huawei 19e5:d802 (processing accelerator)"
    );
    assert_eq!(topo.accelerators[0].numa_node, None);
    assert!(
        topo.notes.iter().any(|n| n.contains("span nodes 0-1")),
        "{:?}",
        topo.notes
    );
}

#[test]
fn a_host_without_numa_sysfs_is_one_node() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "sys/devices/system/cpu/online", "0-3\n");
    write(
        dir.path(),
        "proc/meminfo",
        "MemTotal:  8000000 kB\nMemFree:  6000000 kB\n",
    );
    let topo = Topology::from_root(dir.path(), &FixtureRunner::new()).unwrap();
    assert_eq!(topo.nodes.len(), 1);
    assert_eq!(topo.nodes[0].cpus, set(0..=3));
    assert_eq!(topo.nodes[0].mem_free_bytes, Some(6_000_000 * 1024));
    assert!(
        topo.notes.iter().any(|n| n.contains("one node")),
        "{:?}",
        topo.notes
    );
}

#[test]
fn a_malformed_cpulist_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "sys/devices/system/node/node0/cpulist", "0-x\n");
    let err = Topology::from_root(dir.path(), &FixtureRunner::new()).unwrap_err();
    let text = format!("{err:#}");
    assert!(
        text.contains("node0") && text.contains("cpulist") && text.contains("0-x"),
        "{text}"
    );
}

#[test]
fn a_transcript_without_its_command_line_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "mx-smi.txt", "Attached GPUs : 4\n");
    let err = FixtureRunner::from_dir(dir.path()).unwrap_err();
    assert!(err.to_string().contains("$ <command line>"), "{err}");
}
