//! `ringback drill`: the drills end to end, one command each.
//!
//! A drill proves the promise against the real thing, so it runs where the real Node BullMQ
//! lives: `node-harness/bin/drill.js` starts its own redis-server and Twilio simulator, the
//! legacy Node API and worker, and this very binary (as `RINGBACK_BIN`), kills workers at the
//! worst instants, and counts texts at the simulator. This module only finds the harness, checks
//! that it can run, and builds the command; the report and the exit code are the harness's.

use std::path::{Path, PathBuf};

/// The drills `node-harness/lib/drill` knows, and `all`.
pub const DRILLS: [&str; 9] = [
    "stall", "cutover", "chaos", "mixed", "rollback", "edges", "replies", "ladder", "all",
];

/// Why a drill cannot start; each says what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DrillError {
    /// No directory looked in holds a harness (`bin/drill.js`).
    #[error(
        "RINGBACK_HARNESS_DIR: no node-harness found (looked in {looked}); run from the ringback \
         checkout or pass --harness <dir>"
    )]
    NoHarness {
        /// The directories looked in, comma-separated.
        looked: String,
    },
    /// The harness is there but its npm dependencies are not installed (no `node_modules`).
    #[error(
        "RINGBACK_HARNESS_DIR: {dir} has no node_modules; install it first: npm ci --prefix {dir}"
    )]
    NotInstalled {
        /// The harness directory.
        dir: String,
    },
    /// `node --version` could not be run from `PATH`, or failed.
    #[error("node: not found on PATH ({0}); the drills run the real Node BullMQ and need Node 20+")]
    NoNode(std::io::Error),
    /// The path of the running binary or the current directory could not be read.
    #[error("cannot tell where this binary or the current directory is: {0}")]
    NoExe(std::io::Error),
}

/// The harness to use: `explicit` when given, else `<cwd>/node-harness`, else the one beside the
/// checkout this binary was built in (`target/<profile>/ringback` → `node-harness`).
pub fn harness_dir(explicit: Option<&Path>, exe: &Path, cwd: &Path) -> Result<PathBuf, DrillError> {
    let candidates: Vec<PathBuf> = match explicit {
        Some(dir) => vec![dir.to_path_buf()],
        None => {
            let mut c = vec![cwd.join("node-harness")];
            if let Some(root) = exe.parent().and_then(Path::parent).and_then(Path::parent) {
                c.push(root.join("node-harness"));
            }
            c
        }
    };
    let found = candidates
        .iter()
        .find(|d| d.join("bin").join("drill.js").is_file());
    let Some(dir) = found else {
        let looked = candidates
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(DrillError::NoHarness { looked });
    };
    if !dir.join("node_modules").is_dir() {
        return Err(DrillError::NotInstalled {
            dir: dir.display().to_string(),
        });
    }
    Ok(dir.clone())
}

/// What to run a drill with.
#[derive(Debug, Clone, Default)]
pub struct DrillArgs {
    /// `stall`, `cutover`, `chaos` or `all`.
    pub name: String,
    /// Runs (callbacks) per drill; the harness's defaults when `None`.
    pub runs: Option<u32>,
    /// The bullmq major the Node side uses (`5` or `6`).
    pub bullmq: Option<String>,
    /// The report as JSON.
    pub json: bool,
    /// On a real local Redis Cluster (the harness starts one: three masters with a replica each)
    /// instead of one redis-server: the drills then prove the promise where large deployments run.
    pub cluster: bool,
}

/// The command that runs `args` in `harness` with this binary as the worker under drill.
pub fn command(
    harness: &Path,
    exe: &Path,
    args: &DrillArgs,
) -> Result<std::process::Command, DrillError> {
    let probe = std::process::Command::new("node")
        .arg("--version")
        .output()
        .map_err(DrillError::NoNode)?;
    if !probe.status.success() {
        return Err(DrillError::NoNode(std::io::Error::other(
            "node --version failed",
        )));
    }
    let mut cmd = std::process::Command::new("node");
    cmd.arg(harness.join("bin").join("drill.js"))
        .arg(&args.name)
        .env("RINGBACK_BIN", exe);
    if let Some(n) = args.runs {
        cmd.arg("--runs").arg(n.to_string());
    }
    if let Some(v) = &args.bullmq {
        cmd.arg("--bullmq").arg(v);
    }
    if args.json {
        cmd.arg("--json");
    }
    if args.cluster {
        cmd.arg("--cluster");
    }
    Ok(cmd)
}

/// The running binary's path, for the harness to start workers from.
pub fn current_exe() -> Result<PathBuf, DrillError> {
    std::env::current_exe().map_err(DrillError::NoExe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_is_passed_through_to_the_harness() {
        let dir = Path::new("/h");
        let args = DrillArgs {
            name: "stall".into(),
            cluster: true,
            ..DrillArgs::default()
        };
        let Ok(cmd) = command(dir, Path::new("/x/ringback"), &args) else {
            // no node on PATH here: nothing to check
            return;
        };
        let argv: Vec<_> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(argv, ["/h/bin/drill.js", "stall", "--cluster"]);
        let plain = DrillArgs {
            name: "stall".into(),
            ..DrillArgs::default()
        };
        let cmd = command(dir, Path::new("/x/ringback"), &plain).unwrap();
        assert!(!cmd.get_args().any(|a| a == "--cluster"));
    }

    #[test]
    fn a_missing_harness_names_where_it_looked() {
        let dir = std::env::temp_dir().join(format!("ringback-no-harness-{}", std::process::id()));
        let err = harness_dir(
            Some(&dir),
            Path::new("/x/target/debug/ringback"),
            Path::new("/"),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("RINGBACK_HARNESS_DIR"), "{msg}");
        assert!(msg.contains(&dir.display().to_string()), "{msg}");
    }

    #[test]
    fn an_uninstalled_harness_says_how_to_install_it() {
        let dir =
            std::env::temp_dir().join(format!("ringback-bare-harness-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::write(dir.join("bin").join("drill.js"), "").unwrap();
        let err = harness_dir(Some(&dir), Path::new("/x"), Path::new("/")).unwrap_err();
        assert!(err.to_string().contains("npm ci --prefix"), "{err}");
        std::fs::create_dir_all(dir.join("node_modules")).unwrap();
        assert_eq!(
            harness_dir(Some(&dir), Path::new("/x"), Path::new("/")).unwrap(),
            dir
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_checkout_beside_the_binary_is_found_from_anywhere() {
        let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
        let exe = checkout.join("target").join("debug").join("ringback");
        // run from a directory without a harness: the one beside the binary's checkout is used
        let elsewhere = std::env::temp_dir();
        let expected = checkout.join("node-harness");
        match harness_dir(None, &exe, &elsewhere) {
            Ok(dir) => assert_eq!(dir, expected),
            Err(DrillError::NotInstalled { dir }) => {
                assert_eq!(dir, expected.display().to_string())
            }
            Err(e) => panic!("{e}"),
        }
        // and from the checkout itself, its ./node-harness comes first
        let exe_elsewhere = Path::new("/opt/ringback/bin/ringback");
        match harness_dir(None, exe_elsewhere, checkout) {
            Ok(dir) => assert_eq!(dir, expected),
            Err(DrillError::NotInstalled { dir }) => {
                assert_eq!(dir, expected.display().to_string())
            }
            Err(e) => panic!("{e}"),
        }
    }
}
