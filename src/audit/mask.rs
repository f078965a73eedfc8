//! Data values in audited arguments become typed placeholders: a tag and a column name cross
//! govcat's border, an IBAN pasted into a description never lands in the audit log. Each kind
//! is found by its shape and confirmed by its own check where it has one (IBAN mod 97, card
//! numbers Luhn, the German tax id's ISO 7064 check digit), so an account-number-shaped word
//! that is no IBAN stays as it was.
//!
//! Only the audit line is masked; the tool receives the arguments as sent.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

/// A kind of value the audit line masks, and its placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Masked {
    Iban,
    Card,
    Email,
    Phone,
    NationalId,
}

impl Masked {
    pub fn placeholder(self) -> &'static str {
        match self {
            Masked::Iban => "<IBAN>",
            Masked::Card => "<CARD>",
            Masked::Email => "<EMAIL>",
            Masked::Phone => "<PHONE>",
            Masked::NationalId => "<NATIONAL_ID>",
        }
    }
}

struct Patterns {
    iban: Regex,
    card: Regex,
    email: Regex,
    phone: Regex,
    ssn: Regex,
    tax_id: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let re = |s: &str| Regex::new(s).expect("a valid built-in pattern");
        Patterns {
            // Country, check digits, then 11-30 letters or digits, in groups of up to four
            // separated by single spaces (as printed) or run together.
            iban: re(r"\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}\b"),
            // 13-19 digits, optionally in groups separated by single spaces or hyphens.
            card: re(r"\b[0-9](?:[ -]?[0-9]){12,18}\b"),
            email: re(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"),
            // International form: + or 00, then 8-15 digits with spaces, hyphens, slashes or
            // one pair of parentheses between them.
            phone: re(r"(?:\+|\b00)[1-9][0-9 ()/-]{6,20}[0-9]\b"),
            // US social security number, with its hyphens.
            ssn: re(r"\b[0-9]{3}-[0-9]{2}-[0-9]{4}\b"),
            // German tax identification number (Steuer-ID): 11 digits, not starting with 0.
            tax_id: re(r"\b[1-9][0-9]{10}\b"),
        }
    })
}

fn digits(s: &str) -> Vec<u32> {
    s.chars().filter_map(|c| c.to_digit(10)).collect()
}

