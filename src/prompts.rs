//! The prompts: message sequences a host offers its user (as slash commands) that drive the
//! tools in a fixed order, defined once here — name, arguments, text — and exposed by the MCP
//! adapter (`prompts/list`, `prompts/get`). A prompt only renders text from its arguments: it
//! reads nothing, so its answer is the same for every caller.
//!
//! The text carries the rules the design insists on (values only from the ontology, residency
//! is where the data lives, an empty result is not a licence to guess) and names each tool call
//! with its arguments as JSON, so a host's model — or a test — can make exactly those calls.

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::limits::{MAX_DESCRIPTION_CHARS, MAX_PROMPT_NAME_CHARS};
use crate::tools::ToolError;

/// The tag-a-new-column prompt.
pub const TAG_NEW_COLUMN: &str = "tag-new-column";
/// The grant-review prompt.
pub const REVIEW_GRANT: &str = "review-grant";
/// The tools `tag-new-column` has the assistant call, in order.
pub const TAG_NEW_COLUMN_STEPS: [&str; 4] = [
    "find_precedents",
    "suggest_tags",
    "resolve_lf_tag",
    "get_dataset",
];

/// One argument of a prompt. Every argument is a string (the MCP rule).
#[derive(Debug, Clone, Serialize)]
pub struct ArgumentSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub required: bool,
    /// Whether `completion/complete` offers values for it (from the catalog, scoped to the
    /// caller), like the dataset resource template's arguments.
    #[serde(skip)]
    pub completable: bool,
}

/// The static description of a prompt.
#[derive(Debug, Clone, Serialize)]
pub struct PromptSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub arguments: &'static [ArgumentSpec],
}

impl PromptSpec {
    /// The argument named `name`, if the prompt has one.
    pub fn argument(&self, name: &str) -> Option<&'static ArgumentSpec> {
        self.arguments.iter().find(|a| a.name == name)
    }
}

const DOMAIN_OF_TARGET: ArgumentSpec = ArgumentSpec {
    name: "domain",
    description: "Domain of the table the column is added to, e.g. `analytics`; alone, a new table of that domain.",
    required: false,
    completable: true,
};
const TABLE_OF_TARGET: ArgumentSpec = ArgumentSpec {
    name: "table",
    description: "Table the column is added to, e.g. `customer_360_global_extract` (needs domain); existing or new: its sibling columns and inherited tags decide residency.",
    required: false,
    completable: true,
};

/// Every prompt, in a fixed order.
pub const PROMPTS: &[PromptSpec] = &[
    PromptSpec {
        name: TAG_NEW_COLUMN,
        title: "Tag a new column from precedent",
        description: "Choose the LF-tags of a new column from how comparable columns and the target table's siblings are tagged: find_precedents, suggest_tags, resolve_lf_tag, then a live get_dataset, naming the precedent of every value.",
        arguments: &[
            ArgumentSpec {
                name: "description",
                description: "What the new column holds, in your words, e.g. `contains an EU IBAN` (1-1000 characters).",
                required: true,
                completable: false,
            },
            DOMAIN_OF_TARGET,
            TABLE_OF_TARGET,
        ],
    },
    PromptSpec {
        name: REVIEW_GRANT,
        title: "Review a role's grant on a dataset",
        description: "Evaluate a role's LF-tag grant on one dataset with check_grant_expression and explain which columns it reaches, which it does not (with the failing clause) and which cannot be decided.",
        arguments: &[
            ArgumentSpec {
                name: "role",
                description: "Role name as listed in the catalog's roles, e.g. `global-analytics-reader`.",
                required: true,
                completable: true,
            },
            ArgumentSpec {
                name: "domain",
                description: "Domain of the dataset, e.g. `analytics`.",
                required: true,
                completable: true,
            },
            ArgumentSpec {
                name: "table",
                description: "Table of the dataset, e.g. `customer_360_global_extract`.",
                required: true,
                completable: true,
            },
        ],
    },
];

