//! Settings and the rules between them: [`ConfigError`] (one broken setting, named),
//! [`ConfigErrors`] (every broken one of a configuration, found in one pass), and the
//! [`Invariant`]s `check-config` prints with their verdicts ([`judge`]). Every floor validates
//! its own settings with them; the layered runtime errors are `crate::error`'s.

/// One rule between settings and whether a configuration keeps it: what `check-config` prints,
/// one line each, so a person sees every rule the deployment relies on, kept or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invariant {
    /// The setting to change when the rule is broken.
    pub setting: &'static str,
    /// The rule, with this configuration's values.
    pub rule: String,
    /// What goes wrong when it does not hold (a warning's text is read alone: it names the
    /// setting and values).
    pub problem: String,
    /// Whether this configuration keeps the rule.
    pub holds: bool,
    /// A broken rule refuses the configuration (`Error`), or is printed and tolerated (`Warning`).
    pub severity: Severity,
}

/// How a broken [`Invariant`] is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// The configuration is refused: the process does not start.
    Error,
    /// Printed by `check-config` and logged at start; the configuration still runs.
    Warning,
}

impl Invariant {
    /// A rule on `setting` and whether it `holds`; a broken one is treated per `severity`.
    pub fn new(
        setting: &'static str,
        holds: bool,
        severity: Severity,
        rule: impl Into<String>,
        problem: impl Into<String>,
    ) -> Self {
        Self {
            setting,
            rule: rule.into(),
            problem: problem.into(),
            holds,
            severity,
        }
    }

    /// `ok`, `broken` or `warning`: the verdict's word.
    pub fn verdict(&self) -> &'static str {
        match (self.holds, self.severity) {
            (true, _) => "ok",
            (false, Severity::Error) => "broken",
            (false, Severity::Warning) => "warning",
        }
    }
}

/// Broken invariants sorted: the errors noted in `errors`, the warnings' texts returned. A
/// problem's text names its setting and values, so it reads alone in a log.
pub fn judge(invariants: &[Invariant], errors: &mut ConfigErrors) -> Vec<String> {
    let mut warnings = vec![];
    for i in invariants.iter().filter(|i| !i.holds) {
        match i.severity {
            Severity::Error => errors.push(ConfigError::new(i.setting, i.problem.clone())),
            Severity::Warning => warnings.push(i.problem.clone()),
        }
    }
    warnings
}

/// A configuration that breaks an invariant; the message names the setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting}: {problem}")]
pub struct ConfigError {
    /// The setting to change, by its environment variable name (`REDIS_URL`).
    pub setting: &'static str,
    /// What is wrong, in words a person can act on (the value, and what is expected).
    pub problem: String,
}

impl ConfigError {
    /// The problem `problem` with `setting` (named by its environment variable).
    pub fn new(setting: &'static str, problem: impl Into<String>) -> Self {
        Self {
            setting,
            problem: problem.into(),
        }
    }
}

/// Every broken setting of one configuration, found in one pass, so a person fixes them all
/// after one run instead of learning of them one run at a time. Returned as an error
/// only when it holds at least one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigErrors(Vec<ConfigError>);

impl ConfigErrors {
    /// Note a problem.
    pub fn push(&mut self, e: ConfigError) {
        self.0.push(e);
    }

    /// `r`'s value, or `None` with its problems noted: the caller goes on checking the rest.
    pub fn take<T, E: Into<ConfigErrors>>(&mut self, r: Result<T, E>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.0.extend(e.into().0);
                None
            }
        }
    }

    /// `value`, or `None` with `setting`'s problem noted.
    pub fn require<T>(
        &mut self,
        value: Option<T>,
        setting: &'static str,
        problem: &str,
    ) -> Option<T> {
        if value.is_none() {
            self.push(ConfigError::new(setting, problem));
        }
        value
    }

    /// A setting's value checked by `check`, or `None` with its problem noted: `missing` when
    /// it is unset or empty (`NAME=` in an env file is unset), `check`'s when it is set but wrong.
    pub fn given<T>(
        &mut self,
        value: Option<&str>,
        setting: &'static str,
        missing: &str,
        check: impl FnOnce(&str) -> Result<T, ConfigError>,
    ) -> Option<T> {
        match value.filter(|v| !v.is_empty()) {
            None => {
                self.push(ConfigError::new(setting, missing));
                None
            }
            Some(v) => self.take(check(v)),
        }
    }

    /// True when no problem was noted: the configuration is valid so far.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The problems noted so far, in the order they were found.
    pub fn iter(&self) -> std::slice::Iter<'_, ConfigError> {
        self.0.iter()
    }

    /// `value` when no problem was noted, else every problem.
    pub fn or<T>(self, value: Option<T>) -> Result<T, ConfigErrors> {
        match value {
            Some(v) if self.is_empty() => Ok(v),
            Some(_) => Err(self),
            // a missing value always comes with its problem noted; say so if it did not
            None if self.is_empty() => Err(ConfigError::new("configuration", "incomplete").into()),
            None => Err(self),
        }
    }
}

impl std::fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

impl From<ConfigError> for ConfigErrors {
    fn from(e: ConfigError) -> Self {
        Self(vec![e])
    }
}

impl<'a> IntoIterator for &'a ConfigErrors {
    type Item = &'a ConfigError;
    type IntoIter = std::slice::Iter<'a, ConfigError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_errors_keep_every_problem() {
        let mut errors = ConfigErrors::default();
        assert_eq!(errors.take(Ok::<_, ConfigError>(1)), Some(1));
        let none: Option<u8> = errors.take(Err(ConfigError::new("A", "missing")));
        assert_eq!(none, None);
        errors.push(ConfigError::new("B", "bad"));
        assert_eq!(errors.to_string(), "A: missing; B: bad");
        assert_eq!(errors.clone().or(Some(1)).unwrap_err(), errors);
        assert_eq!(ConfigErrors::default().or(Some(1)), Ok(1));
    }
}
