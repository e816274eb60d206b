//! Reply codes: a short code a question carries when other questions are open to the same
//! person, so a reply says which one it answers (`K7 yes`). A code is a letter and a digit
//! (letters and digits that read alike left out), a letter and two digits once those run out.

/// What a question's text ends with when it shows its code.
pub fn suffix(code: &str) -> String {
    format!("\n\n(Start your reply with {code}.)")
}

/// The longest [`suffix`] (a three-character code): a question's body leaves room for it.
pub const SUFFIX_MAX: usize = 30;

const LETTERS: &[u8] = b"ACDEFHJKMNPRTUVWXY";
const DIGITS: &[u8] = b"23456789";

/// A code that is none of `taken` (compared without case).
pub fn fresh(taken: &[String]) -> String {
    let free = |c: &str| !taken.iter().any(|t| t.eq_ignore_ascii_case(c));
    for _ in 0..64 {
        let c = pick(1);
        if free(&c) {
            return c;
        }
    }
    loop {
        let c = pick(2);
        if free(&c) {
            return c;
        }
    }
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
    fn the_suffix_fits_the_room_a_question_leaves() {
        assert_eq!(suffix("K72").chars().count(), SUFFIX_MAX);
        assert!(suffix("K7").chars().count() < SUFFIX_MAX);
    }

    #[test]
    fn codes_are_fresh_and_grow_once_the_short_ones_run_out() {
        let mut taken = Vec::new();
        for _ in 0..40 {
            let c = fresh(&taken);
            assert!(!taken.contains(&c), "{c} twice");
            taken.push(c);
        }
        let all: Vec<String> = LETTERS
            .iter()
            .flat_map(|l| {
                DIGITS
                    .iter()
                    .map(move |d| format!("{}{}", *l as char, *d as char))
            })
            .collect();
        assert_eq!(fresh(&all).len(), 3);
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