/// The prompt named `name`.
pub fn spec(name: &str) -> Option<&'static PromptSpec> {
    PROMPTS.iter().find(|p| p.name == name)
}

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One message of a rendered prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    pub role: Role,
    pub text: String,
}

/// A prompt rendered with its arguments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rendered {
    pub description: String,
    pub messages: Vec<Message>,
}

/// A `prompts/get` that cannot be rendered. Every message names the prompt's arguments.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PromptError {
    #[error("there is no prompt '{name}'; the prompts are {}; call prompts/get with one of them (prompts/list shows their arguments)", names())]
    UnknownPrompt { name: String },
    #[error("prompt '{prompt}' needs argument '{argument}' ({reason}); its arguments are {}; call prompts/get again with it", arguments_text(prompt))]
    MissingArgument {
        prompt: &'static str,
        argument: &'static str,
        reason: &'static str,
    },
    #[error("prompt '{prompt}' has no argument '{argument}'; its arguments are {}; call prompts/get again without it", arguments_text(prompt))]
    UnknownArgument {
        prompt: &'static str,
        argument: String,
    },
    #[error("argument '{argument}' of prompt '{prompt}' {problem}; its arguments are {}; call prompts/get again with a corrected value", arguments_text(prompt))]
    InvalidArgument {
        prompt: &'static str,
        argument: &'static str,
        problem: String,
    },
}

