//! Row-major f32 matrices as NumPy `.npy` files (format 1.0), so vectors can be shared with
//! numpy, faiss or hnswlib without a conversion step.

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

/// The largest vector file read (16 GiB: 10 million 384-dimensional vectors take 15 GiB).
pub const MAX_NPY_BYTES: u64 = 16 << 30;

/// The largest `.npy` header read.
const MAX_HEADER_BYTES: usize = 1 << 16;

/// A 2-D little-endian f32 C-order `.npy` file whose header has been read, its data not yet:
/// what the header says can be checked (rows against ids, columns against a model) before
/// gigabytes are read.
pub struct Npy {
    file: std::fs::File,
    path: std::path::PathBuf,
    pub rows: usize,
    pub cols: usize,
    data_len: u64,
}

impl Npy {
    /// Opens a regular file only (never waiting on a FIFO) and reads its header: a file whose
    /// size is not what its shape says, or over [`MAX_NPY_BYTES`], is refused here.
    pub fn open(path: &Path) -> Result<Npy> {
        use std::io::Read;
        let (mut file, size) = crate::input::text::open_regular(path)?;
        let bad = |why: &str| Error::input(crate::error::Location::file(path), why);
        let mut head = [0u8; 12];
        let got = file.read(&mut head).map_err(|e| Error::io(path, e))?;
        if got < 10 || &head[..6] != b"\x93NUMPY" {
            return Err(bad("not a .npy file"));
        }
        let (len_bytes, start) = match head[6] {
            1 => (2, 10),
            2 | 3 => (4, 12),
            v => return Err(bad(&format!(".npy format version {v} is not supported"))),
        };
        let header_len = if len_bytes == 2 {
            u16::from_le_bytes([head[8], head[9]]) as usize
        } else {
            u32::from_le_bytes(head[8..12].try_into().expect("4 bytes")) as usize
        };
        if header_len > MAX_HEADER_BYTES || (start + header_len) as u64 > size {
            return Err(bad("truncated or oversized header"));
        }
        let mut header = vec![0u8; start + header_len];
        header[..got].copy_from_slice(&head[..got]);
        file.read_exact(&mut header[got..]).map_err(|_| bad("truncated header"))?;
        let header = std::str::from_utf8(&header[start..]).map_err(|_| bad("header is not text"))?;
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
        let data_len = size - (start + header_len) as u64;
        if rows.checked_mul(cols).and_then(|n| n.checked_mul(4)).map(|n| n as u64) != Some(data_len) {
            return Err(bad(&format!("{data_len} data bytes for shape ({rows}, {cols})")));
        }
        if size > MAX_NPY_BYTES {
            return Err(bad(&format!("{size} bytes, over the cap of {MAX_NPY_BYTES} bytes for a vector file")));
        }
        Ok(Npy { file, path: path.to_path_buf(), rows, cols, data_len })
    }

    /// The values, row after row.
    pub fn values(mut self) -> Result<Vec<f32>> {
        use std::io::Read;
        let mut data = Vec::with_capacity(self.data_len as usize);
        self.file.read_to_end(&mut data).map_err(|e| Error::io(&self.path, e))?;
        if data.len() as u64 != self.data_len {
            return Err(Error::input(crate::error::Location::file(&self.path), "the file changed while it was read"));
        }
        Ok(data.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))).collect())
    }
}

/// Reads a 2-D little-endian f32 C-order `.npy` file whole: (values, columns).
pub fn read_f32(path: &Path) -> Result<(Vec<f32>, usize)> {
    let npy = Npy::open(path)?;
    let cols = npy.cols;
    Ok((npy.values()?, cols))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

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
