//! The floors, checked: every `crate::` path in `src/` (use declarations and inline paths, with
//! `super::` chains resolved, comments and string literals ignored) must point to its own floor
//! or one below it. `docs/architecture.md` draws the same table.
//!
//! | floor | folder | may use |
//! |---|---|---|
//! | shared | `config.rs`, `error.rs`, `redact.rs`, `telemetry.rs`, `trace.rs` | shared |
//! | storage | `store/` | shared |
//! | provider | `twilio/` | shared |
//! | queue | `queue/` | shared, storage |
//! | callbacks | `callbacks/` | shared, storage, provider, queue |
//! | simulator | `twilio_sim/` | shared, provider |
//! | edge | `edge/`, `lib.rs`, `bin/` | every floor |
//!
//! A `super::` chain is resolved from the file's module; inside an inline module (`mod tests`)
//! that is one level too high, which can only name a floor at or below the right one: the check
//! may miss a wrong `super::` import there, never invent one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The floor each top-level module of the crate stands on.
fn floor_of(top: &str) -> Option<&'static str> {
    Some(match top {
        "clock" | "error" | "redact" | "settings" | "telemetry" | "trace" => "shared",
        "store" => "storage",
        "twilio" => "provider",
        "queue" => "queue",
        "callbacks" => "callbacks",
        "twilio_sim" => "simulator",
        "edge" => "edge",
        // the few key types the crate root re-exports
        "Worker" | "WorkerConfig" | "Processor" | "Outcome" | "JobContext" | "Job" | "Failure"
        | "Stopped" => "queue",
        "Error" | "ConfigError" | "ConfigErrors" | "ScriptCode" => "shared",
        _ => return None,
    })
}

/// The floors a floor may use (its own included).
fn may_use(floor: &str) -> &'static [&'static str] {
    match floor {
        "shared" => &["shared"],
        "storage" => &["shared", "storage"],
        "provider" => &["shared", "provider"],
        "queue" => &["shared", "storage", "queue"],
        "callbacks" => &["shared", "storage", "provider", "queue", "callbacks"],
        "simulator" => &["shared", "provider", "simulator"],
        _ => &[
            "shared",
            "storage",
            "provider",
            "queue",
            "callbacks",
            "simulator",
            "edge",
        ],
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ reads") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file under `src/`: `store/keys.rs` → `[store, keys]`, `store/mod.rs` →
/// `[store]`, `lib.rs` → `[]`; `None` for a binary.
fn module_of(rel: &Path) -> Option<Vec<String>> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    let last = parts.pop()?;
    match last.as_str() {
        "lib.rs" | "mod.rs" => {}
        file => parts.push(file.trim_end_matches(".rs").to_string()),
    }
    Some(parts)
}

/// `text` with comments, string and char literals blanked (their bytes become spaces), so only
/// code is read.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if (rest.starts_with(b"r#") || rest.starts_with(b"r\""))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            // a raw string: r"…", r#"…"#, …
            let hashes = rest[1..].iter().take_while(|c| **c == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') {
                out.push(b[i]);
                i += 1;
                continue;
            }
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let start = i + 2 + hashes;
            let end = b[start..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| start + p + close.len());
            for &c in &b[i..end] {
                blank(&mut out, c);
            }
            i = end;
        } else if b[i] == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
                blank(&mut out, b[i]);
                i += 1;
            }
            out.push(b' ');
            i += 1;
        } else if b[i] == b'\'' && (rest.get(2) == Some(&b'\'') || (rest.get(1) == Some(&b'\\'))) {
            // a char literal ('x', '\n', '\''); a lifetime has no closing quote there
            let len = rest[2..]
                .iter()
                .position(|c| *c == b'\'')
                .map_or(1, |p| p + 3);
            out.extend(std::iter::repeat_n(b' ', len));
            i += len;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Every path that starts at `crate` or `super` in `code`, as segments; a brace group
/// (`crate::{a, b::c}`) gives one path per member.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut found = vec![];
    let b = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        let starts = (b[i..].starts_with(b"crate::") || b[i..].starts_with(b"super::"))
            && (i == 0 || !ident(b[i - 1]));
        if !starts {
            i += 1;
            continue;
        }
        let (path, end) = read_path(code, i);
        found.extend(path);
        i = end.max(i + 1);
    }
    found
}

