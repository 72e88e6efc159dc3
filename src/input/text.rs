//! Reading input files as UTF-8 text (and JSON / JSON Lines read from it). Bytes that are
//! not UTF-8 are an error located at file, line and column, never replaced or skipped.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::error::{Error, Location, Result};

/// The whole file as text. Only a regular file is read: a FIFO, socket or device is an error
/// before anything waits on it (the file is opened without blocking, then checked).
pub fn read(path: &Path) -> Result<String> {
    let bytes = read_regular(path)?;
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let bad = e.utf8_error().valid_up_to();
        let line_start = bytes[..bad].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let line = bytes[..bad].iter().filter(|&&b| b == b'\n').count() + 1;
        not_utf8(path, line, &bytes[line_start..], bad - line_start)
    })
}

/// A document's text: [`read`], with every line ending (CRLF, and a lone CR as classic Mac
/// files write) made `\n`, so that front matter, headings and lines are found the same way
/// whatever wrote the file.
pub fn document(path: &Path) -> Result<String> {
    let text = read(path)?;
    Ok(if text.contains('\r') { text.replace("\r\n", "\n").replace('\r', "\n") } else { text })
}

/// The largest file read whole as text (an experiment, a golden set, judgments, a replay, a
/// document): 1 GiB. A larger one is refused with its size before a byte is read.
pub const MAX_TEXT_BYTES: u64 = 1 << 30;

/// The largest site configuration read (`mkdocs.yml`): 1 MiB.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// A site's configuration file as text, when it is a regular file of its folder (not a link,
/// which could lead anywhere) of at most [`MAX_CONFIG_BYTES`]; `None` otherwise, so a link to
/// a 2 GiB file is never read.
pub fn site_config(path: &Path) -> Option<String> {
    if !std::fs::symlink_metadata(path).ok()?.file_type().is_file() {
        return None;
    }
    String::from_utf8(read_bytes(path, MAX_CONFIG_BYTES).ok()?).ok()
}

/// The longest line of a file read line by line (a JSONL corpus or golden set): 256 MiB.
pub const MAX_LINE_BYTES: u64 = 256 << 20;

fn read_regular(path: &Path) -> Result<Vec<u8>> {
    read_bytes(path, MAX_TEXT_BYTES)
}

/// The bytes of the regular file `path` (never waiting on a FIFO), refused with its size when
/// it holds more than `cap`.
pub fn read_bytes(path: &Path, cap: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let (mut file, len) = open_regular(path)?;
    if len > cap {
        return Err(Error::input(
            Location::file(path),
            format!("{len} bytes, over the cap of {cap} bytes for a file read whole: not read"),
        ));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
    Ok(bytes)
}

/// The file open for reading, and its size, when it is a regular file; opened without
/// blocking, so a FIFO is refused instead of waiting for a writer.
pub fn open_regular(path: &Path) -> Result<(File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(Error::input(Location::file(path), "not a regular file (a FIFO, socket or device): not read"));
    }
    Ok((file, meta.len()))
}

/// The byte offset of every character of `text`, then its end: `[i]` is where character `i`
/// starts, and a byte offset's character is its `partition_point`.
pub fn char_offsets(text: &str) -> Vec<usize> {
    text.char_indices().map(|(b, _)| b).chain(std::iter::once(text.len())).collect()
}

/// `text` with U+0000 as a space: PostgreSQL's text refuses it, so documents and questions carry
/// none to any engine (one byte for one byte: no offset moves).
pub fn without_nul(text: String) -> String {
    if text.contains('\0') {
        text.replace('\0', " ")
    } else {
        text
    }
}

/// The file's lines, numbered from 1, without their line ends; a line longer than
/// [`MAX_LINE_BYTES`] is an error at its line, found before more of it is held.
pub fn lines(path: &Path) -> Result<impl Iterator<Item = Result<(usize, String)>> + '_> {
    use std::io::Read;
    let (file, _) = open_regular(path)?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut number = 0;
    let mut done = false;
    Ok(std::iter::from_fn(move || {
        if done {
            return None;
        }
        number += 1;
        let mut bytes = Vec::new();
        match (&mut reader).take(MAX_LINE_BYTES + 1).read_until(b'\n', &mut bytes) {
            Err(e) => {
                done = true;
                return Some(Err(Error::io(path, e)));
            }
            Ok(0) => return None,
            Ok(_) => {}
        }
        if bytes.last() == Some(&b'\n') {
            bytes.pop();
        } else if bytes.len() as u64 > MAX_LINE_BYTES {
            done = true;
            return Some(Err(Error::input(
                Location::line(path, number),
                format!("a line over the cap of {MAX_LINE_BYTES} bytes: not read"),
            )));
        }
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        Some(
            String::from_utf8(bytes)
                .map(|s| (number, s))
                .map_err(|e| not_utf8(path, number, e.as_bytes(), e.utf8_error().valid_up_to())),
        )
    }))
}

/// A JSON document of type `T` (`what` names it in the error, located at line and column).
pub fn json<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> Result<T> {
    serde_json::from_str(&read(path)?).map_err(|e| {
        Error::input(
            Location { path: path.to_path_buf(), line: e.line(), column: e.column() },
            format!("not a ragsweep {what}: {e}"),
        )
    })
}

/// One `T` per non-blank line; a bad line is an error at its line.
pub fn jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let mut out = Vec::new();
    for line in lines(path)? {
        let (line_no, line) = line?;
        if !line.trim().is_empty() {
            out.push(
                serde_json::from_str(&line).map_err(|e| Error::input(Location::line(path, line_no), e.to_string()))?,
            );
        }
    }
    Ok(out)
}

/// `line` holds a byte that is not UTF-8 at `bad`.
fn not_utf8(path: &Path, line: usize, line_bytes: &[u8], bad: usize) -> Error {
    let column = String::from_utf8_lossy(&line_bytes[..bad]).chars().count() + 1;
    Error::input(
        Location { path: path.to_path_buf(), line, column },
        format!("byte 0x{:02x} is not UTF-8: input files must be UTF-8 text", line_bytes[bad]),
    )
}

/// The run that opens a Markdown code fence at the start of `line` (three or more backticks,
/// or of tildes), which the line that closes the fence starts with too.
pub fn fence_marker(line: &str) -> Option<&str> {
    let c = line.chars().next().filter(|&c| c == '`' || c == '~')?;
    let len = line.len() - line.trim_start_matches(c).len();
    (len >= 3).then(|| &line[..len])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_that_are_not_utf8_are_located() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.txt");
        std::fs::write(&p, b"ok\nol\xe1 mundo\n").unwrap();
        let err = read(&p).unwrap_err().to_string();
        assert!(err.ends_with("f.txt:2:3: byte 0xe1 is not UTF-8: input files must be UTF-8 text"), "{err}");
        let err = lines(&p).unwrap().find_map(|l| l.err()).unwrap().to_string();
        assert!(err.contains("f.txt:2:3:"), "{err}");
        std::fs::write(&p, "a\r\nção\n").unwrap();
        let got: Vec<(usize, String)> = lines(&p).unwrap().map(|l| l.unwrap()).collect();
        assert_eq!(got, [(1, "a".to_string()), (2, "ção".to_string())]);
        std::fs::write(&p, "---\rtitle: x\r\nacl: [rh]\r---\r").unwrap();
        assert_eq!(document(&p).unwrap(), "---\ntitle: x\nacl: [rh]\n---\n");
    }
}
