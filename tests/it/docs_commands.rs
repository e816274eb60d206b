//! Every `ringback …` command the docs tell a reader to run names a subcommand and flags the
//! binary has: a renamed flag or subcommand fails here, not in an operator's terminal. (The
//! tutorial's blocks run for real, `scripts/tutorial`; this covers every other page.)

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

/// `ringback <sub> --help`, or `None` when there is no such subcommand.
fn help(sub: &str, cache: &mut HashMap<String, Option<String>>) -> Option<String> {
    cache
        .entry(sub.to_string())
        .or_insert_with(|| {
            let out = Command::new(env!("CARGO_BIN_EXE_ringback"))
                .args([sub, "--help"])
                .env_clear()
                .output()
                .expect("the binary runs");
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        })
        .clone()
}

#[test]
fn every_command_the_docs_give_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![
        root.join("README.md"),
        root.join("CONTRIBUTING.md"),
        root.join("node-harness/README.md"),
    ];
    for entry in std::fs::read_dir(root.join("docs"))
        .expect("docs")
        .flatten()
    {
        if entry.path().extension().is_some_and(|e| e == "md") {
            pages.push(entry.path());
        }
    }
    // a command: at the start of a code line (after an optional `$ `), or just inside a backtick
    let command = regex::Regex::new(r"(?:^\s*(?:\$\s+)?|`)ringback ([a-z][a-z-]*)([^`|#\n]*)")
        .expect("pattern");
    let mut cache = HashMap::new();
    let mut wrong = vec![];
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap_or_default();
        let rel = page
            .strip_prefix(root)
            .unwrap_or(page)
            .display()
            .to_string();
        let mut in_code = false;
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                in_code = !in_code;
                continue;
            }
            for m in command.captures_iter(line) {
                let whole = m.get(0).map_or("", |w| w.as_str());
                // prose ("ringback texts a human") is neither code nor quoted
                if !in_code && !whole.starts_with('`') {
                    continue;
                }
                let mut sub = m[1].to_string();
                let mut rest: Vec<&str> = m[2].split_whitespace().collect();
                if sub == "check-config"
                    && let Some(t) = rest
                        .first()
                        .filter(|t| ["worker", "serve", "drain"].contains(t))
                {
                    // the flags after the target are the target's
                    sub = t.to_string();
                    rest.remove(0);
                }
                let Some(h) = help(&sub, &mut cache) else {
                    wrong.push(format!("{rel}:{}: no subcommand `{sub}`: {line}", n + 1));
                    continue;
                };
                for flag in rest.iter().filter(|t| t.starts_with("--")) {
                    let flag = flag.split('=').next().unwrap_or(flag);
                    let flag = flag.trim_end_matches([',', ')', '.', ';', '"', '\'']);
                    if !h.contains(&format!("{flag} ")) && !h.contains(&format!("{flag}\n")) {
                        wrong.push(format!(
                            "{rel}:{}: `ringback {sub}` has no {flag}: {line}",
                            n + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
