//! The Layout of `src/lib.rs` is a promise — "Dependencies point down this list" — and this
//! test keeps it: a module may use only the modules listed above it. The same holds inside a
//! module whose `mod.rs` has a `# Layout` section of its own (`server`): its submodules use
//! only the submodules listed above them, and the `mod.rs` itself, which uses them all.
//!
//! Read are the `- [`name`]: …` bullets of each Layout and every `crate::`, `super::` and
//! `self::` path in the code of every file under `src/` (comments and string literals are not
//! code). A path that points up the list is reported with its file, line and both modules.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A module's path from the crate root: `[]` is the root, `["server", "guard"]` is
/// `server::guard`.
type ModPath = Vec<String>;

#[test]
fn every_module_uses_only_the_modules_listed_above_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = rust_files(&root.join("src"))
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let relative = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
            (relative, text)
        })
        .collect::<Vec<_>>();
    let problems = layer_violations(&files);
    assert!(
        problems.is_empty(),
        "{} reference(s) against the Layout:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn an_upward_use_is_reported_with_file_line_and_both_modules() {
    let files = tree(&[
        ("src/lib.rs", LIB),
        ("src/low.rs", "//! Low.\n\nuse crate::high::Thing;\n"),
        ("src/high.rs", "use crate::low;\n"),
    ]);
    assert_eq!(
        layer_violations(&files),
        ["src/low.rs:3: `low` uses `high` (crate::high::Thing), which the Layout in src/lib.rs lists after `low`; move what `low` needs into a module above it, or reorder the Layout"]
    );
}

#[test]
fn grouped_super_and_self_paths_are_resolved_to_their_modules() {
    let files = tree(&[
        ("src/lib.rs", LIB),
        ("src/low.rs", "use crate::{\n    high::Thing,\n};\n"),
        ("src/high/mod.rs", SUBLAYOUT),
        ("src/high/a.rs", "use super::{b, Shared};\n"),
        (
            "src/high/b.rs",
            "use super::a::Item;\nuse super::super::low;\n",
        ),
    ]);
    assert_eq!(
        layer_violations(&files),
        [
            "src/high/a.rs:1: `high::a` uses `high::b` (super::b), which the Layout in src/high/mod.rs lists after `a`; move what `a` needs into a module above it, or reorder the Layout",
            "src/low.rs:2: `low` uses `high` (crate::high::Thing), which the Layout in src/lib.rs lists after `low`; move what `low` needs into a module above it, or reorder the Layout",
        ]
    );
}

#[test]
fn comments_and_string_literals_are_not_references() {
    let low = "//! See [`crate::high`].\n/* crate::high::X */\nconst A: &str = \"crate::high::X\";\nconst B: &str = r#\"crate::high::\"#;\nconst C: char = '\"';\nfn f<'a>(_: &'a str) {}\n";
    let files = tree(&[
        ("src/lib.rs", LIB),
        ("src/low.rs", low),
        ("src/high.rs", ""),
    ]);
    assert_eq!(layer_violations(&files), Vec::<String>::new());
}

#[test]
fn a_declared_module_missing_from_the_layout_is_reported() {
    let lib = format!("{LIB}pub mod stray;\n");
    let files = tree(&[("src/lib.rs", &lib), ("src/stray.rs", "")]);
    assert_eq!(
        layer_violations(&files),
        ["src/lib.rs: module `stray` is declared but not in the Layout; add a `- [`stray`]: …` line in its place"]
    );
}

const LIB: &str = "//! Test crate.\n//!\n//! # Layout\n//! Dependencies point down this list.\n//! - [`low`]: the bottom.\n//! - [`high`]: on top,\n//!   in two lines.\n\npub mod high;\npub mod low;\n";
const SUBLAYOUT: &str = "//! High.\n//!\n//! # Layout\n//! - [`a`]: first.\n//! - [`b`]: second.\n\npub mod a;\npub mod b;\n\npub struct Shared;\n";

fn tree(files: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
    files
        .iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect()
}

/// Every reference against a Layout, and every Layout that does not list exactly the modules
/// its file declares. `files` are paths relative to the crate root (`src/...`) and their text.
fn layer_violations(files: &[(PathBuf, String)]) -> Vec<String> {
    let mut layouts: BTreeMap<ModPath, (String, Vec<String>)> = BTreeMap::new();
    let mut problems = Vec::new();
    for (path, text) in files {
        let Some(module) = module_path(path) else {
            continue;
        };
        if let Some(order) = layout(text) {
            let file = display(path);
            for declared in declared_modules(text) {
                if !order.contains(&declared) {
                    problems.push(format!("{file}: module `{declared}` is declared but not in the Layout; add a `- [`{declared}`]: …` line in its place"));
                }
            }
            let declared = declared_modules(text);
            for listed in order.iter().filter(|l| !declared.contains(l)) {
                problems.push(format!("{file}: the Layout lists `{listed}`, which is not a module here; remove the line or declare the module"));
            }
            layouts.insert(module, (file, order));
        }
    }
    for (path, text) in files {
        let Some(file_module) = module_path(path) else {
            continue;
        };
        for reference in references(&file_module, text) {
            if let Some(problem) = against_layout(&layouts, path, &reference) {
                problems.push(problem);
            }
        }
    }
    problems.sort();
    problems
}