/// ISO 13616: move the first four characters to the end, letters to numbers, mod 97 is 1.
fn is_iban(candidate: &str) -> bool {
    let compact: String = candidate.chars().filter(|c| *c != ' ').collect();
    if !(15..=34).contains(&compact.len()) {
        return false;
    }
    let (head, tail) = compact.split_at(4);
    let mut rem: u32 = 0;
    for c in tail.chars().chain(head.chars()) {
        let v = match c.to_digit(36) {
            Some(v) => v,
            None => return false,
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

fn luhn(ds: &[u32]) -> bool {
    let sum: u32 = ds
        .iter()
        .rev()
        .enumerate()
        .map(|(i, d)| {
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 {
                    x - 9
                } else {
                    x
                }
            } else {
                *d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

fn is_card(candidate: &str) -> bool {
    let ds = digits(candidate);
    (13..=19).contains(&ds.len()) && luhn(&ds)
}

fn is_phone(candidate: &str) -> bool {
    let n = digits(candidate).len();
    let n = if candidate.starts_with("00") {
        n - 2
    } else {
        n
    };
    (8..=15).contains(&n) && candidate.matches('(').count() <= 1
}

fn is_ssn(candidate: &str) -> bool {
    let (area, rest) = candidate.split_at(3);
    let (group, serial) = (&rest[1..3], &rest[4..]);
    area != "000" && area != "666" && !area.starts_with('9') && group != "00" && serial != "0000"
}

/// ISO 7064 MOD 11,10 check digit of the German tax id.
fn is_tax_id(candidate: &str) -> bool {
    let ds = digits(candidate);
    let mut product = 10;
    for d in &ds[..10] {
        let mut sum = (d + product) % 10;
        if sum == 0 {
            sum = 10;
        }
        product = (sum * 2) % 11;
    }
    let check = (11 - product) % 10;
    check == ds[10]
}

/// `text` with every confirmed value replaced by its placeholder, and the kinds replaced.
pub fn mask_text(text: &str) -> (String, Vec<Masked>) {
    let p = patterns();
    let mut found = Vec::new();
    let mut out = text.to_string();
    type Pass<'a> = (&'a Regex, fn(&str) -> bool, Masked);
    let passes: [Pass<'_>; 6] = [
        (&p.email, |_| true, Masked::Email),
        (&p.iban, is_iban, Masked::Iban),
        (&p.card, is_card, Masked::Card),
        (&p.ssn, is_ssn, Masked::NationalId),
        (&p.tax_id, is_tax_id, Masked::NationalId),
        (&p.phone, is_phone, Masked::Phone),
    ];
    for (re, confirm, kind) in passes {
        // What is left of IBAN shape failed its check digits: a mistyped IBAN, not the digits
        // of a card or an identifier inside it.
        let iban_shaped: Vec<std::ops::Range<usize>> = match kind {
            Masked::Email | Masked::Iban => Vec::new(),
            _ => p.iban.find_iter(&out).map(|m| m.range()).collect(),
        };
        let mut hit = false;
        let replaced = re.replace_all(&out, |caps: &regex::Captures<'_>| {
            let whole = caps.get(0).expect("group 0");
            let m = whole.as_str();
            let inside_iban_shape = iban_shaped
                .iter()
                .any(|r| r.start <= whole.start() && whole.end() <= r.end);
            if !inside_iban_shape && confirm(m) {
                hit = true;
                kind.placeholder().to_string()
            } else {
                m.to_string()
            }
        });
        if hit {
            out = replaced.into_owned();
            found.push(kind);
        }
    }
    (out, found)
}

/// Masks every string in `arguments` (at any depth; keys stay); returns the masked value and
/// the paths of the strings that changed, each with its kinds, e.g. `description: IBAN`.
pub fn mask(arguments: &Value) -> (Value, Vec<String>) {
    fn walk(value: &Value, path: &str, masked: &mut Vec<String>) -> Value {
        match value {
            Value::String(s) => {
                let (text, kinds) = mask_text(s);
                if kinds.is_empty() {
                    return value.clone();
                }
                let mut names: Vec<&str> = kinds
                    .iter()
                    .map(|k| k.placeholder().trim_matches(['<', '>']))
                    .collect();
                names.sort_unstable();
                names.dedup();
                masked.push(format!("{path}: {}", names.join(" ")));
                Value::String(text)
            }
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        let here = if path.is_empty() {
                            k.clone()
                        } else {
                            format!("{path}.{k}")
                        };
                        (k.clone(), walk(v, &here, masked))
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| walk(v, &format!("{path}[{i}]"), masked))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    let mut masked = Vec::new();
    let value = walk(arguments, "", &mut masked);
    (value, masked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn masked(text: &str) -> String {
        mask_text(text).0
    }

    #[test]
    fn an_iban_as_printed_or_run_together_is_masked_and_a_wrong_check_digit_is_not() {
        assert_eq!(
            masked("refund to DE89 3704 0044 0532 0130 00 of Erika Mustermann"),
            "refund to <IBAN> of Erika Mustermann"
        );
        assert_eq!(masked("GB82WEST12345698765432"), "<IBAN>");
        assert_eq!(
            masked("DE89 3704 0044 0532 0130 01"),
            "DE89 3704 0044 0532 0130 01"
        );
        // An account-number-shaped word that is no IBAN stays.
        assert_eq!(
            masked("account 0532013000 at BLZ 37040044"),
            "account 0532013000 at BLZ 37040044"
        );
        assert_eq!(masked("column iban_de89"), "column iban_de89");
    }

    #[test]
    fn a_card_number_passes_luhn_and_its_near_miss_stays() {
        assert_eq!(
            masked("card 4111 1111 1111 1111 expired"),
            "card <CARD> expired"
        );
        assert_eq!(masked("4111-1111-1111-1111"), "<CARD>");
        assert_eq!(masked("4111 1111 1111 1112"), "4111 1111 1111 1112");
    }

    #[test]
    fn an_email_address_is_masked_and_a_handle_is_not() {
        assert_eq!(
            masked("send to erika.m@example.de today"),
            "send to <EMAIL> today"
        );
        assert_eq!(
            masked("owner @claims-team or a@b"),
            "owner @claims-team or a@b"
        );
    }

    #[test]
    fn an_international_phone_number_is_masked_and_a_date_or_short_code_is_not() {
        assert_eq!(masked("call +49 30 1234567 now"), "call <PHONE> now");
        assert_eq!(masked("0049 (30) 123-4567"), "<PHONE>");
        assert_eq!(
            masked("since 2024-01-15, code +12"),
            "since 2024-01-15, code +12"
        );
    }

    #[test]
    fn national_identifiers_are_masked_by_shape_and_check_and_their_near_misses_stay() {
        assert_eq!(masked("SSN 123-45-6789"), "SSN <NATIONAL_ID>");
        assert_eq!(masked("SSN 000-45-6789"), "SSN 000-45-6789");
        // A German tax id with a valid ISO 7064 check digit, and the same with another digit.
        assert_eq!(masked("Steuer-ID 86095742719"), "Steuer-ID <NATIONAL_ID>");
        assert_eq!(masked("Steuer-ID 86095742718"), "Steuer-ID 86095742718");
    }

    #[test]
    fn mask_walks_every_string_and_names_what_it_masked() {
        let (value, paths) = mask(&json!({
            "description": "IBAN DE89 3704 0044 0532 0130 00, mail erika@example.de",
            "alternatives": ["customer_iban", "payee iban"],
            "limit": 5
        }));
        assert_eq!(
            value,
            json!({
                "description": "IBAN <IBAN>, mail <EMAIL>",
                "alternatives": ["customer_iban", "payee iban"],
                "limit": 5
            })
        );
        assert_eq!(paths, vec!["description: EMAIL IBAN".to_string()]);
    }
}
