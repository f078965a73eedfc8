//! A German→English glossary of catalog vocabulary (`ontology/glossary-de-en.tsv`, next to the
//! ontology) used to expand German words of a query with their English terms, so that a
//! German question meets English column descriptions. Compounds are split into glossary
//! words (`Kündigungswahrscheinlichkeit` → `kündigung` + `wahrscheinlichkeit`), dropping a
//! linking `s`/`n`/`es`/`en`; a case or plural ending on the last part is dropped too
//! (`Versicherungsscheins`). A long compound that does not split wholly still gives its known
//! first and last parts (`Gehaltsnachabrechnung` → `gehalt` … `abrechnung`). The expansion is
//! echoed with every search (rule 11); it never replaces the caller's words.
//!
//! Beside it, a lexicon of data-engineering abbreviations (`ontology/abbreviations.tsv`:
//! `cust`, `addr`, `dob`, `nr`, ...) expands whole words only, of any length, the same way.
//! Without a file beside the ontology the built-in copy of that lexicon applies.

use std::collections::HashMap;
use std::path::Path;

use crate::text::{fold, words};

/// File name of the glossary, next to the ontology file.
pub const GLOSSARY_FILE: &str = "glossary-de-en.tsv";
/// File name of the abbreviation lexicon, next to the ontology file.
pub const ABBREVIATIONS_FILE: &str = "abbreviations.tsv";
/// The lexicon used when no [`ABBREVIATIONS_FILE`] is beside the ontology.
pub const BUILT_IN_ABBREVIATIONS: &str = include_str!("../../ontology/abbreviations.tsv");
const MIN_PART: usize = 3;
const MAX_PARTS: usize = 3;
/// Shortest known part [`Glossary::partial`] takes from a compound, and the shortest word it
/// looks into.
const PARTIAL_MIN: usize = 4;
const PARTIAL_WORD_MIN: usize = 10;
/// Case and plural endings tried, shortest first, when a (last) word part is not in the
/// glossary as written.
const INFLECTIONS: [&str; 7] = ["s", "n", "e", "es", "en", "er", "ern"];

/// Folded German word → English terms, and abbreviation → English words.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Glossary {
    entries: HashMap<String, Vec<String>>,
    abbreviations: HashMap<String, Vec<String>>,
}

impl Glossary {
    /// `self` with the abbreviation lexicon `text` (`abbreviation<TAB>english words` lines).
    pub fn with_abbreviations(self, text: &str) -> Result<Glossary, String> {
        Ok(Glossary {
            abbreviations: Glossary::parse(text)?.entries,
            ..self
        })
    }

    /// The glossary of `german` (German words) and `abbreviations` texts, each optional;
    /// an error names the file whose line is malformed.
    pub fn from_texts(
        german: Option<&str>,
        abbreviations: Option<&str>,
    ) -> Result<Glossary, String> {
        let glossary = german
            .map(Glossary::parse)
            .transpose()
            .map_err(|e| format!("{GLOSSARY_FILE}: {e}"))?
            .unwrap_or_default();
        match abbreviations {
            Some(text) => glossary
                .with_abbreviations(text)
                .map_err(|e| format!("{ABBREVIATIONS_FILE}: {e}")),
            None => Ok(glossary),
        }
    }

