//! Next steps: what an error or a hint tells its reader to do, worded for the surface it
//! reaches. This is the one place that decides the wording: a command line reader is told a
//! `govcat` command with the global flags in effect (so running it as printed does what was
//! meant); an MCP or REST caller is told a tool and its arguments. Steps only an operator can
//! take (building a snapshot) are the `govcat` command the operator runs, on every surface.

/// Who reads a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Surface {
    /// The `govcat` command line; `flags` are the global flags in effect (already quoted for a
    /// shell), repeated in every command a message names.
    Cli { flags: Vec<String> },
    /// MCP and REST callers: steps name tools and arguments. `flags` are those the server runs
    /// with, for the operator's commands.
    Tools { flags: Vec<String> },
}

impl Default for Surface {
    fn default() -> Surface {
        Surface::Tools { flags: Vec::new() }
    }
}

/// A next step, rendered by [`Step::render`] for the surface the message reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Build (or rebuild) the snapshot from the catalog and ontology in effect; `why` finishes
    /// the sentence ("to build one").
    Index { why: String },
    /// [`Step::Index`], or use the snapshot as it is by passing `instead` (flags naming the
    /// catalog it was built from).
    IndexOrPass { why: String, instead: Vec<String> },
    /// Build a snapshot in an index of its own (`index`, quoted), because rebuilding the
    /// default one would replace the snapshot that commands without these flags read; then
    /// repeat the command with `--index`.
    SeparateIndex { index: String, why: String },
    /// A replica (`serve --follow`) has nothing to serve: the indexer publishes again to
    /// `location`, and the replica takes it up at its next poll.
    Publish { location: String },
    /// See the domains.
    ListDomains,
    /// Read one of a domain's tables.
    GetDataset { domain: String },
}

/// Why a catalog other than the default gets an index of its own.
const SEPARATE_INDEX_WHY: &str =
    "rebuilding index/ would replace the snapshot the commands without these flags read";

/// `govcat <command> <flags...>`: the one way a command is written in a message.
pub fn command(flags: &[String], command: &str) -> String {
    let mut out = format!("govcat {command}");
    for f in flags {
        out.push(' ');
        out.push_str(f);
    }
    out
}

/// A value quoted for a POSIX shell when it needs it (paths with spaces and the like).
pub fn shell_quote(value: &str) -> String {
    let safe = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@+,".contains(c));
    if safe {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\'', "'\\''"))
    }
}

impl Surface {
    fn flags(&self) -> &[String] {
        match self {
            Surface::Cli { flags } | Surface::Tools { flags } => flags,
        }
    }
}

impl Step {
    /// The step as a clause ("run `govcat index --index /tmp/x` to build one").
    pub fn render(&self, surface: &Surface) -> String {
        // `govcat index` with `flags`, worded as the reader runs it (or has it run).
        let run_index = |flags: &[String], why: &str| {
            let cmd = command(flags, "index");
            match surface {
                Surface::Cli { .. } => format!("run `{cmd}` {why}"),
                Surface::Tools { .. } => format!("ask the operator to run `{cmd}` {why}"),
            }
        };
        let operator = |why: &str| run_index(surface.flags(), why);
        match (self, surface) {
            (Step::Index { why }, _) => operator(why),
            (Step::IndexOrPass { why, instead }, _) => format!(
                "{}, or pass `{}` to use the snapshot as it is",
                operator(why),
                instead.join(" ")
            ),
            (Step::SeparateIndex { index, why }, _) => {
                let mut own = surface.flags().to_vec();
                own.extend(["--index".to_string(), index.clone()]);
                let then = match surface {
                    Surface::Cli { .. } => {
                        format!(", then repeat this command with `--index {index}`")
                    }
                    Surface::Tools { .. } => format!(" and to serve with `--index {index}`"),
                };
                format!(
                    "{} in an index of its own ({SEPARATE_INDEX_WHY}){then}",
                    run_index(&own, why)
                )
            }
            (Step::Publish { location }, Surface::Cli { .. }) => format!(
                "run `govcat index --publish {}` where the indexer runs (with its catalog flags); this replica takes the snapshot up at its next poll",
                shell_quote(location)
            ),
            (Step::Publish { location }, Surface::Tools { .. }) => format!(
                "this server is a replica of {location}: ask the operator to publish a snapshot again (`govcat index --publish {}` where the indexer runs); the replica takes it up at its next poll, and /readyz `follow.last_error` says what failed",
                shell_quote(location)
            ),
            (Step::ListDomains, Surface::Cli { flags }) => {
                format!("run `{}` to see the domains", command(flags, "list-domains"))
            }
            (Step::ListDomains, Surface::Tools { .. }) => {
                "call the tool `list_domains` to see the domains".to_string()
            }
            (Step::GetDataset { domain }, Surface::Cli { flags }) => format!(
                "run `{}` with TABLE one of the domain's tables",
                command(flags, &format!("get-dataset {} TABLE", shell_quote(domain)))
            ),
            (Step::GetDataset { domain }, Surface::Tools { .. }) => format!(
                "call the tool `get_dataset` with `domain` \"{domain}\" and `table` one of the domain's tables"
            ),
        }
    }
}