/// Why `reference` points up a Layout, if it does: where the module it is made from and the
/// module it names part, the parent's Layout must list the target above the source.
fn against_layout(
    layouts: &BTreeMap<ModPath, (String, Vec<String>)>,
    path: &Path,
    reference: &Reference,
) -> Option<String> {
    let (from, to) = (&reference.from, &reference.target);
    let depth = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    // A module may use its ancestors and its own submodules.
    let (source, target) = (from.get(depth)?, to.get(depth)?);
    let parent = &from[..depth];
    let (layout_file, order) = layouts.get(parent)?;
    let source_at = order.iter().position(|m| m == source)?;
    // Not a listed module: an item of the parent (`crate::DEFAULT_INDEX_DIR`, `super::AppState`).
    let target_at = order.iter().position(|m| m == target)?;
    (target_at > source_at).then(|| {
        let name = |m: &str| {
            parent
                .iter()
                .map(String::as_str)
                .chain([m])
                .collect::<Vec<_>>()
                .join("::")
        };
        format!(
            "{}:{}: `{}` uses `{}` ({}), which the Layout in {layout_file} lists after `{source}`; move what `{source}` needs into a module above it, or reorder the Layout",
            display(path),
            reference.line,
            name(source),
            name(target),
            reference.written,
        )
    })
}

fn display(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

/// The module a file under `src/` defines; `None` for the binary's `main.rs`, which is another
/// crate.
fn module_path(path: &Path) -> Option<ModPath> {
    let relative = path.strip_prefix("src").ok()?;
    let mut parts: ModPath = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop()?;
    match last.strip_suffix(".rs")? {
        "main" if parts.is_empty() => None,
        "lib" if parts.is_empty() => Some(parts),
        "mod" => Some(parts),
        name => {
            parts.push(name.to_string());
            Some(parts)
        }
    }
}

/// The module names of a file's `# Layout` section, in order: its `- [`name`]: …` bullets.
fn layout(text: &str) -> Option<Vec<String>> {
    let mut docs = text
        .lines()
        .map_while(|l| l.trim_start().strip_prefix("//!"))
        .map(str::trim);
    docs.find(|l| *l == "# Layout")?;
    Some(
        docs.take_while(|l| !l.starts_with('#'))
            .filter_map(|l| l.strip_prefix("- [`")?.split_once("`]").map(|(n, _)| n))
            .map(String::from)
            .collect(),
    )
}

/// The submodules a file declares (`mod name;`, `pub mod name;`), not inline ones.
fn declared_modules(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("pub ").unwrap_or(l);
            l.strip_prefix("mod ")?.strip_suffix(';').map(String::from)
        })
        .collect()
}

/// A path written in a module (`crate::tools::Caller`, `super::mcp`) and the absolute path it
/// names.
#[derive(Debug)]
struct Reference {
    line: usize,
    from: ModPath,
    target: ModPath,
    written: String,
}

#[derive(Debug, Clone, PartialEq)]
struct Token {
    text: String,
    line: usize,
}

/// Every `crate::`, `super::` and `self::` path in the code of a file, grouped imports
/// (`use crate::{a, b::c}`) taken apart, each resolved from the module it is written in
/// (inline modules such as `mod tests { … }` included).
fn references(file_module: &ModPath, text: &str) -> Vec<Reference> {
    let tokens = tokens(&code_only(text));
    let mut out = Vec::new();
    // Inline modules open at this brace depth.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i].text.as_str();
        match t {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d > depth) {
                    inline.pop();
                }
            }
            "mod" => {
                if let (Some(name), Some(open)) = (tokens.get(i + 1), tokens.get(i + 2)) {
                    if open.text == "{" {
                        inline.push((name.text.clone(), depth + 1));
                    }
                }
            }
            "crate" | "super" | "self"
                if tokens.get(i + 1).is_some_and(|n| n.text == "::")
                    && (i == 0 || tokens[i - 1].text != "::") =>
            {
                let mut module = file_module.clone();
                module.extend(inline.iter().map(|(n, _)| n.clone()));
                let (paths, next) = path_tree(&tokens, i);
                for (mut segments, line) in paths {
                    // `use crate::cli::{self, Cli}` names `crate::cli`.
                    if segments.len() > 1 && segments.last().is_some_and(|s| s == "self") {
                        segments.pop();
                    }
                    if let Some(target) = resolve(&module, &segments) {
                        out.push(Reference {
                            line,
                            from: module.clone(),
                            target,
                            written: segments.join("::"),
                        });
                    }
                }
                i = next;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The absolute path `segments` name from `module`; `None` for a `super` above the root.
fn resolve(module: &ModPath, segments: &[String]) -> Option<ModPath> {
    let mut at = module.clone();
    let mut rest = segments;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            at.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        _ => {}
    }
    while rest.first().map(String::as_str) == Some("super") {
        at.pop()?;
        rest = &rest[1..];
    }
    at.extend(rest.iter().cloned());
    Some(at)
}

