//! One call of one script, its keys and arguments named as the script's header names them.
//!
//! A script's header is its wire contract: `KEYS[n] <name>` and `ARGV[n] <name>` entries (one
//! per line, or in columns two spaces apart), a range `KEYS[a..b] as other.lua`, a tail
//! `ARGV[n..] <name>`. A call adds each key and argument by name, in order ([`Call::key`],
//! [`Call::arg`]); in debug builds (every test) each name is checked against the header's
//! entry at that position, so a call whose order drifts from its script fails the first test
//! that runs it. Release builds skip the check.

use redis::FromRedisValue;
use redis::aio::ConnectionLike;

use crate::connection::Conn;
use crate::scripts::{Durability, LuaScript, RoundTrips, WaitOn};
use crate::slots::Topology;

/// A script call being put together: [`LuaScript::call`], then keys and arguments by name,
/// then one of the `run` methods.
#[derive(Debug)]
#[must_use = "a call does nothing until it is run"]
pub struct Call<'s> {
    script: &'s LuaScript,
    keys: Vec<String>,
    /// Key positions named so far, given or left out ([`Call::key_if`]).
    named: usize,
    args: Vec<String>,
    /// Positions before this call's first key and argument ([`LuaScript::call_after`]).
    key_base: usize,
    arg_base: usize,
}

impl LuaScript {
    /// A call of this script with no keys or arguments yet.
    pub fn call(&self) -> Call<'_> {
        Call {
            script: self,
            keys: Vec::new(),
            named: 0,
            args: Vec::new(),
            key_base: 0,
            arg_base: 0,
        }
    }

    /// The part of a call that comes after `keys` keys and `args` arguments someone else lays
    /// out (a processor's step after move_to_finished's contract): named from `KEYS[keys + 1]`
    /// and `ARGV[args + 1]` on; [`Call::into_parts`] gives this part alone.
    pub fn call_after(&self, keys: usize, args: usize) -> Call<'_> {
        Call {
            named: keys,
            key_base: keys,
            arg_base: args,
            ..self.call()
        }
    }
}

impl<'s> Call<'s> {
    /// The next key, which the header names `name` (`"claim key"` for `KEYS[1] claim key`).
    pub fn key(mut self, name: &str, key: impl Into<String>) -> Self {
        self.named += 1;
        header::check(self.script, Part::Keys, self.named, name);
        assert!(
            self.named == self.key_base + self.keys.len() + 1,
            "{}: KEYS[{}] `{name}` after a key left out",
            self.script.name,
            self.named
        );
        self.keys.push(key.into());
        self
    }

    /// The next key when there is one: a trailing key a layout may leave out (a global index
    /// on a Redis Cluster, written by a call of its own).
    pub fn key_if(self, name: &str, key: Option<impl Into<String>>) -> Self {
        match key {
            Some(key) => self.key(name, key),
            None => {
                let mut call = self;
                call.named += 1;
                header::check(call.script, Part::Keys, call.named, name);
                call
            }
        }
    }

    /// Several keys the header gives as one range (`KEYS[1..14] as move_to_finished.lua`, or
    /// `KEYS[1..4] as the Cluster layout`): `script` is what follows the `as`.
    pub fn keys_as(mut self, script: &str, keys: impl IntoIterator<Item = String>) -> Self {
        let from = self.key_base + self.keys.len() + 1;
        self.keys.extend(keys);
        self.named = self.key_base + self.keys.len();
        header::check_range(self.script, Part::Keys, from, self.named, script);
        self
    }

    /// The next argument, which the header names `name`.
    pub fn arg(mut self, name: &str, arg: impl ToString) -> Self {
        header::check(
            self.script,
            Part::Args,
            self.arg_base + self.args.len() + 1,
            name,
        );
        self.args.push(arg.to_string());
        self
    }

    /// Several arguments the header gives as another script's (`ARGV[1..17] as
    /// move_to_finished.lua`).
    pub fn args_as(mut self, script: &str, args: impl IntoIterator<Item = String>) -> Self {
        let from = self.arg_base + self.args.len() + 1;
        self.args.extend(args);
        let to = self.arg_base + self.args.len();
        header::check_range(self.script, Part::Args, from, to, script);
        self
    }

    /// The arguments from here to the end, which the header names `name` (`ARGV[12..]
    /// field/value pairs`); none at all is allowed.
    pub fn rest(mut self, name: &str, args: impl IntoIterator<Item = String>) -> Self {
        header::check_tail(
            self.script,
            Part::Args,
            self.arg_base + self.args.len() + 1,
            name,
        );
        self.args.extend(args);
        self
    }

    /// The keys and arguments as laid out, for a caller that sends them itself (a group
    /// commit, a fused finish riding another call).
    pub fn into_parts(self) -> (Vec<String>, Vec<String>) {
        (self.keys, self.args)
    }