/// The path (or brace group of paths) at `at`, and where it ends.
fn read_path(code: &str, at: usize) -> (Vec<Vec<String>>, usize) {
    let b = code.as_bytes();
    let mut segs = vec![];
    let mut i = at;
    loop {
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        if i > start {
            segs.push(code[start..i].to_string());
        }
        // `::` (whitespace allowed around it in a use list)
        let mut j = i;
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        if !b[j..].starts_with(b"::") {
            return (vec![segs], i);
        }
        j += 2;
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        if b.get(j) == Some(&b'{') {
            // a group: split at top-level commas
            let mut depth = 0;
            let mut k = j;
            let mut members = vec![];
            let mut member_start = j + 1;
            while k < b.len() {
                match b[k] {
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            members.push(&code[member_start..k]);
                            break;
                        }
                    }
                    b',' if depth == 1 => {
                        members.push(&code[member_start..k]);
                        member_start = k + 1;
                    }
                    _ => {}
                }
                k += 1;
            }
            let mut all = vec![];
            for m in members {
                let m = m.trim();
                if m.is_empty() || m == "self" || m == "*" {
                    all.push(segs.clone());
                    continue;
                }
                for tail in read_path(m, 0).0 {
                    let mut p = segs.clone();
                    p.extend(tail);
                    all.push(p);
                }
            }
            return (all, k + 1);
        }
        if b.get(j) == Some(&b'*') {
            return (vec![segs], j + 1);
        }
        i = j;
    }
}

/// `path` (from `crate` or `super`) as absolute segments from the crate root, seen from
/// `module`.
fn resolve(module: &[String], path: &[String]) -> Vec<String> {
    let mut base: Vec<String> = module.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        _ => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        }
    }
    base.extend(rest.iter().cloned());
    base
}

#[test]
fn no_path_reaches_into_a_higher_floor() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![];
    rust_files(&src, &mut files);
    files.sort();
    assert!(files.len() > 20, "read {} files under src/", files.len());
    let mut wrong: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut seen = 0;
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src/");
        let Some(module) = module_of(rel) else {
            continue;
        };
        let Some(from) = module.first().and_then(|t| floor_of(t)) else {
            continue; // lib.rs: the crate root stands on every floor
        };
        let text = std::fs::read_to_string(file).expect("a source file reads");
        for path in paths(&code_only(&text)) {
            let abs = resolve(&module, &path);
            let Some(to) = abs.first().and_then(|t| floor_of(t)) else {
                continue;
            };
            seen += 1;
            if !may_use(from).contains(&to) {
                wrong.entry(rel.display().to_string()).or_default().push(format!(
                    "`{}` reaches from the {from} floor into the {to} floor ({from} may use: {})",
                    path.join("::"),
                    may_use(from).join(", ")
                ));
            }
        }
    }
    assert!(
        seen > 100,
        "only {seen} crate paths read: the reader is broken"
    );
    let report: Vec<String> = wrong
        .iter()
        .map(|(file, v)| format!("src/{file}:\n  {}", v.join("\n  ")))
        .collect();
    assert!(
        wrong.is_empty(),
        "imports into a higher floor (docs/architecture.md):\n{}",
        report.join("\n")
    );
}

#[test]
fn the_reader_sees_paths_as_rustc_does() {
    let code = code_only(
        "use crate::{store::keys, queue::{job::Job, worker}};\n\
         // crate::edge::api in a comment\n\
         let s = \"crate::edge::api\"; let r = r#\"crate::edge::cli\"#;\n\
         let c = '\"'; fn f<'a>(x: &'a str) { super::super::twilio::client::x(); }\n\
         crate::callbacks::window::Window::new();",
    );
    let found: Vec<String> = paths(&code).iter().map(|p| p.join("::")).collect();
    assert_eq!(
        found,
        [
            "crate::store::keys",
            "crate::queue::job::Job",
            "crate::queue::worker",
            "super::super::twilio::client::x",
            "crate::callbacks::window::Window::new",
        ]
    );
    let module: Vec<String> = ["callbacks", "sms", "evidence"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let up = ["super", "super", "twilio"].map(String::from);
    assert_eq!(resolve(&module, &up), ["callbacks", "twilio"]);
    assert_eq!(
        module_of(Path::new("store/mod.rs")),
        Some(vec!["store".to_string()])
    );
    assert_eq!(module_of(Path::new("bin/ringback.rs")), None);
}
