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
        "crates/",
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

/// Every text file the repository ships or builds from, under `path`.
fn files(path: &Path, out: &mut Vec<std::path::PathBuf>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
            let p = entry.path();
            if !p.ends_with("node_modules") && !p.ends_with("target") {
                files(&p, out);
            }
        }
    } else if path.is_file() {
        out.push(path.to_path_buf());
    }
}

/// No file, comments included, cites a file outside the repository: a reader of a clone has
/// only the clone, so what a source needs from research notes is said in `docs/`.
#[test]
fn nothing_cites_a_file_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let outside = regex::Regex::new(
        r"\.\./shared\b|\bbullmq-protocol\.md\b|\breference/twilio(?:-delivery-facts)?\.md\b|\bSTYLE\.md\b|\bCLI\.md\b",
    )
    .expect("pattern");
    let mut paths = vec![];
    for top in [
        "README.md",
        "CONTRIBUTING.md",
        "CHANGELOG.md",
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
        ".ci",
        "node-harness/README.md",
        "node-harness/COMPATIBILITY.md",
        "node-harness/package.json",
        "node-harness/bin",
        "node-harness/lib",
        "node-harness/test",
        "node-harness/differential",
    ] {
        files(&root.join(top), &mut paths);
    }
    let this_file = root.join("tests/it/docs_paths.rs");
    let mut found = vec![];
    for path in paths.iter().filter(|p| **p != this_file) {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if outside.is_match(line) {
                let rel = path.strip_prefix(root).unwrap_or(path);
                found.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(paths.len() > 200, "only {} files read", paths.len());
    assert!(
        found.is_empty(),
        "citations of files outside the repository (say what is needed in docs/):\n{}",
        found.join("\n")
    );
}

/// The docs are read by operators under pressure: at most 30,000 words in all (counted as
/// `wc -w` counts), and no page but the testing page names a test file or a test: an operator
/// page says what holds, docs/testing.md says which test proves it.
#[test]
fn the_docs_stay_short_and_leave_test_names_to_the_testing_page() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let test_name = regex::Regex::new(
        r"(?:^|[^\w/.-])tests/(?:[\w-]+/)*[\w-]+\.(?:rs|js)\b|\b[\w-]+\.test\.js\b|\bnode-harness/test/",
    )
    .expect("pattern");
    let mut words = 0;
    let mut per_page = vec![];
    let mut cited = vec![];
    for entry in std::fs::read_dir(root.join("docs"))
        .expect("docs")
        .flatten()
    {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("page");
        let n = text.split_whitespace().count();
        words += n;
        per_page.push(format!("{n:>6} {}", path.display()));
        if path.ends_with("testing.md") {
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            if test_name.is_match(line) {
                cited.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
            }
        }
    }
    per_page.sort();
    assert!(
        words <= 30_000,
        "docs/ holds {words} words, above 30,000:\n{}",
        per_page.join("\n")
    );
    assert!(
        cited.is_empty(),
        "test files named outside docs/testing.md:\n{}",
        cited.join("\n")
    );
}

/// One story for serve's port: its default stays the legacy API's 3000 (it takes that port
/// over at the handover), and everything that deploys it beside the legacy API says 3001
/// until then: the env example and the unit ship 3001, and every page that sets serve's
/// listen address tells both.
#[test]
fn serve_takes_3001_beside_the_legacy_api_and_3000_after_the_handover() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read_to_string(root.join(p)).expect(p);
    let example = read("deploy/ringback.env.example");
    assert!(
        example
            .lines()
            .any(|l| l.trim() == "RINGBACK_LISTEN=127.0.0.1:3001"),
        "the env example ships serve on 3001"
    );
    let unit = read("deploy/ringback-serve.service");
    assert!(
        unit.contains("127.0.0.1:3001") && unit.contains("3000"),
        "{unit}"
    );
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_ringback"))
        .args(["serve", "--help"])
        .env_clear()
        .output()
        .expect("the binary runs");
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("[default: 127.0.0.1:3000]"), "{help}");
    for page in [
        "README.md",
        "docs/deploying.md",
        "docs/tutorial.md",
        "docs/runbook.md",
        "docs/commands.md",
        "docs/http-api.md",
    ] {
        let text = read(page);
        if text.contains("RINGBACK_LISTEN") {
            assert!(
                text.contains("3001"),
                "{page} sets serve's address but never says 3001 beside the legacy API"
            );
        }
        for line in text.lines() {
            assert!(
                !line.contains("RINGBACK_LISTEN=127.0.0.1:3000"),
                "{page}: serve on the legacy API's port before the handover: {line}"
            );
        }
    }
}

/// The docs' index lists every page, with word counts that stay within a tenth of the page's
/// own (a page that grows or shrinks much is listed again).
#[test]
fn the_docs_index_lists_every_page_with_its_size() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let index = std::fs::read_to_string(root.join("docs/README.md")).expect("docs/README.md");
    let words = |p: &str| {
        std::fs::read_to_string(root.join("docs").join(p))
            .expect(p)
            .split_whitespace()
            .count()
    };
    let link = regex::Regex::new(r"\]\(([\w-]+\.md)\)").expect("pattern");
    let mut listed = vec![];
    for row in index.lines().filter(|l| l.starts_with("| [")) {
        let pages: Vec<String> = link.captures_iter(row).map(|c| c[1].to_string()).collect();
        let stated: usize = row
            .rsplit('|')
            .nth(1)
            .map(|c| c.trim().replace(',', ""))
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("no word count: {row}"));
        let actual: usize = pages.iter().map(|p| words(p)).sum();
        assert!(
            stated.abs_diff(actual) * 10 <= actual,
            "{pages:?}: the index says {stated} words, the pages hold {actual}"
        );
        listed.extend(pages);
    }
    for entry in std::fs::read_dir(root.join("docs"))
        .expect("docs")
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") && name != "README.md" {
            assert!(
                listed.contains(&name),
                "docs/README.md does not list {name}"
            );
        }
    }
}
