//! The settings the binary reads, read off its own command-line definitions, so the reference,
//! the error messages and the definitions cannot disagree: the configuration reference
//! (`ringback check-config --reference`, committed as `docs/configuration.md`), the flag that
//! goes with each variable in an error, and every variable whose value does not parse, all
//! named in one run (clap itself stops at the first and names only the flag).

use clap::Command;

/// A variable read straight from the environment, outside the command-line definitions.
#[derive(Debug)]
pub struct EnvOnly {
    /// The variable's name, e.g. `RUST_LOG`.
    pub name: &'static str,
    /// A test or drill knob: never set in production; `check-config` reports it when set.
    pub test_knob: bool,
    /// What it does: its row in the configuration reference.
    pub meaning: &'static str,
}

/// Every variable ringback reads that is not a flag's.
pub const ENVIRONMENT_ONLY: &[EnvOnly] = &[
    EnvOnly {
        name: "RUST_LOG",
        test_knob: false,
        meaning: "Which log lines are written (tracing's filter syntax, e.g. `info,ringback=debug`); default `info`.",
    },
    EnvOnly {
        name: "NO_COLOR",
        test_knob: false,
        meaning: "Set: no colours in log lines, also on a terminal (off a terminal there are none).",
    },
    EnvOnly {
        name: "RINGBACK_CLOCK_SKEW_MS",
        test_knob: true,
        meaning: "Shifts this process's clock (the BullMQ timestamps it writes) by this many ms, to prove that no window decision uses it.",
    },
    EnvOnly {
        name: "RINGBACK_DRILL_PER_SLOT",
        test_knob: true,
        meaning: "`1`: lays the window's Redis calls out as on a Redis Cluster, on one Redis.",
    },
];

/// Variables the repository's scripts and container image read, never the binary: quiet in
/// the unknown-variable check (the image's `HEALTHCHECK` reads `RINGBACK_HEALTH_PORT`).
pub const READ_BY_TOOLS: &[&str] = &[
    "RINGBACK_HEALTH_PORT",
    "RINGBACK_BIN",
    "RINGBACK_BIN_DIR",
    "RINGBACK_WORKER_CMD",
    "RINGBACK_DRILL_NETNS",
    "RINGBACK_FUZZ_ITERATIONS",
    "RINGBACK_FUZZ_SEED",
    "RINGBACK_POINTS",
    "RINGBACK_QUIET",
    "RINGBACK_RUN_TEST",
];