    /// Parses `german<TAB>english words` lines; `#` starts a comment. Returns the problem line.
    pub fn parse(text: &str) -> Result<Glossary, String> {
        let mut entries: HashMap<String, Vec<String>> = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_end();
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let (de, en) = line
                .split_once('\t')
                .ok_or_else(|| format!("line {}: expected `german<TAB>english`", i + 1))?;
            let key = fold(de.trim());
            let terms: Vec<String> = words(en);
            if key.is_empty() || terms.is_empty() {
                return Err(format!(
                    "line {}: empty German word or English terms",
                    i + 1
                ));
            }
            entries.insert(key, terms);
        }
        Ok(Glossary {
            entries,
            abbreviations: HashMap::new(),
        })
    }

    /// Loads the glossary next to `ontology_path`, if there is one.
    pub fn load_beside(ontology_path: &Path) -> Result<Option<(Glossary, String)>, String> {
        Self::load_file(ontology_path, GLOSSARY_FILE)
    }

    /// The abbreviation lexicon next to `ontology_path`, or the built-in one.
    pub fn abbreviations_beside(ontology_path: &Path) -> Result<String, String> {
        Ok(Self::load_file(ontology_path, ABBREVIATIONS_FILE)?
            .map_or_else(|| BUILT_IN_ABBREVIATIONS.to_string(), |(_, text)| text))
    }

    fn load_file(ontology_path: &Path, name: &str) -> Result<Option<(Glossary, String)>, String> {
        let path = ontology_path
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join(name);
        if !path.exists() {
            return Ok(None);
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let glossary =
            Glossary::parse(&text).map_err(|e| format!("{}: {e}; fix the file", path.display()))?;
        Ok(Some((glossary, text)))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Every German word (folded: umlauts as base vowels, ß as ss) with its English terms,
    /// sorted: what a host may read before it writes a search.
    pub fn german_terms(&self) -> std::collections::BTreeMap<String, String> {
        Self::listed(&self.entries)
    }

    /// Every abbreviation with its English words, sorted.
    pub fn abbreviation_terms(&self) -> std::collections::BTreeMap<String, String> {
        Self::listed(&self.abbreviations)
    }

    fn listed(map: &HashMap<String, Vec<String>>) -> std::collections::BTreeMap<String, String> {
        map.iter().map(|(k, v)| (k.clone(), v.join(" "))).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Splits a folded word into glossary words (at most three), longest first part first.
    fn decompose(&self, word: &str) -> Option<Vec<&str>> {
        if let Some(k) = self.lookup(word) {
            return Some(vec![k]);
        }
        self.split(word, MAX_PARTS)
    }

    /// The glossary word `word` is, as written or inflected: German adds case and plural
    /// endings to the last part of a word (`Kunden`, `Versicherungsscheins`, `Verträge`
    /// folded to `vertrage`), which the glossary lists in their base form.
    fn lookup(&self, word: &str) -> Option<&str> {
        if let Some((k, _)) = self.entries.get_key_value(word) {
            return Some(k.as_str());
        }
        INFLECTIONS.iter().find_map(|ending| {
            let stem = word.strip_suffix(ending)?;
            if stem.chars().count() < MIN_PART {
                return None;
            }
            self.entries.get_key_value(stem).map(|(k, _)| k.as_str())
        })
    }

    /// For a compound that does not split wholly into glossary words: its longest known first
    /// part (the modifier) and its longest known last part (the head, which carries the
    /// compound's meaning: `Gehaltsabrechnung` is a kind of `Abrechnung`), each at least
    /// [`PARTIAL_MIN`] characters. Empty for words shorter than [`PARTIAL_WORD_MIN`].
    fn partial(&self, word: &str) -> Vec<&str> {
        let chars: Vec<char> = word.chars().collect();
        let n = chars.len();
        let mut out = Vec::new();
        if n < PARTIAL_WORD_MIN {
            return out;
        }
        let text = |range: std::ops::Range<usize>| chars[range].iter().collect::<String>();
        if let Some(k) = (PARTIAL_MIN..=n - MIN_PART)
            .rev()
            .find_map(|cut| self.entries.get_key_value(text(0..cut).as_str()))
        {
            out.push(k.0.as_str());
        }
        if let Some(k) = (MIN_PART..=n - PARTIAL_MIN).find_map(|start| self.lookup(&text(start..n)))
        {
            if !out.contains(&k) {
                out.push(k);
            }
        }
        out
    }

    fn split(&self, word: &str, parts_left: usize) -> Option<Vec<&str>> {
        if parts_left == 0 {
            return None;
        }
        if let Some(k) = self.lookup(word) {
            return Some(vec![k]);
        }
        let chars: Vec<char> = word.chars().collect();
        for cut in (MIN_PART..chars.len().saturating_sub(MIN_PART - 1)).rev() {
            let head: String = chars[..cut].iter().collect();
            let Some((k, _)) = self.entries.get_key_value(head.as_str()) else {
                continue;
            };
            let rest: String = chars[cut..].iter().collect();
            for link in ["", "s", "n", "es", "en"] {
                if let Some(tail) = rest.strip_prefix(link) {
                    if tail.chars().count() >= MIN_PART {
                        if let Some(mut more) = self.split(tail, parts_left - 1) {
                            more.insert(0, k.as_str());
                            return Some(more);
                        }
                    }
                }
            }
        }
        None
    }

    /// English terms for the German words of `description` that are not already in it.
    pub fn expand(&self, description: &str) -> Vec<String> {
        let query_words = words(description);
        let mut out: Vec<String> = Vec::new();
        for w in &query_words {
            if let Some(terms) = self.abbreviations.get(w) {
                for term in terms {
                    if !query_words.contains(term) && !out.contains(term) {
                        out.push(term.clone());
                    }
                }
                continue;
            }
            if w.chars().count() < MIN_PART || w.chars().all(|c| c.is_ascii_digit()) {
                continue;
            }
            let restored = umlauts_restored(w);
            let parts = self
                .decompose(w)
                .or_else(|| self.decompose(restored.as_deref()?))
                .unwrap_or_else(|| {
                    let mut parts = self.partial(w);
                    for part in restored
                        .as_deref()
                        .map(|r| self.partial(r))
                        .unwrap_or_default()
                    {
                        if !parts.contains(&part) {
                            parts.push(part);
                        }
                    }
                    parts
                });
            for part in parts {
                for term in &self.entries[part] {
                    if !query_words.contains(term) && !out.contains(term) {
                        out.push(term.clone());
                    }
                }
            }
        }
        out
    }
}

/// `w` with ae, oe and ue read as the umlauts they stand for where ä, ö and ü are not at hand
/// (`pruefung`, `gebuehr`), folded as [`fold`] folds them (to a, o, u); `None` without such a
/// pair. [`Glossary::expand`] reads a word in both spellings: an English word with such a pair
/// (`value`, `queue`) is no German word either way.
/// The u of eue and que is no umlaut (`steuer`, `neue`, `queue`).
fn umlauts_restored(w: &str) -> Option<String> {
    let chars: Vec<char> = w.chars().collect();
    let mut out = String::with_capacity(w.len());
    let mut changed = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let umlaut = chars.get(i + 1) == Some(&'e')
            && match c {
                'a' | 'o' => true,
                'u' => !matches!(i.checked_sub(1).map(|p| chars[p]), Some('e' | 'q')),
                _ => false,
            };
        out.push(c);
        if umlaut {
            changed = true;
            i += 2;
        } else {
            i += 1;
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glossary() -> Glossary {
        Glossary::parse(
            "# test\nkündigung\tcancellation churn\nwahrscheinlichkeit\tprobability\ngeburtsdatum\tbirth date\nversicherung\tinsurance\nnehmer\tholder\n",
        )
        .unwrap()
    }

    #[test]
    fn whole_words_and_compounds_expand() {
        let g = glossary();
        assert_eq!(g.expand("Geburtsdatum"), vec!["birth", "date"]);
        assert_eq!(
            g.expand("Kündigungswahrscheinlichkeit des Kunden"),
            vec!["cancellation", "churn", "probability"]
        );
        assert_eq!(g.expand("Versicherungsnehmer"), vec!["insurance", "holder"]);
    }

    #[test]
    fn inflected_words_and_compounds_expand_to_their_base_form() {
        let g = Glossary::parse(
            "kunde\tcustomer\nvertrag\tcontract\nversicherung\tinsurance\nschein\tcertificate\n",
        )
        .unwrap();
        assert_eq!(g.expand("Kunden"), vec!["customer"]);
        assert_eq!(g.expand("Verträge"), vec!["contract"]);
        assert_eq!(
            g.expand("Versicherungsscheins"),
            vec!["insurance", "certificate"]
        );
        // A stem shorter than a word part is not a match.
        assert!(g.expand("Kuns").is_empty());
    }

    #[test]
    fn a_compound_with_an_unknown_part_expands_its_known_first_and_last_parts() {
        let g = Glossary::parse("kunde\tcustomer\nabrechnung\tstatement\n").unwrap();
        assert_eq!(
            g.expand("Kundensonderabrechnungen"),
            vec!["customer", "statement"]
        );
        // Short words are not taken apart on a partial match.
        assert!(g.expand("Kundexyz").is_empty());
    }

    #[test]
    fn ae_oe_ue_spellings_expand_as_the_umlauts_they_stand_for_and_english_words_with_them_do_not()
    {
        let g = Glossary::parse(
            "prüfung\tcheck review\nsanktion\tsanction\nliste\tlist\ngebühr\tfee\n",
        )
        .unwrap();
        assert_eq!(
            g.expand("Sanktionslistenpruefung"),
            g.expand("Sanktionslistenprüfung")
        );
        assert_eq!(
            g.expand("Sanktionslistenpruefung"),
            vec!["sanction", "list", "check", "review"]
        );
        assert_eq!(g.expand("Gebuehren"), vec!["fee"]);
        // A compound that splits only in part gives its known parts in either spelling.
        let partial = Glossary::parse("sanktion\tsanction\nprüfung\tcheck\n").unwrap();
        assert_eq!(
            partial.expand("Sanktionslistenpruefung"),
            vec!["sanction", "check"]
        );
        assert!(g.expand("value queue blue aerosol").is_empty());
        assert_eq!(umlauts_restored("gebuehr").as_deref(), Some("gebuhr"));
        assert_eq!(umlauts_restored("steuer"), None);
        assert_eq!(umlauts_restored("queue"), None);
        assert_eq!(
            umlauts_restored("faelligkeit").as_deref(),
            Some("falligkeit")
        );
    }

    #[test]
    fn english_words_and_unknown_words_do_not_expand() {
        let g = glossary();
        assert!(g.expand("date of birth").is_empty());
        assert!(g.expand("zzqx vrrk").is_empty());
    }

    #[test]
    fn abbreviations_expand_whole_words_only() {
        let g = glossary()
            .with_abbreviations("cust\tcustomer\ndob\tdate of birth\nnr\tnumber\n")
            .unwrap();
        assert_eq!(
            g.expand("cust_dob"),
            vec!["customer", "date", "of", "birth"]
        );
        assert_eq!(g.expand("kd nr"), vec!["number"]);
        // Inside a longer word an abbreviation is not one: `custody`, `dobby`, `nrw`.
        assert!(g.expand("custody dobby nrw").is_empty());
        // A word the caller wrote is not added again.
        assert_eq!(g.expand("customer cust"), Vec::<String>::new());
    }

    #[test]
    fn the_built_in_abbreviations_parse() {
        let g = Glossary::default()
            .with_abbreviations(BUILT_IN_ABBREVIATIONS)
            .unwrap();
        assert_eq!(g.expand("txn_amt"), vec!["transaction", "amount"]);
    }

    #[test]
    fn malformed_line_is_refused_with_its_number() {
        assert_eq!(
            Glossary::parse("# c\nkunde customer\n").unwrap_err(),
            "line 2: expected `german<TAB>english`"
        );
    }
}
