//! The repository speaks of the product, not of how it was made: no line in the docs, the
//! code, the scripts, the model or the shipped files names a work session, an issue number, a
//! stop, "this machine", the day of a run, or a commit (outside `CHANGELOG.md`, whose subject is
//! change). The patterns are narrow on purpose: "session" alone is a product word (console
//! sign-in sessions), and a BullMQ or Twilio reference may cite its own tracker.

use std::path::{Path, PathBuf};

const ROOTS: &[&str] = &[
    "README.md",
    "CONTRIBUTING.md",
    "Dockerfile",
    "Cargo.toml",
    "docs",
    "src",
    "crates",
    "lua",
    "tests",
    "benches",
    "examples",
    "scripts",
    "deploy",
    "model",
    "node-harness/README.md",
    "node-harness/COMPATIBILITY.md",
    "node-harness/package.json",
    "node-harness/bin",
    "node-harness/lib",
    "node-harness/test",
    "node-harness/differential",
];

/// Every text file under `path`.
fn files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let Ok(entries) = std::fs::read_dir(path) else {
            return;
        };
        for entry in entries.flatten() {
            files(&entry.path(), out);
        }
    } else if path.is_file() {
        out.push(path.to_path_buf());
    }
}

#[test]
fn no_line_speaks_of_how_the_product_was_made() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let everywhere = regex::Regex::new(
        r"(?i)\bsessions? \d+|\bissues? #?\d+\b|\bthis (?:2-core )?machine\b|\bthat day\b|\bstop \d+\b|\brun after run\b|\bcommit [0-9a-f]{7,40}\b|@[0-9a-f]{7,40}\b",
    )
    .expect("pattern");
    // a date in prose is a run's date; the Twilio API's version (2010-04-01) is a product string
    let prose_date = regex::Regex::new(r"\b20(?:1[1-9]|[2-9]\d)-\d\d-\d\d\b").expect("pattern");
    let this_file = root.join("tests/it/history_words.rs");
    let mut found = vec![];
    let mut paths = vec![];
    for r in ROOTS {
        files(&root.join(r), &mut paths);
    }
    for path in paths.iter().filter(|p| **p != this_file) {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue; // not text
        };
        let prose = path
            .extension()
            .is_some_and(|e| e == "md" || e == "yml" || e == "service" || e == "pml")
            || path.starts_with(root.join("scripts"));
        for (n, line) in text.lines().enumerate() {
            if everywhere.is_match(line) || (prose && prose_date.is_match(line)) {
                let rel = path.strip_prefix(root).unwrap_or(path);
                found.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "lines that speak of how the product was made (say it as rationale, or move it to a \
         commit message):\n{}",
        found.join("\n")
    );
}