/// The next step of an empty search: what the caller can widen, named as the surface names it
/// (`--mode hybrid` and `--kinds` on the command line, `mode` and `kinds` arguments elsewhere).
/// Only what the search narrowed is offered: no mode change when it already ran hybrid.
pub fn widen_search(
    surface: &Surface,
    mode_was_hybrid: bool,
    kinds_narrowed: bool,
    domains_narrowed: bool,
) -> String {
    let cli = matches!(surface, Surface::Cli { .. });
    let mut steps = vec![
        if cli {
            "one of the suggestions (derived from your words, not searched)".to_string()
        } else {
            "one of `suggestions` (derived from your words, not searched)".to_string()
        },
        "other or fewer words".to_string(),
    ];
    if !mode_was_hybrid {
        steps.push(
            if cli {
                "`--mode hybrid`"
            } else {
                "`mode` hybrid"
            }
            .to_string(),
        );
    }
    if kinds_narrowed {
        steps.push(
            if cli {
                "fewer `--kinds` restrictions (or none: both kinds)"
            } else {
                "`kinds` omitted (both kinds)"
            }
            .to_string(),
        );
    }
    if domains_narrowed {
        steps.push(
            if cli {
                "fewer `--domain` restrictions (or none: every domain)"
            } else {
                "`domains` omitted (every domain you may read)"
            }
            .to_string(),
        );
    }
    let last = steps.pop().unwrap_or_default();
    format!("Next: try {}, or {last}.", steps.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_carries_the_flags_in_effect_and_quotes_what_needs_it() {
        let flags = vec!["--index".to_string(), shell_quote("/tmp/my index")];
        assert_eq!(
            command(&flags, "index"),
            "govcat index --index '/tmp/my index'"
        );
        assert_eq!(command(&[], "index"), "govcat index");
    }

    #[test]
    fn the_same_step_names_a_command_on_the_cli_and_a_tool_elsewhere() {
        let cli = Surface::Cli {
            flags: vec!["--catalog".into(), "x".into()],
        };
        assert_eq!(
            Step::ListDomains.render(&cli),
            "run `govcat list-domains --catalog x` to see the domains"
        );
        assert_eq!(
            Step::ListDomains.render(&Surface::default()),
            "call the tool `list_domains` to see the domains"
        );
    }

    #[test]
    fn another_catalog_is_built_into_an_index_of_its_own_on_every_surface() {
        let step = Step::SeparateIndex {
            index: "index/catalogs/mimic".into(),
            why: "to build one for m/catalog".into(),
        };
        let flags = vec!["--catalog".to_string(), "m/catalog".to_string()];
        assert_eq!(
            step.render(&Surface::Cli { flags: flags.clone() }),
            "run `govcat index --catalog m/catalog --index index/catalogs/mimic` to build one for m/catalog in an index of its own (rebuilding index/ would replace the snapshot the commands without these flags read), then repeat this command with `--index index/catalogs/mimic`"
        );
        assert_eq!(
            step.render(&Surface::Tools { flags }),
            "ask the operator to run `govcat index --catalog m/catalog --index index/catalogs/mimic` to build one for m/catalog in an index of its own (rebuilding index/ would replace the snapshot the commands without these flags read) and to serve with `--index index/catalogs/mimic`"
        );
    }

    #[test]
    fn a_replica_is_told_to_publish_again_not_to_index_here() {
        let publish = Step::Publish {
            location: "s3://b/p".into(),
        };
        let index = Step::Index {
            why: "to build one".into(),
        };
        let tools = Surface::default();
        assert_eq!(
            publish.render(&tools),
            "this server is a replica of s3://b/p: ask the operator to publish a snapshot again (`govcat index --publish s3://b/p` where the indexer runs); the replica takes it up at its next poll, and /readyz `follow.last_error` says what failed"
        );
        assert_eq!(
            index.render(&tools),
            "ask the operator to run `govcat index` to build one"
        );
    }

    #[test]
    fn an_empty_hybrid_search_is_not_told_to_try_hybrid() {
        let cli = Surface::Cli { flags: vec![] };
        assert_eq!(
            widen_search(&cli, true, false, false),
            "Next: try one of the suggestions (derived from your words, not searched), or other or fewer words."
        );
        assert_eq!(
            widen_search(&Surface::default(), false, true, false),
            "Next: try one of `suggestions` (derived from your words, not searched), other or fewer words, `mode` hybrid, or `kinds` omitted (both kinds)."
        );
    }
}
