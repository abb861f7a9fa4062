//! The study folder's disk fails in the middle of a study: it fills up, or turns read-only. The
//! results folder is a small tmpfs that each test mounts and unmounts itself (mounting needs
//! root). The tuner stops with a message naming the path and the cause, leaves no server
//! running, and `--resume` once the disk is writable again ends the study with every earlier
//! record unchanged, none twice, and no torn line.

use crate::kit::e2e_sim_common::{
    finish, processes_under, records_so_far, space_with_port, strictly_parsed, tune,
    wait_no_processes_under, wait_while_running, STUDY,
};
use crate::kit::study_fakes::search_configs;
use infertune::record::{Outcome, TrialRecord};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Search trials asked.
const TRIALS: &str = "6";

/// A tmpfs mounted at a folder of its own, unmounted on drop.
struct Tmpfs {
    at: PathBuf,
}

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(at).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status();
        assert!(
            mounted.is_ok_and(|s| s.success()),
            "cannot mount a tmpfs at {} (this test needs root)",
            at.display()
        );
        Tmpfs {
            at: at.to_path_buf(),
        }
    }

    /// Lay a read-only view of the folder over it (the tuner's open files keep writing,
    /// every new write through the path fails); [`Tmpfs::writable`] lifts it.
    fn read_only(&self) {
        self.bind_over();
        self.make_view_read_only();
    }

    /// Lay a second view of the folder over it, still writable.
    fn bind_over(&self) {
        let at = self.at.as_os_str();
        run("mount", &["--bind".as_ref(), at, at]);
    }

    /// Make the view [`Tmpfs::bind_over`] laid read-only. The kernel refuses (busy) while a
    /// file opened through the view is open for writing, so this tries again until it is
    /// closed, for up to a minute.
    fn make_view_read_only(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let remounted = Command::new("mount")
                .args(["-o", "remount,bind,ro"])
                .arg(&self.at)
                .stderr(Stdio::null())
                .status()
                .unwrap();
            if remounted.success() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{}: the view stayed busy for a minute",
                self.at.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn writable(&self) {
        run("umount", &[self.at.as_os_str()]);
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        for pid in processes_under(&self.at) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        // The read-only view, if left, then the tmpfs.
        for _ in 0..2 {
            let _ = Command::new("umount")
                .arg(&self.at)
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Run `program` with `args`; it must succeed.
fn run(program: &str, args: &[&std::ffi::OsStr]) {
    let done = Command::new(program).args(args).status().unwrap();
    assert!(done.success(), "{program} {args:?} failed");
}

#[test]
#[ignore = "mounts a tmpfs: needs root (run with --include-ignored)"]
fn a_full_disk_stops_the_study_and_the_resume_loses_nothing() {
    disk_fails_mid_study(18680, |disk| {
        let filler = disk.at.join("filler");
        let mut file = std::fs::File::create(&filler).unwrap();
        let chunk = vec![0u8; 64 << 10];
        while file.write_all(&chunk).is_ok() {}
        let _ = file.sync_all();
        Box::new(move |_: &Tmpfs| {
            let _ = std::fs::remove_file(&filler);
        })
    });
}

#[test]
#[ignore = "mounts a tmpfs: needs root (run with --include-ignored)"]
fn a_read_only_folder_stops_the_study_and_the_resume_loses_nothing() {
    disk_fails_mid_study(18690, |disk| {
        disk.read_only();
        Box::new(|disk: &Tmpfs| disk.writable())
    });
}

#[test]
#[ignore = "mounts a tmpfs: needs root (run with --include-ignored)"]
fn the_view_turns_read_only_once_a_file_opened_through_it_is_closed() {
    // The tuner may open a file through the new view between the bind and the remount; the
    // kernel refuses the remount (busy) while that file is open for writing.
    let tmp = tempfile::tempdir().unwrap();
    let disk = Tmpfs::mount(&tmp.path().join("results"), "1m");
    disk.bind_over();
    let writer = std::fs::File::create(disk.at.join("opened-between")).unwrap();
    let closer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        drop(writer);
    });
    disk.make_view_read_only();
    closer.join().unwrap();
    let refused = std::fs::File::create(disk.at.join("after")).unwrap_err();
    assert_eq!(refused.raw_os_error(), Some(nix::libc::EROFS));
}

/// A study on a fresh tmpfs whose disk `fail` breaks once two trials are journaled; the repair
/// `fail` returns makes it writable again before the resume.
fn disk_fails_mid_study(port: u16, fail: impl FnOnce(&Tmpfs) -> Box<dyn FnOnce(&Tmpfs)>) {
    let tmp = tempfile::tempdir().unwrap();
    let disk = Tmpfs::mount(&tmp.path().join("results"), "32m");
    let space = space_with_port(tmp.path(), port);
    let study = disk.at.join(STUDY);
    let log = tmp.path().join("tune.log");
    let mut tuner = tune(&space, &disk.at, &["--trials", TRIALS])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let reached = wait_while_running(&mut tuner, || records_so_far(&study).len() >= 2);
    assert!(reached, "the study ended before two trials were journaled");
    let repair = fail(&disk);
    let status = tuner.wait().unwrap();
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(!status.success(), "the tuner went on: {said}");
    let error = said
        .lines()
        .find(|l| l.starts_with("error"))
        .unwrap_or_default();
    assert!(
        error.contains(&study.display().to_string())
            && (error.contains("No space left on device") || error.contains("Read-only")),
        "the message names neither the path nor the cause: {said}"
    );
    assert_eq!(wait_no_processes_under(&disk.at, 5.0), Vec::<i32>::new());
    let kept = strictly_parsed(&study);

    repair(&disk);
    finish(tune(&space, &disk.at, &["--trials", TRIALS, "--resume"]));
    let done = strictly_parsed(&study);
    assert_eq!(&done[..kept.len()], &kept[..], "a journaled trial changed");
    let blamed: Vec<&TrialRecord> = done
        .iter()
        .filter(|r| match &r.outcome {
            Outcome::Failed { message, .. } => {
                message.contains("No space left") || message.contains("Read-only")
            }
            _ => false,
        })
        .collect();
    assert!(
        blamed.is_empty(),
        "the disk's fault was recorded: {blamed:#?}"
    );
    let numbers: Vec<u32> = done.iter().map(|r| r.id.number).collect();
    assert_eq!(numbers, (0..done.len() as u32).collect::<Vec<_>>());
    assert_eq!(
        search_configs(&done).len(),
        TRIALS.parse::<usize>().unwrap()
    );
    assert!(processes_under(&disk.at).is_empty());
}
