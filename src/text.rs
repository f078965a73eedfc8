//! Word handling shared by indexing and querying, so both sides see the same words:
//! identifier splitting (`policyNo` → `policy no`, `vn_gebdat` → `vn gebdat`), folding
//! (lower case, `ä` → `a`, `ß` → `ss`) and the split of a run-together word (`seriesnumber`)
//! into the catalog's own words.

/// `n` and the noun, singular for one: `count(1, "column")` → `1 column`, `count(3, "column")` →
/// `3 columns` (the nouns messages count take a plain `s`).
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Splits identifiers on `_`, `-`, `.`, digits boundaries and camelCase humps.
/// `claimHandlerId` → `claim Handler Id`; `vn_gebdat` → `vn gebdat`; `HTTPStatus` → `HTTP Status`.
pub fn split_identifier(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        if c == '_' || c == '-' || c == '.' {
            out.push(' ');
            continue;
        }
        if i > 0 {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let hump = c.is_uppercase()
                && (prev.is_lowercase()
                    || prev.is_ascii_digit()
                    || (prev.is_uppercase() && next_lower));
            let digit_edge = c.is_ascii_digit() != prev.is_ascii_digit()
                && prev.is_alphanumeric()
                && c.is_alphanumeric();
            if hump || digit_edge {
                out.push(' ');
            }
        }
        out.push(c);
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Lower case with German letters folded to ASCII, the way the lexical index stores words.
pub fn fold(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    for c in word.chars().flat_map(char::to_lowercase) {
        match c {
            'ä' => out.push('a'),
            'ö' => out.push('o'),
            'ü' => out.push('u'),
            'ß' => out.push_str("ss"),
            'é' | 'è' | 'ê' => out.push('e'),
            'á' | 'à' | 'â' => out.push('a'),
            c => out.push(c),
        }
    }
    out
}

/// The folded words of an identifier or a text with identifiers in it: `customerBirthDate`,
/// `customer_birth_date` and `customer birth date` all give `[customer, birth, date]`.
pub fn identifier_words(text: &str) -> Vec<String> {
    words(&split_identifier(text))
}

/// What names one kind of column: its identifier words, joined (`payee_iban`, `payeeIban` and
/// `payee iban` are one name).
pub fn name_key(column: &str) -> String {
    identifier_words(column).join(" ")
}

/// The alphanumeric words of a text, folded.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(fold)
        .collect()
}

/// Shortest word [`split_run_together`] looks into, and the shortest part it makes.
pub const SPLIT_MIN_WORD: usize = 6;
pub const SPLIT_MIN_PART: usize = 3;

/// The two parts of a run-together word (`seriesnumber`, `birthdate`, `username`) that the
/// catalog itself uses as words, or `None`. `freq` gives the number of documents holding a
/// word (0 for a word it does not hold, such as a stop word). A cut is taken only when both
/// parts are more frequent than the whole word, so a common word is not taken apart into
/// rarer look-alikes (`password` into `pass` + `word`); among such cuts the one whose rarer
/// part is most frequent wins, ties to the longer first part. No dictionary: the catalog's
/// own vocabulary is the only authority.
pub fn split_run_together(word: &str, freq: impl Fn(&str) -> u64) -> Option<(String, String)> {
    let chars: Vec<char> = word.chars().collect();
    if chars.len() < SPLIT_MIN_WORD || !chars.iter().all(|c| c.is_alphabetic()) {
        return None;
    }
    let whole = freq(word);
    let mut best: Option<(u64, usize)> = None;
    for cut in (SPLIT_MIN_PART..=chars.len() - SPLIT_MIN_PART).rev() {
        let left: String = chars[..cut].iter().collect();
        let right: String = chars[cut..].iter().collect();
        let rarer = freq(&left).min(freq(&right));
        if rarer > whole && best.is_none_or(|(b, _)| rarer > b) {
            best = Some((rarer, cut));
        }
    }
    best.map(|(_, cut)| (chars[..cut].iter().collect(), chars[cut..].iter().collect()))
}

/// Appends to `out` the two parts of each of `candidates` that [`split_run_together`] finds,
/// each once and none that `written` (the text's own words) holds already.
pub fn push_run_together_parts<'a>(
    out: &mut Vec<String>,
    candidates: impl IntoIterator<Item = &'a String>,
    written: &[String],
    freq: impl Fn(&str) -> u64,
) {
    for w in candidates {
        if let Some((left, right)) = split_run_together(w, &freq) {
            for part in [left, right] {
                if !written.contains(&part) && !out.contains(&part) {
                    out.push(part);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_column_is_singular_and_every_other_count_plural() {
        assert_eq!(count(1, "column"), "1 column");
        assert_eq!(count(0, "column"), "0 columns");
        assert_eq!(count(3, "column"), "3 columns");
    }

    fn freq(word: &str) -> u64 {
        match word {
            "series" => 4,
            "number" => 30,
            "numb" => 1,
            "pass" => 2,
            "word" => 1,
            "password" => 5,
            "birth" => 6,
            "date" => 40,
            "birthdate" => 1,
            _ => 0,
        }
    }

    #[test]
    fn run_together_words_split_into_the_catalogs_words() {
        assert_eq!(
            split_run_together("seriesnumber", freq),
            Some(("series".to_string(), "number".to_string()))
        );
        // Known as a whole but rarer than its parts.
        assert_eq!(
            split_run_together("birthdate", freq),
            Some(("birth".to_string(), "date".to_string()))
        );
        // More frequent than its parts: a word of its own.
        assert_eq!(split_run_together("password", freq), None);
        // No part known, too short, or not letters.
        assert_eq!(split_run_together("zzqxvrrk", freq), None);
        assert_eq!(split_run_together("numb", freq), None);
        assert_eq!(split_run_together("date2birth", freq), None);
    }

    #[test]
    fn identifiers_split_on_underscores_and_humps() {
        assert_eq!(split_identifier("claimHandlerId"), "claim Handler Id");
        assert_eq!(split_identifier("vn_gebdat"), "vn gebdat");
        assert_eq!(split_identifier("HTTPStatus"), "HTTP Status");
        assert_eq!(split_identifier("pml_200_eur"), "pml 200 eur");
        assert_eq!(split_identifier("icd10_codes"), "icd 10 codes");
        assert_eq!(split_identifier("seriesnumber"), "seriesnumber");
    }

    #[test]
    fn folding_maps_german_letters() {
        assert_eq!(fold("Schadenhöhe"), "schadenhohe");
        assert_eq!(fold("Straße"), "strasse");
    }
}
