//! Word handling shared by indexing and querying, so both sides see the same words:
//! identifier splitting (`policyNo` → `policy no`, `vn_gebdat` → `vn gebdat`), folding
//! (lower case, `ä` → `a`, `ß` → `ss`) and the character trigrams that let a run-together or
//! compound word (`seriesnumber`, `Versicherungsnehmerstatus`) meet its parts.

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

/// The alphanumeric words of a text, folded.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(fold)
        .collect()
}

/// Minimum word length that takes part in trigram matching.
pub const GRAM_MIN_WORD: usize = 5;

/// Character trigrams of one folded word (with no padding), deduplicated, in order.
pub fn trigrams(word: &str) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    let mut out: Vec<String> = Vec::new();
    if chars.len() < 3 {
        return out;
    }
    for w in chars.windows(3) {
        let g: String = w.iter().collect();
        if !out.contains(&g) {
            out.push(g);
        }
    }
    out
}

/// The trigram field's text for a document: trigrams of every word long enough.
pub fn gram_text(text: &str) -> String {
    let mut out = String::new();
    for w in words(text) {
        if w.chars().count() >= GRAM_MIN_WORD && w.chars().all(|c| c.is_alphabetic()) {
            for g in trigrams(&w) {
                out.push_str(&g);
                out.push(' ');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn trigrams_are_deduplicated_and_ordered() {
        assert_eq!(trigrams("iban"), vec!["iba", "ban"]);
        assert_eq!(trigrams("aaaa"), vec!["aaa"]);
        assert!(trigrams("eu").is_empty());
    }

    #[test]
    fn gram_text_skips_short_words() {
        assert_eq!(gram_text("an IBAN of"), "");
        assert_eq!(gram_text("Steuer"), "ste teu eue uer ");
    }
}
