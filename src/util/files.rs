//! Reading input files with a size limit, so a FIFO, a device such as `/dev/zero` or a huge
//! file given by mistake cannot hang the tool or eat its memory.

use std::io::Read;
use std::path::Path;

/// Reads the regular file at `path` as text (invalid UTF-8 replaced), refusing anything that
/// is not a regular file or holds more than `max_bytes`.
pub(crate) fn read_limited(path: &Path, max_bytes: u64) -> std::io::Result<String> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, device or folder cannot be read as one)",
        ));
    }
    let too_big = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than the limit of {}", size_text(max_bytes)),
        )
    };
    if meta.len() > max_bytes {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(max_bytes + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_big());
    }
    Ok(String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

fn size_text(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_devices_fifos_and_oversized_files() {
        let err = read_limited(Path::new("/dev/zero"), 1024).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let err = read_limited(&fifo, 1024).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'a'; 2048]).unwrap();
        let err = read_limited(&big, 1024).unwrap_err();
        assert!(err.to_string().contains("larger than the limit"), "{err}");
        std::fs::write(&big, "ok").unwrap();
        assert_eq!(read_limited(&big, 1024).unwrap(), "ok");
    }
}
