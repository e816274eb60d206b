//! Reply codes: a short code a question carries when other questions are open to the same
//! person, so a reply says which one it answers (`K7 yes`). A code is a letter and a digit
//! (letters and digits that read alike left out), a letter and two digits once those run out.

/// What a question's text ends with when it shows its code.
pub fn suffix(code: &str) -> String {
    format!("\n\n(Start your reply with {code}.)")
}

/// `body` without the [`suffix`] it ends with, if it ends with one: the producer's own text,
/// as a legacy worker sends the same job.
pub fn without_suffix(body: &str) -> Option<&str> {
    let (text, tail) = body.rsplit_once("\n\n(Start your reply with ")?;
    let code = tail.strip_suffix(".)")?;
    let mut chars = code.chars();
    let letter = chars.next().is_some_and(|c| c.is_ascii_uppercase());
    let digits = chars.as_str();
    (letter && (1..=2).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()))
        .then_some(text)
}

/// The longest [`suffix`] (a three-character code): a question's body leaves room for it.
pub const SUFFIX_MAX: usize = 30;

const LETTERS: &[u8] = b"ACDEFHJKMNPRTUVWXY";
const DIGITS: &[u8] = b"23456789";

/// A code that is none of `taken` (compared without case), at random among the free ones: a
/// letter and a digit while one is free, else a letter and two digits. `None` once all 1,296
/// are taken: the caller decides what a person with that many questions kept gets.
pub fn fresh(taken: &[String]) -> Option<String> {
    let free = |c: &String| !taken.iter().any(|t| t.eq_ignore_ascii_case(c));
    // a few draws first: with few codes taken (the usual case) no list is built
    for _ in 0..8 {
        let c = pick(1);
        if free(&c) {
            return Some(c);
        }
    }
    for digits in 1..=2 {
        let left: Vec<String> = every(digits).filter(free).collect();
        if !left.is_empty() {
            return Some(left[rand::random_range(0..left.len())].clone());
        }
    }
    None
}

/// Every code of a letter and `digits` digits.
fn every(digits: u32) -> impl Iterator<Item = String> {
    let n = DIGITS.len().pow(digits);
    LETTERS.iter().flat_map(move |l| {
        (0..n).map(move |mut i| {
            let mut s = String::from(*l as char);
            for _ in 0..digits {
                s.push(DIGITS[i % DIGITS.len()] as char);
                i /= DIGITS.len();
            }
            s
        })
    })
}

fn pick(digits: usize) -> String {
    let mut s = String::new();
    s.push(LETTERS[rand::random_range(0..LETTERS.len())] as char);
    for _ in 0..digits {
        s.push(DIGITS[rand::random_range(0..DIGITS.len())] as char);
    }
    s
}

/// A reply's leading code and the rest of its text: `"k7: yes"` → `("K7", "yes")`. `None` when
/// the first word is not code-shaped (a letter and one or two digits).
pub fn split(text: &str) -> Option<(String, &str)> {
    let t = text.trim_start();
    let end = t
        .find(|c: char| c.is_whitespace() || ".,:;!?-)#".contains(c))
        .unwrap_or(t.len());
    let word = &t[..end];
    let mut chars = word.chars();
    let shaped = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && (2..=3).contains(&word.len())
        && chars.all(|c| c.is_ascii_digit());
    if !shaped {
        return None;
    }
    let rest = t[end..].trim_start_matches(|c: char| c.is_whitespace() || ".,:;!?-)#".contains(c));
    Some((word.to_ascii_uppercase(), rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_without_its_suffix_is_the_producers_text() {
        let asked = format!("Roll back api-7?{}", suffix("K7"));
        assert_eq!(without_suffix(&asked), Some("Roll back api-7?"));
        assert_eq!(without_suffix("Roll back api-7?"), None);
        assert_eq!(without_suffix("x\n\n(Start your reply with k7.)"), None);
    }

    #[test]
    fn the_suffix_fits_the_room_a_question_leaves() {
        assert_eq!(suffix("K72").chars().count(), SUFFIX_MAX);
        assert!(suffix("K7").chars().count() < SUFFIX_MAX);
    }

    #[test]
    fn codes_are_fresh_and_grow_once_the_short_ones_run_out() {
        let mut taken = Vec::new();
        for _ in 0..40 {
            let c = fresh(&taken).expect("a free code");
            assert!(!taken.contains(&c), "{c} twice");
            taken.push(c);
        }
        let short: Vec<String> = every(1).collect();
        assert_eq!(short.len(), 144);
        // the last short code free is found, not missed by chance
        let last = short[77].clone();
        let all_but_one: Vec<String> = short.iter().filter(|c| **c != last).cloned().collect();
        assert_eq!(fresh(&all_but_one), Some(last));
        assert_eq!(fresh(&short).map(|c| c.len()), Some(3));
    }

    #[test]
    fn no_code_once_every_one_is_taken() {
        let all: Vec<String> = every(1).chain(every(2)).collect();
        assert_eq!(all.len(), 1_296);
        let distinct: std::collections::HashSet<&String> = all.iter().collect();
        assert_eq!(distinct.len(), 1_296);
        assert!(
            all.iter()
                .all(|c| split(c).map(|(w, _)| w) == Some(c.clone()))
        );
        let lower: Vec<String> = all.iter().map(|c| c.to_lowercase()).collect();
        assert_eq!(fresh(&lower), None);
        assert!(fresh(&all[1..]).is_some_and(|c| c == all[0]));
    }

    #[test]
    fn a_reply_names_its_code_first() {
        assert_eq!(split("K7 yes"), Some(("K7".into(), "yes")));
        assert_eq!(
            split("  k7: roll it back"),
            Some(("K7".into(), "roll it back"))
        );
        assert_eq!(split("A23"), Some(("A23".into(), "")));
        assert_eq!(split("yes K7"), None);
        assert_eq!(split("OK"), None);
        assert_eq!(split("K"), None);
        assert_eq!(split("K777 x"), None);
        assert_eq!(split(""), None);
    }
}
