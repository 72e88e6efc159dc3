//! Row-major f32 matrices as NumPy `.npy` files (format 1.0), so vectors can be shared with
//! numpy, faiss or hnswlib without a conversion step.

use std::fs;
use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

const MAGIC: &[u8] = b"\x93NUMPY\x01\x00";

/// Writes `rows × cols` little-endian f32 values (through a temporary file).
pub fn write_f32(path: &Path, values: &[f32], cols: usize) -> Result<()> {
    assert!(cols > 0 && values.len().is_multiple_of(cols));
    let mut header =
        format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {cols}), }}", values.len() / cols);
    // Magic, version and length take 10 bytes; the header ends in '\n' at a multiple of 64.
    let padded = (10 + header.len() + 1).div_ceil(64) * 64;
    header.push_str(&" ".repeat(padded - 10 - header.len() - 1));
    header.push('\n');
    crate::atomic::write_atomic_with(path, |out| {
        out.write_all(MAGIC)?;
        out.write_all(&(header.len() as u16).to_le_bytes())?;
        out.write_all(header.as_bytes())?;
        values.iter().try_for_each(|v| out.write_all(&v.to_le_bytes()))
    })
}

/// Reads a 2-D little-endian f32 C-order `.npy` file: (values, columns).
pub fn read_f32(path: &Path) -> Result<(Vec<f32>, usize)> {
    let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
    let bad = |why: &str| Error::Other(format!("{}: {why}", path.display()));
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("not a .npy file"));
    }
    let (len_bytes, start) = match bytes[6] {
        1 => (2, 10),
        2 | 3 => (4, 12),
        v => return Err(bad(&format!(".npy format version {v} is not supported"))),
    };
    let header_len = if len_bytes == 2 {
        u16::from_le_bytes([bytes[8], bytes[9]]) as usize
    } else {
        u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize
    };
    let header = bytes.get(start..start + header_len).ok_or_else(|| bad("truncated header"))?;
    let header = std::str::from_utf8(header).map_err(|_| bad("header is not text"))?;
    if !header.contains("'descr': '<f4'") || !header.contains("'fortran_order': False") {
        return Err(bad("expected little-endian float32 in C order ('<f4', fortran_order False)"));
    }
    let shape = header
        .split("'shape': (")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| bad("header has no shape"))?;
    let dims: Vec<usize> = shape
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().map_err(|_| bad("shape is not a list of sizes")))
        .collect::<Result<_>>()?;
    let [rows, cols] = dims[..] else { return Err(bad("expected a 2-D array")) };
    if rows == 0 || cols == 0 {
        return Err(bad(&format!("shape ({rows}, {cols}) holds no vectors")));
    }
    let data = &bytes[start + header_len..];
    if rows.checked_mul(cols).and_then(|n| n.checked_mul(4)) != Some(data.len()) {
        return Err(bad(&format!("{} data bytes for shape ({rows}, {cols})", data.len())));
    }
    Ok((data.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))).collect(), cols))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_numpy_layout() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.npy");
        let values = [0.5f32, -1.0, 2.25, 3.0, 0.0, 1e-7];
        write_f32(&path, &values, 3).unwrap();
        let bytes = fs::read(&path).unwrap();
        assert_eq!((bytes.len() - 24) % 64, 0, "data starts at a multiple of 64");
        assert!(std::str::from_utf8(&bytes[10..bytes.len() - 24]).unwrap().contains("'shape': (2, 3)"));
        assert_eq!(read_f32(&path).unwrap(), (values.to_vec(), 3));
        fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(read_f32(&path).unwrap_err().to_string().contains("data bytes"));
    }
}
