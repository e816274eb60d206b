//! The floors, checked where Cargo cannot: Cargo refuses an import of a crate a package does not
//! depend on, and a cycle; it does not know which dependencies the design allows. Each floor is a
//! crate, and each may depend on its own floor's crates and the floors below it, never one above.
//! `docs/architecture.md` draws the same table.
//!
//! | floor | crate | may use |
//! |---|---|---|
//! | shared | `ringback-shared` | nothing of ringback |
//! | storage | `ringback-store` | shared |
//! | provider | `ringback-twilio` | shared |
//! | queue | `ringback-queue` | shared, storage |
//! | callbacks | `ringback-callbacks` | shared, storage, provider, queue |
//! | simulator | `ringback-twilio-sim` | shared, provider |
//! | edge | `ringback` (the root package: `src/`) | every floor |
//!
//! And one size rule: no file under a crate's `src/` grows past 500 lines, so a reader finds one
//! concept per file.

use std::path::{Path, PathBuf};

/// The ringback crates a crate may depend on.
fn may_use(krate: &str) -> Option<&'static [&'static str]> {
    Some(match krate {
        "ringback-shared" => &[],
        "ringback-store" | "ringback-twilio" => &["ringback-shared"],
        "ringback-queue" => &["ringback-shared", "ringback-store"],
        "ringback-callbacks" => &[
            "ringback-shared",
            "ringback-store",
            "ringback-twilio",
            "ringback-queue",
        ],
        "ringback-twilio-sim" => &["ringback-shared", "ringback-twilio"],
        "ringback" => &[
            "ringback-shared",
            "ringback-store",
            "ringback-twilio",
            "ringback-queue",
            "ringback-callbacks",
            "ringback-twilio-sim",
        ],
        _ => return None,
    })
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every package's manifest: the root's and each under `crates/`.
fn manifests() -> Vec<PathBuf> {
    let mut out = vec![root().join("Cargo.toml")];
    for entry in std::fs::read_dir(root().join("crates")).expect("crates/ reads") {
        let manifest = entry.expect("a directory entry").path().join("Cargo.toml");
        if manifest.exists() {
            out.push(manifest);
        }
    }
    out.sort();
    out
}

/// A manifest's package name and the ringback crates it names in a dependency table (normal,
/// dev or build: a test may not reach upward either).
fn package_and_deps(manifest: &str) -> (String, Vec<String>) {
    let mut name = String::new();
    let mut deps = vec![];
    let mut table = "";
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            table = line;
            continue;
        }
        if table == "[package]" {
            if let Some(v) = line.strip_prefix("name = ") {
                name = v.trim_matches('"').to_string();
            }
        } else if table.ends_with("dependencies]") && !table.starts_with("[workspace") {
            let key = line.split(['.', ' ', '=']).next().unwrap_or("");
            if key.starts_with("ringback") {
                deps.push(key.to_string());
            }
        }
    }
    (name, deps)
}

#[test]
fn every_crate_stands_on_its_floor() {
    let mut wrong = vec![];
    let mut read = 0;
    for manifest in manifests() {
        let text = std::fs::read_to_string(&manifest).expect("a manifest reads");
        let (name, deps) = package_and_deps(&text);
        read += 1;
        let Some(allowed) = may_use(&name) else {
            wrong.push(format!(
                "{}: crate `{name}` is on no floor (add it to the table here and in docs/architecture.md)",
                manifest.display()
            ));
            continue;
        };
        for dep in deps {
            if !allowed.contains(&dep.as_str()) {
                wrong.push(format!(
                    "{}: `{name}` depends on `{dep}`, a floor above it or beside it (it may use: {})",
                    manifest.display(),
                    if allowed.is_empty() {
                        "nothing of ringback".to_string()
                    } else {
                        allowed.join(", ")
                    }
                ));
            }
        }
    }
    assert_eq!(read, 7, "the root package and six crates");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_manifest_reader_sees_every_dependency_table() {
    let (name, deps) = package_and_deps(
        "[package]\nname = \"ringback-queue\"\n\n[dependencies]\nringback-store.workspace = true\n\
         redis.workspace = true\n\n[dev-dependencies]\nringback-callbacks = { path = \"x\" }\n",
    );
    assert_eq!(name, "ringback-queue");
    assert_eq!(deps, ["ringback-store", "ringback-callbacks"]);
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder reads") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_source_file_grows_past_500_lines() {
    let mut files = vec![];
    rust_files(&root().join("src"), &mut files);
    for entry in std::fs::read_dir(root().join("crates")).expect("crates/ reads") {
        rust_files(
            &entry.expect("a directory entry").path().join("src"),
            &mut files,
        );
    }
    assert!(files.len() > 100, "read {} files", files.len());
    let mut wrong = vec![];
    for file in files {
        let lines = std::fs::read_to_string(&file)
            .expect("a source file reads")
            .lines()
            .count();
        if lines > 500 {
            let rel = file.strip_prefix(root()).expect("under the checkout");
            wrong.push(format!(
                "{}: {lines} lines, over 500 (split it, one concept per file)",
                rel.display()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