    /// The keys so far.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// The arguments so far.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// The script this call runs.
    pub fn script(&self) -> &'s LuaScript {
        self.script
    }

    /// Run it ([`LuaScript::run`]).
    pub async fn run<T: FromRedisValue>(
        self,
        conn: &mut (impl ConnectionLike + Send),
        trips: &RoundTrips,
    ) -> redis::RedisResult<T> {
        self.script.run(conn, trips, &self.keys, &self.args).await
    }

    /// Run it laid out for `topology` ([`LuaScript::run_in`]).
    pub async fn run_in<T: FromRedisValue>(
        self,
        topology: Topology,
        conn: &mut (impl ConnectionLike + Send),
        trips: &RoundTrips,
    ) -> redis::RedisResult<T> {
        self.script
            .run_in(topology, conn, trips, &self.keys, &self.args)
            .await
    }

    /// Run it as a write that must survive a failover ([`LuaScript::run_durably`]).
    pub async fn run_durably<T: FromRedisValue>(
        self,
        topology: Topology,
        conn: &mut Conn,
        trips: &RoundTrips,
        wait: WaitOn<'_>,
    ) -> redis::RedisResult<(T, Durability)> {
        self.script
            .run_durably(topology, conn, trips, wait, &self.keys, &self.args)
            .await
    }
}

/// Which list of a header an entry is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    Keys,
    Args,
}

/// Reading a script's header, and (in debug builds) checking calls against it.
pub(crate) mod header {
    use super::Part;
    use crate::scripts::LuaScript;