/// Every variable in `vars` that ringback does not read but looks meant for it: any unknown
/// `RINGBACK_*` (named with the closest variable ringback reads), and a `TWILIO_*` or `OTEL_*`
/// within two edits of one ringback reads (a misspelling; other tools' variables of those
/// prefixes stay quiet). A misspelled setting is otherwise silently its default.
pub fn unknown_env(
    root: &Command,
    vars: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Vec<String> {
    let mut known: Vec<String> = settings(root).into_iter().map(|s| s.env).collect();
    known.extend(ENVIRONMENT_ONLY.iter().map(|e| e.name.to_string()));
    let closest = |name: &str| {
        known
            .iter()
            .map(|k| (strsim::levenshtein(name, k), k))
            .min()
            .map(|(d, k)| (d, k.clone()))
    };
    let mut out = vec![];
    let mut names: Vec<String> = vars
        .into_iter()
        .filter_map(|(k, _)| k.into_string().ok())
        .collect();
    names.sort();
    for name in names {
        if known.contains(&name) || READ_BY_TOOLS.contains(&name.as_str()) {
            continue;
        }
        let near = closest(&name);
        if name.starts_with("RINGBACK_") {
            out.push(match near {
                Some((d, k)) if d <= 3 => format!(
                    "{name} is not a setting ringback reads (did you mean {k}?); it is ignored"
                ),
                _ => format!(
                    "{name} is not a setting ringback reads (ringback check-config --reference lists them); it is ignored"
                ),
            });
        } else if (name.starts_with("TWILIO_") || name.starts_with("OTEL_"))
            && let Some((d, k)) = near
            && d <= 2
        {
            out.push(format!(
                "{name} looks like a misspelling of {k}, which ringback reads; {name} is ignored"
            ));
        }
    }
    out
}

/// One setting: a flag with its variable.
#[derive(Debug, Clone)]
pub struct Setting {
    /// The environment variable, e.g. `RINGBACK_QUEUE`.
    pub env: String,
    /// The flag of the same meaning (`--queue`); `None` when there is only the variable.
    pub flag: Option<String>,
    /// The default value (several joined by commas); `None` when it has none.
    pub default: Option<String>,
    /// The flag's help text on one line, `|` escaped for a Markdown table cell.
    pub help: String,
    /// The `--help` heading it is listed under (`Options` when none): its reference section.
    pub heading: String,
    /// A test or drill knob, hidden from `--help`.
    pub hidden: bool,
    /// The subcommands that read it.
    pub commands: Vec<String>,
}

/// The subcommands whose settings the reference lists (`check-config` reads those of the one it
/// checks).
fn listed(sub: &Command) -> bool {
    !matches!(sub.get_name(), "check-config" | "help")
}

/// `root` with its global arguments propagated into every subcommand.
fn built(root: &Command) -> Command {
    let mut root = root.clone();
    root.build();
    root
}

/// One line of help text: Markdown table cells hold no line breaks or bars.
fn one_line(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// Every setting of `root`'s subcommands, each variable once, in the order the definitions
/// give them.
pub fn settings(root: &Command) -> Vec<Setting> {
    let root = built(root);
    let mut out: Vec<Setting> = vec![];
    for sub in root.get_subcommands().filter(|s| listed(s)) {
        for arg in sub.get_arguments() {
            let Some(env) = arg.get_env().and_then(|e| e.to_str()) else {
                continue;
            };
            if let Some(known) = out.iter_mut().find(|s| s.env == env) {
                known.commands.push(sub.get_name().to_string());
                continue;
            }
            let help = arg
                .get_long_help()
                .or_else(|| arg.get_help())
                .map(|h| one_line(&h.to_string()))
                .unwrap_or_default();
            let defaults: Vec<String> = arg
                .get_default_values()
                .iter()
                .map(|v| v.to_string_lossy().into_owned())
                .collect();
            out.push(Setting {
                env: env.to_string(),
                flag: arg.get_long().map(|l| format!("--{l}")),
                default: (!defaults.is_empty()).then(|| defaults.join(",")),
                help,
                heading: arg.get_help_heading().unwrap_or("Options").to_string(),
                hidden: arg.is_hide_set(),
                commands: vec![sub.get_name().to_string()],
            });
        }
    }
    out
}

/// The flag that sets `env`, for messages that name both.
pub fn flag_of(root: &Command, env: &str) -> Option<String> {
    let root = built(root);
    root.get_arguments()
        .chain(root.get_subcommands().flat_map(|s| s.get_arguments()))
        .find(|a| a.get_env().is_some_and(|e| e == env))
        .and_then(|a| a.get_long().map(|l| format!("--{l}")))
}

/// Every variable `subcommand` reads whose value does not parse, each with a line naming it, its
/// flag and the reason, in one pass. Empty values count as unset, as clap treats them.
pub fn unparsable_env(root: &Command, subcommand: &str) -> Vec<(String, String)> {
    let root = built(root);
    let Some(sub) = root.find_subcommand(subcommand) else {
        return vec![];
    };
    let mut out = vec![];
    for arg in sub.get_arguments() {
        let Some(env) = arg.get_env() else { continue };
        if !arg.get_action().takes_values() {
            continue;
        }
        if std::env::var_os(env).is_none_or(|v| v.is_empty()) {
            continue;
        }
        // the argument alone, read by clap from the environment as the subcommand would
        let alone = Command::new("ringback").arg(arg.clone().global(false));
        if let Err(e) = alone.try_get_matches_from(["ringback"]) {
            let reason = e.to_string();
            let reason: Vec<&str> = reason
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
                .collect();
            let reason = reason.join(" ");
            let reason = reason.strip_prefix("error: ").unwrap_or(&reason);
            let flag = arg
                .get_long()
                .map(|l| format!(" (--{l})"))
                .unwrap_or_default();
            let name = env.to_string_lossy().into_owned();
            out.push((name.clone(), format!("{name}{flag}: {reason}")));
        }
    }
    out
}

/// The configuration reference as Markdown: every setting grouped by heading, the rules between
/// settings (`rules`, judged on the defaults), the test knobs apart, and the variables read
/// outside the flags.
pub fn markdown(root: &Command, rules: &[crate::settings::Invariant]) -> String {
    let all = settings(root);
    let mut md = String::from(
        "# Configuration reference\n\n\
         Every setting ringback reads, generated by `ringback check-config --reference` from the \
         binary's own definitions (the test suite fails when this file and the command differ). \
         Each is an environment variable and a flag of the same meaning; a flag given on the \
         command line wins. `ringback check-config [worker|serve|drain|resend]` checks the \
         settings a subcommand needs and prints every rule between them with its verdict; it \
         refuses values copied from the docs and warns on a variable ringback does not read. An \
         empty value (`NAME=` in an env file) is the same as unset.\n",
    );
    let table_head = "\n| Variable | Flag | Default | Read by | Meaning |\n|---|---|---|---|---|\n";
    let row = |s: &Setting| {
        format!(
            "| `{}` | {} | {} | {} | {} |\n",
            s.env,
            s.flag.as_deref().map_or("—".into(), |f| format!("`{f}`")),
            s.default
                .as_deref()
                .map_or("—".into(), |d| format!("`{}`", one_line(d))),
            s.commands.join(", "),
            s.help
        )
    };
    let mut headings: Vec<&str> = vec![];
    for s in all.iter().filter(|s| !s.hidden) {
        if !headings.contains(&s.heading.as_str()) {
            headings.push(&s.heading);
        }
    }
    for heading in headings {
        md.push_str(&format!("\n## {heading}\n"));
        md.push_str(table_head);
        for s in all.iter().filter(|s| !s.hidden && s.heading == heading) {
            md.push_str(&row(s));
        }
    }
    md.push_str(
        "\n## Rules between settings\n\n`check-config` prints each rule with its verdict: `ok`, \
         `broken` (an error: every subcommand that needs the setting refuses to start, exit 2) or \
         `warning` (printed, and the process runs). Here with the defaults' values.\n\n\
         | Rule | Setting to change | Broken | What goes wrong |\n|---|---|---|---|\n",
    );
    for r in rules {
        let severity = match r.severity {
            crate::settings::Severity::Error => "error",
            crate::settings::Severity::Warning => "warning",
        };
        md.push_str(&format!(
            "| {} | `{}` | {severity} | {} |\n",
            one_line(&r.rule),
            r.setting,
            one_line(&r.problem)
        ));
    }
    md.push_str("\n## Read from the environment only\n\n| Variable | Meaning |\n|---|---|\n");
    for e in ENVIRONMENT_ONLY.iter().filter(|e| !e.test_knob) {
        md.push_str(&format!("| `{}` | {} |\n", e.name, e.meaning));
    }
    md.push_str(
        "\n## Test and drill knobs\n\nNever set in production. Hidden from `--help`; \
         `check-config` reports each one that is set.\n",
    );
    md.push_str(table_head);
    for s in all.iter().filter(|s| s.hidden) {
        md.push_str(&row(s));
    }
    for e in ENVIRONMENT_ONLY.iter().filter(|e| e.test_knob) {
        md.push_str(&format!("| `{}` | — | — | all | {} |\n", e.name, e.meaning));
    }
    md
}

/// The test and drill knobs set in this environment, as `NAME=value`.
pub fn test_knobs_set(root: &Command) -> Vec<String> {
    let mut names: Vec<String> = settings(root)
        .into_iter()
        .filter(|s| s.hidden)
        .map(|s| s.env)
        .collect();
    names.extend(
        ENVIRONMENT_ONLY
            .iter()
            .filter(|e| e.test_knob)
            .map(|e| e.name.to_string()),
    );
    names
        .into_iter()
        .filter_map(|n| {
            let v = std::env::var(&n).ok().filter(|v| !v.is_empty())?;
            Some(format!("{n}={v}"))
        })
        .collect()
}

/// The short help (`-h`) of `path` (subcommand names from the root; empty for the root
/// itself): one line per flag, with its variable and the first sentence of its help, so a
/// reader scans every setting on one screen. `--help` stays the full reference (every
/// sentence, defaults, accepted values). `None` when `path` names no subcommand.
pub fn short_help(root: &Command, path: &[&str]) -> Option<String> {
    let root = built(root);
    let mut cmd = &root;
    for name in path {
        cmd = cmd.find_subcommand(name)?;
    }
    let first_sentence = |s: &str| {
        let s = one_line(s).replace("\\|", "|");
        // the first ". " that ends a sentence (not one of "e.g. ", "i.e. ")
        let end = s
            .match_indices(". ")
            .map(|(i, _)| i)
            .find(|&i| !(s[..i].ends_with("e.g") || s[..i].ends_with("i.e")));
        let cut = end.map_or(s.as_str(), |i| &s[..i]);
        cut.trim_end_matches('.').to_string()
    };
    let mut out = String::new();
    if let Some(about) = cmd.get_about() {
        out.push_str(&first_sentence(&about.to_string()));
        out.push_str("\n\n");
    }
    let mut usage = ["Usage: ringback"]
        .into_iter()
        .chain(path.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    if cmd
        .get_arguments()
        .any(|a| !a.is_positional() && !a.is_hide_set())
    {
        usage.push_str(" [OPTIONS]");
    }
    for p in cmd.get_positionals() {
        usage.push_str(&format!(" <{}>", p.get_id().as_str().to_uppercase()));
    }
    if cmd.has_subcommands() {
        usage.push_str(" <COMMAND>");
    }
    out.push_str(usage.trim_end());
    out.push('\n');
    let mut rows: Vec<(String, String, String)> = vec![];
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let about = sub
            .get_about()
            .map(|a| first_sentence(&a.to_string()))
            .unwrap_or_default();
        rows.push(("Commands".into(), sub.get_name().to_string(), about));
    }
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let value = arg
            .get_value_names()
            .and_then(|v| v.first())
            .map(|v| v.to_string())
            .unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
        let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
        let name = if arg.is_positional() {
            format!("<{value}>")
        } else {
            let mut n = match (arg.get_short(), arg.get_long()) {
                (Some(s), Some(l)) => format!("-{s}, --{l}"),
                (Some(s), None) => format!("-{s}"),
                (None, Some(l)) => format!("    --{l}"),
                (None, None) => continue,
            };
            if takes_value {
                n.push_str(" <v>");
            }
            n
        };
        let mut text = arg
            .get_help()
            .map(|h| first_sentence(&h.to_string()))
            .unwrap_or_default();
        if let Some(env) = arg.get_env().and_then(|e| e.to_str()) {
            text = format!("[{env}] {text}");
        }
        let heading = if arg.is_positional() {
            "Arguments".to_string()
        } else {
            arg.get_help_heading().unwrap_or("Options").to_string()
        };
        rows.push((heading, name, text));
    }
    let width = rows
        .iter()
        .map(|(_, n, _)| n.chars().count())
        .max()
        .unwrap_or(0);
    let mut headings: Vec<&str> = vec![];
    for (h, _, _) in &rows {
        if !headings.contains(&h.as_str()) {
            headings.push(h);
        }
    }
    for heading in headings {
        out.push_str(&format!("\n{heading}:\n"));
        for (_, name, text) in rows.iter().filter(|(h, _, _)| h == heading) {
            out.push_str(format!("  {name:<width$}  {text}").trim_end());
            out.push('\n');
        }
    }
    let full = if path.is_empty() {
        "ringback --help".to_string()
    } else {
        format!("ringback {} --help", path.join(" "))
    };
    out.push_str(&format!(
        "\nOne line per flag: [VARIABLE] the environment variable it also reads. `{full}`: the full reference, with defaults and accepted values.\n"
    ));
    Some(out)
}