fn names() -> String {
    PROMPTS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `description (required), domain, table`.
fn arguments_text(prompt: &str) -> String {
    spec(prompt)
        .map(|p| {
            p.arguments
                .iter()
                .map(|a| {
                    if a.required {
                        format!("{} (required)", a.name)
                    } else {
                        a.name.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

impl PromptError {
    pub fn kind(&self) -> &'static str {
        match self {
            PromptError::UnknownPrompt { .. } => "UnknownPrompt",
            PromptError::MissingArgument { .. } => "MissingPromptArgument",
            PromptError::UnknownArgument { .. } => "UnknownPromptArgument",
            PromptError::InvalidArgument { .. } => "InvalidPromptArgument",
        }
    }
}

impl From<PromptError> for ToolError {
    /// The error object: kind, message, the prompt and its `arguments` (for an unknown prompt,
    /// every prompt with its arguments).
    fn from(e: PromptError) -> ToolError {
        let base = ToolError::new(e.kind(), e.to_string());
        match e {
            PromptError::UnknownPrompt { name } => {
                base.with("prompt", name).with("prompts", PROMPTS)
            }
            PromptError::MissingArgument {
                prompt, argument, ..
            }
            | PromptError::InvalidArgument {
                prompt, argument, ..
            } => base
                .with("prompt", prompt)
                .with("argument", argument)
                .with("arguments", spec(prompt).map(|p| p.arguments)),
            PromptError::UnknownArgument { prompt, argument } => base
                .with("prompt", prompt)
                .with("argument", argument)
                .with("arguments", spec(prompt).map(|p| p.arguments)),
        }
    }
}

/// The arguments of one `prompts/get`, checked against the prompt's spec.
struct Arguments<'a> {
    spec: &'static PromptSpec,
    given: &'a Map<String, Value>,
}

impl Arguments<'_> {
    /// The argument's value: `None` when absent or blank (hosts send `""` for a field left
    /// empty), an error when it is not a string or over its bound.
    fn optional(&self, name: &'static str) -> Result<Option<&str>, PromptError> {
        let invalid = |problem: String| PromptError::InvalidArgument {
            prompt: self.spec.name,
            argument: name,
            problem,
        };
        let value = match self.given.get(name) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::String(s)) => s.trim(),
            Some(other) => return Err(invalid(format!("is {other}, not a string"))),
        };
        let max = if name == "description" {
            MAX_DESCRIPTION_CHARS
        } else {
            MAX_PROMPT_NAME_CHARS
        };
        let chars = value.chars().count();
        if chars > max {
            return Err(invalid(format!(
                "has {chars} characters, more than the {max} allowed"
            )));
        }
        Ok((!value.is_empty()).then_some(value))
    }

    fn required(&self, name: &'static str) -> Result<&str, PromptError> {
        self.optional(name)?.ok_or(PromptError::MissingArgument {
            prompt: self.spec.name,
            argument: name,
            reason: "required",
        })
    }
}

/// Renders prompt `name` with `arguments` (string values; blank optional ones count as absent).
pub fn render(name: &str, arguments: &Map<String, Value>) -> Result<Rendered, PromptError> {
    let spec = spec(name).ok_or_else(|| PromptError::UnknownPrompt {
        name: name.to_string(),
    })?;
    if let Some(unknown) = arguments.keys().find(|k| spec.argument(k).is_none()) {
        return Err(PromptError::UnknownArgument {
            prompt: spec.name,
            argument: unknown.clone(),
        });
    }
    let args = Arguments {
        spec,
        given: arguments,
    };
    match spec.name {
        TAG_NEW_COLUMN => {
            let description = args.required("description")?;
            // A table without its domain is ambiguous; a domain alone is a new, unnamed table
            // of it (as suggest_tags reads it).
            let target = match (args.optional("domain")?, args.optional("table")?) {
                (Some(domain), table) => Some((domain, table)),
                (None, None) => None,
                (None, Some(_)) => {
                    return Err(PromptError::MissingArgument {
                        prompt: spec.name,
                        argument: "domain",
                        reason: "a table is named within its domain",
                    })
                }
            };
            Ok(tag_new_column(description, target))
        }
        _ => Ok(review_grant(
            args.required("role")?,
            args.required("domain")?,
            args.required("table")?,
        )),
    }
}

/// A tool call as the prompt text writes it: the name, then its arguments as JSON.
fn call(tool: &str, arguments: &Value) -> String {
    format!("{tool} {arguments}")
}

const TAG_RULES: &str = "Rules:
- Tag values come only from the ontology (resource govcat://ontology/lf-tags: 5 keys, 21 values). Never write a value that is not in it, however plausible it sounds (no \"pii\", no \"restricted\").
- residency is where the data is stored, not where the data subject lives or banks. A replicated extract can differ from its source: an EU IBAN copied into a globally replicated extract is residency global, not eu. Take residency from the target table (its sibling columns and the value a new column there inherits), never from the words of the description.
- An empty result is not a licence to guess. When a search finds nothing (match_type none), say so and try its suggestions; when a key cannot be decided from the catalog, leave it undecided and ask me rather than filling it from general knowledge.
- Every value needs a source: a precedent column id (column:<domain>.<table>.<column>), the target table's siblings, or the level it is inherited from (table or database).
- State each key's confidence from suggest_tags' proposal.confidence (the share of proposals with the same evidence that were right on this catalog). For every key below 0.9, or with no confidence, do not tag it yourself: show me the candidates and their precedents and ask me to decide.";

/// What `tag-new-column` asks the assistant to pass as `alternatives`, and why.
pub const ALTERNATIVES_ASK: &str = "Alternatives: pass the new column's name (ask me for it if you do not know it) and two to four other phrasings as alternatives to find_precedents and suggest_tags - likely names of such a column elsewhere in snake_case (payee_iban), the standard term, English words for a German description. Why: comparable columns are often named and described in other words than mine, and the catalog is searched only for the words sent; each phrasing is searched once, exactly as given, the lists are fused into one, and each entry's matched_by shows which phrasing found it. Never put a tag value or a column id you have not seen in the catalog into them.";

/// The `alternatives` placeholder of the prompt's calls.
const ALTERNATIVES_PLACEHOLDER: [&str; 2] =
    ["<the new column's name>", "<two to four other phrasings>"];

fn tag_new_column(description: &str, target: Option<(&str, Option<&str>)>) -> Rendered {
    let search = call(
        "find_precedents",
        &json!({ "description": description, "alternatives": ALTERNATIVES_PLACEHOLDER }),
    );
    let (ask, suggest, live) = match target {
        Some((domain, Some(table))) => (
            format!("I am adding a column to the table {domain}.{table} (it may be a table I am only now creating). The column: \"{description}\". Which LF-tags should it carry? Decide from the catalog, not from memory."),
            format!(
                "2. {} - per key, the values of the precedents and, when {domain}.{table} exists, of its sibling columns, and the value a new column there inherits from the table or database. If the table is not in the catalog yet, suggest_tags says so (target_exists false, and did_you_mean when an existing table has a close name): it is then a new table of {domain} with no siblings, and the tags the {domain} database sets are inherited. Where the siblings or the inherited value disagree with the precedents (residency of a replicated extract), the target table wins.",
                call("suggest_tags", &json!({ "description": description, "alternatives": ALTERNATIVES_PLACEHOLDER, "domain": domain, "table": table }))
            ),
            format!(
                "4. {} - a live read of the target table, because the first two calls answer from a snapshot that can be stale (skip it when suggest_tags answered target_exists false: a new table has nothing to read yet; read the dataset of each precedent I rely on instead). If the live tags contradict a sibling or inherited value I used, the live read wins and I say so.",
                call("get_dataset", &json!({ "domain": domain, "table": table }))
            ),
        ),
        Some((domain, None)) => (
            format!("I am adding a column to a new table of the domain {domain}. The column: \"{description}\". Which LF-tags should it carry? Decide from the catalog, not from memory."),
            format!(
                "2. {} - per key, how the precedent columns are tagged, and the value a new table of {domain} inherits from its database (a new table has no sibling columns). Where the inherited value disagrees with the precedents, the inherited value wins.",
                call("suggest_tags", &json!({ "description": description, "alternatives": ALTERNATIVES_PLACEHOLDER, "domain": domain }))
            ),
            format!(
                "4. {} for the dataset of each precedent column I rely on (domain and table from its id) - a live read, because the first two calls answer from a snapshot that can be stale. A precedent whose live tags differ is reported, not used.",
                call("get_dataset", &json!({ "domain": "<domain of the precedent>", "table": "<table of the precedent>" }))
            ),
        ),
        None => (
            format!("I am adding a new column. The column: \"{description}\". Which LF-tags should it carry? Decide from the catalog, not from memory."),
            format!(
                "2. {} - per key, how the precedent columns are tagged. No target table is named, so there are no siblings and no inherited value: residency stays undecided unless you tell me which table (domain and table) the column goes into.",
                call("suggest_tags", &json!({ "description": description, "alternatives": ALTERNATIVES_PLACEHOLDER }))
            ),
            format!(
                "4. {} for the dataset of each precedent column I rely on (domain and table from its id) - a live read, because the first two calls answer from a snapshot that can be stale. A precedent whose live tags differ is reported, not used.",
                call("get_dataset", &json!({ "domain": "<domain of the precedent>", "table": "<table of the precedent>" }))
            ),
        ),
    };
    let plan = format!(
        "I will answer from the catalog with four calls, in this order:
1. {search} - how comparable columns are already classified, searched with your description and the alternatives I fill in (the column's name and two to four other phrasings); I keep the column ids of the entries I rely on.
{suggest}
3. resolve_lf_tag {{\"tags\": {{...}}}} with the set I chose, one value per key (start from suggest_tags' proposal.tags) - validates it against the ontology. If it asks for a missing key, I ask you instead of choosing a value myself.
{live}
Then I give the tag set, one key per line, each with the precedent, siblings or inherited level its value came from and its confidence, and any key left undecided with the reason; for every key below confidence 0.9 I ask you instead of deciding."
    );
    Rendered {
        description: format!("Tag a new column (\"{description}\") from precedent."),
        messages: vec![
            Message {
                role: Role::User,
                text: format!("{ask}\n\n{ALTERNATIVES_ASK}\n\n{TAG_RULES}"),
            },
            Message {
                role: Role::Assistant,
                text: plan,
            },
            Message {
                role: Role::User,
                text: "Go ahead: make the four calls in that order, then give the tag set with the source of every value.".into(),
            },
        ],
    }
}

fn review_grant(role: &str, domain: &str, table: &str) -> Rendered {
    let check = call(
        "check_grant_expression",
        &json!({ "role": role, "domain": domain, "table": table }),
    );
    Rendered {
        description: format!("Review role {role}'s grant on {domain}.{table}."),
        messages: vec![
            Message {
                role: Role::User,
                text: format!("Which columns of {domain}.{table} does the role {role} reach, and why not the others? Answer from the role's LF-tag grant, not from memory."),
            },
            Message {
                role: Role::Assistant,
                text: format!(
                    "1. {check} - evaluates each of the role's LF-tag grant expressions against every column's effective tags.
Then I explain, in the table's column order:
- reached: the columns one grant reaches in full (every clause holds);
- denied: each denied column with the failing clause of each grant - the key, the values the clause allows and the tag the column carries;
- undetermined: the columns whose tags are withheld or not collected, as undetermined, never as reached or denied.
If the role or the dataset is not in the catalog, I report the names the error lists and do not substitute one of them myself."
                ),
            },
            Message {
                role: Role::User,
                text: "Go ahead: make the call, then explain the reached and denied columns with the failing clause.".into(),
            },
        ],
    }
}

/// Every prompt as a JSON list entry (name, title, description, arguments), for tests and docs.
pub fn list_json() -> Value {
    serde_json::to_value(PROMPTS).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(pairs: &[(&str, &str)]) -> Map<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect()
    }

    fn text(r: &Rendered) -> String {
        r.messages
            .iter()
            .map(|m| m.text.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn tag_new_column_names_the_four_tools_in_order() {
        for given in [
            args(&[("description", "contains an EU IBAN")]),
            args(&[
                ("description", "contains an EU IBAN"),
                ("domain", "analytics"),
                ("table", "customer_360_global_extract"),
            ]),
        ] {
            let rendered = render(TAG_NEW_COLUMN, &given).unwrap();
            let text = text(&rendered);
            let first: Vec<usize> = TAG_NEW_COLUMN_STEPS
                .iter()
                .map(|t| text.find(t).unwrap_or_else(|| panic!("{t} not named")))
                .collect();
            assert!(first.windows(2).all(|w| w[0] < w[1]), "{first:?}");
            assert_eq!(
                rendered.messages.iter().map(|m| m.role).collect::<Vec<_>>(),
                [Role::User, Role::Assistant, Role::User]
            );
        }
    }

    #[test]
    fn tag_new_column_states_the_rules_and_writes_each_call_as_json() {
        let given = args(&[
            ("description", "holds an \"IBAN\""),
            ("domain", "analytics"),
            ("table", "customer_360_global_extract"),
        ]);
        let text = text(&render(TAG_NEW_COLUMN, &given).unwrap());
        assert!(text.contains("Tag values come only from the ontology"));
        assert!(text.contains("residency is where the data is stored"));
        assert!(text.contains("A replicated extract can differ from its source"));
        assert!(text.contains("An empty result is not a licence to guess"));
        assert!(text.contains(
            r#"suggest_tags {"description":"holds an \"IBAN\"","alternatives":["<the new column's name>","<two to four other phrasings>"],"domain":"analytics","table":"customer_360_global_extract"}"#
        ));
        assert!(text.contains(
            r#"find_precedents {"description":"holds an \"IBAN\"","alternatives":["<the new column's name>","<two to four other phrasings>"]}"#
        ));
        assert!(text.contains(ALTERNATIVES_ASK));
        assert!(text.contains(
            r#"get_dataset {"domain":"analytics","table":"customer_360_global_extract"}"#
        ));
    }

    #[test]
    fn tag_new_column_with_a_domain_alone_targets_a_new_table_of_it() {
        let given = args(&[("description", "glass damage amount"), ("domain", "claims")]);
        let text = text(&render(TAG_NEW_COLUMN, &given).unwrap());
        assert!(text.contains(
            r#"suggest_tags {"description":"glass damage amount","alternatives":["<the new column's name>","<two to four other phrasings>"],"domain":"claims"}"#
        ));
        assert!(text.contains("a new table of the domain claims"));
        assert!(text.contains(
            r#"get_dataset {"domain":"<domain of the precedent>","table":"<table of the precedent>"}"#
        ));
    }

    #[test]
    fn a_missing_or_unknown_argument_is_an_error_naming_the_arguments() {
        let e = render(TAG_NEW_COLUMN, &Map::new()).unwrap_err();
        assert_eq!(
            e,
            PromptError::MissingArgument {
                prompt: TAG_NEW_COLUMN,
                argument: "description",
                reason: "required"
            }
        );
        assert_eq!(
            e.to_string(),
            "prompt 'tag-new-column' needs argument 'description' (required); its arguments are description (required), domain, table; call prompts/get again with it"
        );
        let blank = render(TAG_NEW_COLUMN, &args(&[("description", "  ")])).unwrap_err();
        assert_eq!(blank, e);
        let half = render(
            TAG_NEW_COLUMN,
            &args(&[("description", "x"), ("table", "glass_damage")]),
        )
        .unwrap_err();
        assert_eq!(
            half,
            PromptError::MissingArgument {
                prompt: TAG_NEW_COLUMN,
                argument: "domain",
                reason: "a table is named within its domain"
            }
        );
        let unknown = render(REVIEW_GRANT, &args(&[("column", "iban")])).unwrap_err();
        assert_eq!(
            unknown,
            PromptError::UnknownArgument {
                prompt: REVIEW_GRANT,
                argument: "column".into()
            }
        );
        let json = ToolError::from(e).to_json();
        assert_eq!(json["error"], "MissingPromptArgument");
        assert_eq!(json["prompt"], "tag-new-column");
        assert_eq!(json["argument"], "description");
        assert_eq!(
            json["arguments"],
            json!([
                {"name": "description", "description": PROMPTS[0].arguments[0].description, "required": true},
                {"name": "domain", "description": DOMAIN_OF_TARGET.description, "required": false},
                {"name": "table", "description": TABLE_OF_TARGET.description, "required": false},
            ])
        );
    }

    #[test]
    fn an_unknown_prompt_is_an_error_listing_the_prompts() {
        let e = render("tag-column", &Map::new()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "there is no prompt 'tag-column'; the prompts are tag-new-column, review-grant; call prompts/get with one of them (prompts/list shows their arguments)"
        );
        let json = ToolError::from(e).to_json();
        assert_eq!(json["error"], "UnknownPrompt");
        assert_eq!(json["prompts"], list_json());
    }

    #[test]
    fn arguments_over_their_bound_or_not_strings_are_refused() {
        let long = "x".repeat(MAX_DESCRIPTION_CHARS + 1);
        let e = render(TAG_NEW_COLUMN, &args(&[("description", &long)])).unwrap_err();
        assert_eq!(
            e,
            PromptError::InvalidArgument {
                prompt: TAG_NEW_COLUMN,
                argument: "description",
                problem: "has 1001 characters, more than the 1000 allowed".into()
            }
        );
        let mut given = args(&[("role", "r"), ("domain", "d")]);
        given.insert("table".into(), json!(3));
        assert_eq!(
            render(REVIEW_GRANT, &given).unwrap_err(),
            PromptError::InvalidArgument {
                prompt: REVIEW_GRANT,
                argument: "table",
                problem: "is 3, not a string".into()
            }
        );
    }

    #[test]
    fn review_grant_calls_check_grant_expression_with_its_three_arguments() {
        let given = args(&[
            ("role", "global-analytics-reader"),
            ("domain", "analytics"),
            ("table", "customer_360_global_extract"),
        ]);
        let text = text(&render(REVIEW_GRANT, &given).unwrap());
        assert!(text.contains(
            r#"check_grant_expression {"role":"global-analytics-reader","domain":"analytics","table":"customer_360_global_extract"}"#
        ));
        assert!(text.contains("failing clause"));
    }
}
