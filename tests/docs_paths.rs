//! Every file path the docs cite exists: README, `docs/`, the changelog, the model's notes and
//! the harness's notes and the model name source files, scripts and Lua, and a move that forgets
//! one of them leaves a reader looking for a file that is gone. A line that names a commit (a
//! path "at commit …", `file@<hash>`) cites history and is skipped.

use std::path::Path;

#[test]
fn every_path_the_docs_cite_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs: Vec<std::path::PathBuf> = [
        "README.md",
        "CHANGELOG.md",
        "CONTRIBUTING.md",
        "node-harness/COMPATIBILITY.md",
        "node-harness/README.md",
        "model/window.pml",
    ]
    .iter()
    .map(|p| root.join(p))
    .collect();
    for dir in ["docs", "model"] {
        for entry in std::fs::read_dir(root.join(dir)).expect("docs folder") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "md") {
                docs.push(path);
            }
        }
    }
    let tops = [
        "src/",
        "lua/",
        "tests/",
        "scripts/",
        "model/",
        "docs/",
        "deploy/",
        "benches/",
        "examples/",
        "node-harness/",
    ];
    let mut missing = vec![];
    let mut cited = 0;
    for doc in &docs {
        let Ok(text) = std::fs::read_to_string(doc) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if line.contains("at commit") || names_a_commit(line) {
                continue;
            }
            for (i, _) in line.match_indices('/') {
                let Some(start) = tops.iter().find_map(|t| {
                    let s = i + 1 - t.len().min(i + 1);
                    line.get(s..=i).filter(|w| w == t).map(|_| s)
                }) else {
                    continue;
                };
                if start > 0
                    && line[..start]
                        .chars()
                        .next_back()
                        .is_some_and(|c| c.is_alphanumeric() || "_-./".contains(c))
                {
                    continue;
                }
                let path: String = line[start..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || "_-./".contains(*c))
                    .collect();
                let path = path.trim_end_matches(['.', '/']);
                let has_ext = Path::new(path).extension().is_some_and(|e| {
                    [
                        "rs", "lua", "md", "pml", "js", "sh", "yml", "toml", "json", "nft",
                        "service",
                    ]
                    .contains(&e.to_str().unwrap_or(""))
                });
                if !has_ext {
                    continue;
                }
                cited += 1;
                if !root.join(path).exists() {
                    missing.push(format!(
                        "{}:{}: {path}",
                        doc.strip_prefix(root).unwrap_or(doc).display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(cited > 50, "only {cited} paths read: the reader is broken");
    assert!(
        missing.is_empty(),
        "cited paths that do not exist:\n{}",
        missing.join("\n")
    );
}

/// Whether `line` names a commit: a word of 7 to 40 hex digits with a letter and a digit.
fn names_a_commit(line: &str) -> bool {
    line.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| {
        (7..=40).contains(&w.len())
            && w.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
            && w.chars().any(|c| c.is_ascii_digit())
            && w.chars().any(|c| c.is_ascii_alphabetic())
    })
}