/// Reads the use tree starting at `tokens[start]`: every leaf path with the line of its
/// last segment, and the index after the tree.
fn path_tree(tokens: &[Token], start: usize) -> (Vec<(Vec<String>, usize)>, usize) {
    let mut prefix = Vec::new();
    let mut i = start;
    let mut line = tokens[start].line;
    loop {
        match tokens.get(i).map(|t| t.text.as_str()) {
            Some("{") => {
                let mut leaves = Vec::new();
                i += 1;
                while let Some(t) = tokens.get(i) {
                    match t.text.as_str() {
                        "}" => {
                            i += 1;
                            break;
                        }
                        "," => i += 1,
                        _ => {
                            let (inner, next) = path_tree(tokens, i);
                            for (segments, line) in inner {
                                let mut full = prefix.clone();
                                full.extend(segments);
                                leaves.push((full, line));
                            }
                            i = next.max(i + 1);
                        }
                    }
                }
                return (leaves, i);
            }
            Some(text) if is_ident(text) || text == "*" => {
                prefix.push(text.to_string());
                line = tokens[i].line;
                i += 1;
                match tokens.get(i).map(|t| t.text.as_str()) {
                    Some("::") => i += 1,
                    // `use crate::a::B as C`: the path is `crate::a::B`.
                    Some("as") => return (vec![(prefix, line)], i + 2),
                    _ => return (vec![(prefix, line)], i),
                }
            }
            _ => return (vec![(prefix, line)], i),
        }
    }
}

fn is_ident(text: &str) -> bool {
    text.starts_with(|c: char| c.is_alphabetic() || c == '_')
}

/// Identifiers, `::` and single punctuation characters, with their lines.
fn tokens(code: &str) -> Vec<Token> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token {
                text: chars[start..i].iter().collect(),
                line,
            });
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push(Token {
                text: "::".into(),
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                text: c.to_string(),
                line,
            });
            i += 1;
        }
    }
    out
}

/// The text with comments and the contents of string and character literals blanked out;
/// line breaks are kept, so lines still count.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, s: &[char]| {
        out.extend(s.iter().map(|&ch| if ch == '\n' { '\n' } else { ' ' }));
    };
    let mut i = 0;
    while i < c.len() {
        let rest = &c[i..];
        let end = if rest.starts_with(&['/', '/']) {
            // Line comment, doc comments included.
            i + rest.iter().position(|&ch| ch == '\n').unwrap_or(rest.len())
        } else if rest.starts_with(&['/', '*']) {
            let mut depth = 0;
            let mut j = i;
            while j < c.len() {
                if c[j..].starts_with(&['/', '*']) {
                    depth += 1;
                    j += 2;
                } else if c[j..].starts_with(&['*', '/']) {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            j
        } else if let Some(len) = raw_string_len(rest) {
            i + len
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            j + 1
        } else if c[i] == '\'' {
            // A character literal ('x', '\n', '\u{..}'); otherwise a lifetime.
            match (rest.get(1), rest.get(2)) {
                (Some('\\'), _) => {
                    i + 2 + rest[2..].iter().position(|&ch| ch == '\'').unwrap_or(0) + 1
                }
                (Some(_), Some('\'')) => i + 3,
                _ => {
                    out.push('\'');
                    i += 1;
                    continue;
                }
            }
        } else {
            out.push(c[i]);
            i += 1;
            continue;
        };
        let end = end.min(c.len());
        blank(&mut out, &c[i..end]);
        i = end;
    }
    out
}

/// The length of a raw string literal (`r"…"`, `r#"…"#`, `br"…"`) starting here.
fn raw_string_len(rest: &[char]) -> Option<usize> {
    let after_b = usize::from(rest.first() == Some(&'b'));
    if rest.get(after_b) != Some(&'r') {
        return None;
    }
    let hashes = rest[after_b + 1..]
        .iter()
        .take_while(|&&ch| ch == '#')
        .count();
    let open = after_b + 1 + hashes;
    if rest.get(open) != Some(&'"') {
        return None;
    }
    let close: Vec<char> = std::iter::once('"')
        .chain(std::iter::repeat_n('#', hashes))
        .collect();
    let body = &rest[open + 1..];
    let at = (0..body.len()).find(|&k| body[k..].starts_with(&close))?;
    Some(open + 1 + at + close.len())
}

/// Every `.rs` file under `dir`, in a stable order.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
    out
}
