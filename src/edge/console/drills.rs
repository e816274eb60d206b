//! The drill reports `serve` shows: `ringback drill … --json` output saved as `*.json` files in
//! `RINGBACK_DRILL_REPORTS`, newest first. A file that cannot be read or parsed is shown as such,
//! never trusted further.

use std::path::Path;

/// At most this many files are read per page.
pub const LATEST: usize = 10;
/// A larger file is not read.
pub const MAX_FILE: u64 = 4 * 1024 * 1024;

/// One saved file.
#[derive(Debug, Clone)]
pub struct ReportFile {
    /// The file's name in `RINGBACK_DRILL_REPORTS` (its heading on the Drills page).
    pub name: String,
    /// Modification time (ms since the epoch).
    pub modified_ms: Option<i64>,
    /// The reports in it (`--json` prints an array; a single object is taken too), or why not.
    pub reports: Result<Vec<serde_json::Value>, String>,
}

/// The newest [`LATEST`] `*.json` files of `dir`.
pub fn latest(dir: &Path) -> Result<Vec<ReportFile>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut files: Vec<(Option<std::time::SystemTime>, std::path::PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .map(|p| (std::fs::metadata(&p).and_then(|m| m.modified()).ok(), p))
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
    Ok(files
        .into_iter()
        .take(LATEST)
        .map(|(modified, path)| ReportFile {
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            modified_ms: modified
                .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_millis() as i64),
            reports: read(&path),
        })
        .collect())
}

fn read(path: &Path) -> Result<Vec<serde_json::Value>, String> {
    let len = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if len > MAX_FILE {
        return Err(format!("{len} bytes: larger than {MAX_FILE}, not read"));
    }
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(serde_json::Value::Array(reports)) => Ok(reports),
        Ok(report @ serde_json::Value::Object(_)) => Ok(vec![report]),
        Ok(_) => Err("not a drill report (expected an array of reports)".into()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_first_and_broken_files_say_why() {
        let dir = tempfile_dir();
        std::fs::write(dir.join("a.json"), r#"[{"drill":"stall","ok":true}]"#).unwrap();
        std::fs::write(dir.join("b.json"), "not json").unwrap();
        std::fs::write(dir.join("c.txt"), "ignored").unwrap();
        let files = latest(&dir).unwrap();
        assert_eq!(files.len(), 2);
        let a = files.iter().find(|f| f.name == "a.json").unwrap();
        assert_eq!(a.reports.as_ref().unwrap()[0]["drill"], "stall");
        let b = files.iter().find(|f| f.name == "b.json").unwrap();
        assert!(b.reports.as_ref().unwrap_err().starts_with("not JSON"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(latest(&dir).unwrap_err().contains("cannot read"));
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!(
            "ringback-drill-reports-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