    /// One entry of a header: `KEYS[3] open-attempts index`, or a range `KEYS[1..14] as …`.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub(crate) struct Entry {
        pub(crate) part: Part,
        pub(crate) from: usize,
        /// The last position a range covers; `None` for a tail (`ARGV[12..]`).
        pub(crate) to: Option<usize>,
        pub(crate) text: String,
    }

    /// The header's entries, in the order written: a `KEYS[` or `ARGV[` that opens a line or
    /// follows two spaces (a column), never one inside a sentence.
    pub(crate) fn entries(code: &str) -> Vec<Entry> {
        let body = code.rfind("\n-- script: ").map_or(code, |at| &code[at..]);
        let header = body
            .split_once("--[[")
            .and_then(|(_, rest)| rest.split_once("]]"))
            .map_or("", |(h, _)| h);
        let mut out = Vec::new();
        for line in header.lines() {
            let mut rest = line;
            let mut at_start = true;
            while let Some(found) = next_entry(rest, at_start) {
                let (entry, after) = found;
                out.push(entry);
                rest = after;
                at_start = false;
            }
        }
        out
    }

    /// The next entry of `line` and what follows it.
    fn next_entry(line: &str, at_start: bool) -> Option<(Entry, &str)> {
        let mut search = 0;
        loop {
            let rel = [line[search..].find("KEYS["), line[search..].find("ARGV[")]
                .into_iter()
                .flatten()
                .min()?;
            let at = search + rel;
            let before = &line[..at];
            let opens = (at_start && before.trim().is_empty()) || before.ends_with("  ");
            if !opens {
                search = at + 5;
                continue;
            }
            let part = if line[at..].starts_with("KEYS") {
                Part::Keys
            } else {
                Part::Args
            };
            let inside = &line[at + 5..];
            let close = inside.find(']')?;
            let (from, to) = match inside[..close].split_once("..") {
                Some((a, b)) => (a.parse().ok()?, Some(b.parse().ok())),
                None => (inside[..close].parse().ok()?, None),
            };
            let after = &inside[close + 1..];
            if !after.starts_with(char::is_whitespace) {
                // `ARGV[1]'s last digit`: a sentence about an entry, not one
                search = at + 5;
                continue;
            }
            // the text runs to the next column's entry or the end of the line
            let end = ["  KEYS[", "  ARGV["]
                .iter()
                .filter_map(|m| after.find(m))
                .min()
                .unwrap_or(after.len());
            let text = after[..end].trim().to_string();
            let to = match to {
                None => Some(from),
                Some(b) => b,
            };
            return Some((
                Entry {
                    part,
                    from,
                    to,
                    text,
                },
                &after[end..],
            ));
        }
    }

    /// Every script's header entries, read once per process (the checks run on every call
    /// of a debug build, so they must cost next to nothing).
    fn headers(script: &LuaScript) -> &'static [Entry] {
        static HEADERS: std::sync::LazyLock<std::collections::HashMap<&'static str, Vec<Entry>>> =
            std::sync::LazyLock::new(|| {
                crate::scripts::scripts()
                    .all()
                    .into_iter()
                    .map(|s| (s.name, entries(s.code())))
                    .collect()
            });
        HEADERS.get(script.name).map_or(&[], Vec::as_slice)
    }

    /// The entry covering position `n` of `part`.
    fn covering(script: &LuaScript, part: Part, n: usize) -> Option<&'static Entry> {
        headers(script)
            .iter()
            .find(|e| e.part == part && e.from <= n && e.to.is_none_or(|to| n <= to))
    }

    fn label(part: Part) -> &'static str {
        match part {
            Part::Keys => "KEYS",
            Part::Args => "ARGV",
        }
    }

    /// Whether `text` starts with `name`, ASCII case aside.
    fn names(text: &str, name: &str) -> bool {
        text.as_bytes()
            .get(..name.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(name.as_bytes()))
    }

    /// Panics (debug builds) unless position `n` of `part` is a single entry named `name`.
    pub(crate) fn check(script: &LuaScript, part: Part, n: usize, name: &str) {
        if cfg!(debug_assertions) {
            match covering(script, part, n) {
                Some(e) if e.to == Some(e.from) && names(&e.text, name) => {}
                found => panic!(
                    "{}: the call names {}[{n}] `{name}`, the header says {:?}",
                    script.name,
                    label(part),
                    found.map(|e| &e.text)
                ),
            }
        }
    }

    /// Panics (debug builds) unless the header has a range entry for exactly `from..=to`
    /// given as `of`'s (`KEYS[1..14] as move_to_finished.lua`, or a second layout: `KEYS[1..4]
    /// as the Cluster layout`).
    pub(crate) fn check_range(script: &LuaScript, part: Part, from: usize, to: usize, of: &str) {
        if cfg!(debug_assertions) {
            let found = headers(script).iter().any(|e| {
                e.part == part
                    && e.from == from
                    && e.to == Some(to)
                    && names(&e.text, &format!("as {of}"))
            });
            assert!(
                found,
                "{}: the call gives {}[{from}..{to}] as {of}, the header has no such range",
                script.name,
                label(part),
            );
        }
    }

    /// Panics (debug builds) unless position `n` of `part` opens a tail named `name`.
    pub(crate) fn check_tail(script: &LuaScript, part: Part, n: usize, name: &str) {
        if cfg!(debug_assertions) {
            match covering(script, part, n) {
                Some(e) if e.from == n && e.to.is_none() && names(&e.text, name) => {}
                found => panic!(
                    "{}: the call names {}[{n}..] `{name}`, the header says {:?}",
                    script.name,
                    label(part),
                    found
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::header::{Entry, entries};
    use super::*;
    use crate::scripts::scripts;

    #[test]
    fn entries_are_read_in_lines_and_columns_never_inside_a_sentence() {
        let code = "\n-- script: x.lua\n--[[\n  x: when ARGV[2] is \"1\", it writes.\n\
                    ARGV[1]'s last digit says which.\n\
                    KEYS[1..3] as y.lua\n  KEYS[4] claim key        KEYS[5] record\n\
                    ARGV[1] token\n  ARGV[2] \"1\" write   ARGV[3..] pairs\n]]\nreturn 1";
        let e = entries(code);
        let show: Vec<(Part, usize, Option<usize>, &str)> = e
            .iter()
            .map(
                |Entry {
                     part,
                     from,
                     to,
                     text,
                 }| (*part, *from, *to, text.as_str()),
            )
            .collect();
        assert_eq!(
            show,
            [
                (Part::Keys, 1, Some(3), "as y.lua"),
                (Part::Keys, 4, Some(4), "claim key"),
                (Part::Keys, 5, Some(5), "record"),
                (Part::Args, 1, Some(1), "token"),
                (Part::Args, 2, Some(2), "\"1\" write"),
                (Part::Args, 3, None, "pairs"),
            ]
        );
    }

    /// Every script's header lists its keys and arguments from 1 with no gap, so a call can be
    /// checked against it; a batch script says its layout is the group commit's instead
    /// (`group_commit::batch_layout`, tested there).
    #[test]
    fn every_header_numbers_its_keys_and_arguments_without_a_gap() {
        for script in scripts().all() {
            if script.code().contains("The layout is the group commit's") {
                continue;
            }
            let e = entries(script.code());
            for part in [Part::Keys, Part::Args] {
                let mut mine: Vec<&Entry> = e.iter().filter(|x| x.part == part).collect();
                mine.sort_by_key(|x| x.from);
                let mut next = 1;
                for x in mine {
                    assert!(
                        x.from <= next,
                        "{}: {part:?}[{next}] is missing from the header",
                        script.name
                    );
                    next = next.max(x.to.map_or(usize::MAX, |to| to + 1));
                }
            }
            assert!(
                e.iter().any(|x| x.part == Part::Keys),
                "{}: no KEYS in the header",
                script.name
            );
        }
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "window_release.lua: the call names KEYS[1] `attempt record`")]
    fn a_call_out_of_the_headers_order_fails() {
        let _ = scripts().window_release.call().key("attempt record", "k");
    }

    #[test]
    fn a_call_in_the_headers_order_is_laid_out_as_given() {
        let (keys, args) = scripts()
            .window_release
            .call()
            .key("claim key", "c")
            .key("attempt record", "a")
            .key_if("open-attempts index", None::<String>)
            .arg("attempt token", "t")
            .into_parts();
        assert_eq!(
            (keys, args),
            (vec!["c".into(), "a".into()], vec!["t".into()])
        );
    }
}
