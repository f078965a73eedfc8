//! The readable rendering of a tool's output for people at a terminal. The JSON output
//! (`--json`) is the contract; this follows it.

use serde_json::Value;

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("-")
}

/// `text` in at most `width` characters: cut with `…` when longer (and whether it was cut).
fn fit(text: &str, width: usize) -> (String, bool) {
    if text.chars().count() <= width {
        (text.to_string(), false)
    } else {
        let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
        cut.push('…');
        (cut, true)
    }
}

fn tag_text(tag: &Value) -> String {
    match tag["state"].as_str() {
        Some("present") => s(&tag["value"]).to_string(),
        Some(state) => format!("({state})"),
        None => "?".into(),
    }
}

/// A readable rendering of a tool's output. The JSON output is the contract; this is for people.
pub(super) fn render(tool: &str, v: &Value) -> String {
    let mut out = String::new();
    let empty = Vec::new();
    let list = |key: &str| v[key].as_array().unwrap_or(&empty).clone();
    match tool {
        "list_domains" => {
            out += &format!(
                "{:<12} {:>8} {:>8}  {}\n",
                "DOMAIN", "DATASETS", "COLUMNS", "OWNER"
            );
            for e in list("entries") {
                out += &format!(
                    "{:<12} {:>8} {:>8}  {}\n",
                    s(&e["name"]),
                    // serde_json::Value's Display ignores width; a String honours it.
                    e["dataset_count"].to_string(),
                    e["column_count"].to_string(),
                    s(&e["owner"])
                );
                if let Some(x) = e.get("counts_excluded") {
                    out += &format!(
                        "{:<12} counts exclude {} unreadable table(s)\n",
                        "", x["tables"]
                    );
                }
            }
        }
        "get_dataset" => {
            let m = &v["metadata"];
            out += &format!(
                "{}.{} (database {})\nowner: {}\n{}\nfreshness SLA: {}\n",
                s(&m["domain"]),
                s(&m["name"]),
                s(&m["database"]),
                s(&m["owner"]),
                s(&m["description"]),
                s(&v["contract"]["freshness_sla"])
            );
            let keys: Vec<String> = v["contract"]["table_tags"]
                .as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default();
            out += &format!("\n{:<24} {:<18}", "COLUMN", "TYPE");
            for k in &keys {
                out += &format!(" {:<16}", k.to_uppercase());
            }
            out += "\n";
            let mut shortened = false;
            for c in list("columns") {
                let (name, cut_name) = fit(s(&c["name"]), 24);
                let (data_type, cut_type) = fit(s(&c["type"]), 18);
                shortened |= cut_name || cut_type;
                out += &format!("{name:<24} {data_type:<18}");
                for k in &keys {
                    let (tag, cut) = fit(&tag_text(&c["lf_tags"][k]), 16);
                    shortened |= cut;
                    out += &format!(" {tag:<16}");
                }
                out += "\n";
            }
            if shortened {
                out += "(… shortened to keep the columns aligned; --json has every field whole)\n";
            }
        }
        "resolve_lf_tag" => {
            out += &format!("valid (ontology {}):\n", s(&v["ontology_version"]));
            if let Some(o) = v["resolved"].as_object() {
                for (k, val) in o {
                    out += &format!("  {k:<14} {}\n", s(val));
                }
            }
        }
        "check_grant_expression" => {
            out += &format!(
                "role {} on {}.{}: {}\n",
                s(&v["role"]),
                s(&v["domain"]),
                s(&v["table"]),
                match v["verdict"].as_str() {
                    Some("reaches") => "reaches".to_string(),
                    Some("undetermined") => format!(
                        "undetermined: no column is reached and {} cannot be evaluated (their tags are withheld from you or not collected; read access to their LF-tags would decide them)",
                        list("undetermined").len()
                    ),
                    _ => "does not reach".to_string(),
                }
            );
            for r in list("reached") {
                out += &format!("  reached       {}\n", s(&r));
            }
            for d in list("denied") {
                let why: Vec<String> = d["failed"]
                    .as_array()
                    .unwrap_or(&empty)
                    .iter()
                    .map(|f| {
                        format!(
                            "{} not in {} (found {})",
                            s(&f["key"]),
                            f["allowed"],
                            tag_text(&f["found"])
                        )
                    })
                    .collect();
                let why = if why.is_empty() {
                    s(&d["reason"]).to_string()
                } else {
                    why.join("; ")
                };
                out += &format!("  denied        {}: {why}\n", s(&d["column"]));
            }
            for u in list("undetermined") {
                out += &format!(
                    "  undetermined  {}: {} {}\n",
                    s(&u["column"]),
                    u["keys"],
                    s(&u["state"])
                );
            }
        }
        "find_precedents" => {
            let with_alternatives = v["request"]["alternatives"]
                .as_array()
                .is_some_and(|a| !a.is_empty());
            if let Some(h) = v.get("hint") {
                out += &format!("no match: {}\n", s(h));
                let sug: Vec<String> = list("suggestions")
                    .iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect();
                out += &format!("suggestions (not searched): {}\n", sug.join(", "));
            }
            for e in list("entries") {
                let tags = e["lf_tags"]
                    .as_object()
                    .map(|o| {
                        o.iter()
                            .map(|(k, t)| format!("{k}={}", tag_text(t)))
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .unwrap_or_default();
                out += &format!(
                    "{:<9.5} {:<8} {}\n          {}\n",
                    e["score"].as_f64().unwrap_or(0.0),
                    s(&e["match_type"]),
                    s(&e["id"]),
                    if tags.is_empty() {
                        s(&e["description"]).to_string()
                    } else {
                        tags
                    }
                );
                if with_alternatives {
                    let by: Vec<String> = e["matched_by"]
                        .as_array()
                        .unwrap_or(&empty)
                        .iter()
                        .map(|m| format!("\"{}\" #{}", s(&m["phrasing"]), m["rank"]))
                        .collect();
                    out += &format!("          matched by {}\n", by.join(", "));
                }
            }
            if let Some(c) = v.get("next_cursor").and_then(Value::as_str) {
                out += &format!("more: --cursor {c}\n");
            }
        }
        "suggest_tags" => {
            if let Some(note) = v["target_note"].as_str() {
                out += &format!("target: {note}\n");
            }
            out += &format!(
                "  {:<20} {:>6} {:>7} {:>10} {:>8}\n",
                "VALUE", "WEIGHT", "SHARE", "PRECEDENTS", "SIBLINGS"
            );
            for k in list("keys") {
                out += &format!("{}:\n", s(&k["key"]));
                if let Some(i) = k.get("inherited_in_target").filter(|i| !i.is_null()) {
                    out += &format!(
                        "  inherited in target: {} (from {})\n",
                        s(&i["value"]),
                        s(&i["assigned_at"])
                    );
                }
                let proposed = v["proposal"]["tags"][s(&k["key"])].as_str();
                for c in k["candidates"].as_array().unwrap_or(&empty) {
                    let mark = if proposed == c["value"].as_str() {
                        "*"
                    } else {
                        " "
                    };
                    let siblings = c
                        .get("siblings")
                        .filter(|x| !x.is_null())
                        .map_or("-".to_string(), |sib| {
                            format!("{:.2}", sib["share"].as_f64().unwrap_or(0.0))
                        });
                    out += &format!(
                        "{mark} {:<20} {:>6.2} {:>7.2} {:>10} {:>8}\n",
                        s(&c["value"]),
                        c["precedent_weight"].as_f64().unwrap_or(0.0),
                        c["precedents"]["share"].as_f64().unwrap_or(0.0),
                        c["precedents"]["columns"]
                            .as_array()
                            .map(|a| a.len())
                            .unwrap_or(0),
                        siblings
                    );
                }
            }
            out += "* proposed. WEIGHT: the value's share of the precedents' match weight (what the proposal follows); SHARE: its share of the precedent columns; PRECEDENTS: how many carry it; SIBLINGS: its share of the target table's other columns\n";
            out += &format!(
                "proposal ({}): {}\n",
                s(&v["proposal"]["resolution"]),
                v["proposal"]["tags"]
            );
            match (
                v["proposal"]["confidence"].as_object(),
                v["proposal"]["calibration"].as_object(),
            ) {
                (Some(conf), Some(cal)) if !conf.is_empty() => {
                    let each: Vec<String> = conf
                        .iter()
                        .map(|(k, c)| format!("{k} {:.2}", c.as_f64().unwrap_or(0.0)))
                        .collect();
                    out += &format!(
                        "confidence (share right among proposals with this evidence, {} columns checked{}): {}\n",
                        cal["columns"],
                        if cal["sampled"].as_bool() == Some(true) { ", a sample" } else { "" },
                        each.join(", ")
                    );
                }
                (_, None) => {
                    out += "confidence: not measured (the snapshot was built without calibration; run govcat index)\n"
                }
                _ => {}
            }
            if let Some(unmeasured) = v["proposal"]["unmeasured"].as_object() {
                for (key, why) in unmeasured {
                    let c = v["proposal"]["confidence"][key].as_f64().unwrap_or(0.0);
                    out += &format!("  confidence of {key} is {c:.2}: {}\n", s(why));
                }
            }
            if let Some(abstained) = v["proposal"]["abstained"].as_object() {
                for (key, why) in abstained {
                    out += &format!("  no proposal for {key}: {}\n", s(why));
                }
            }
            if let Some(suggestions) = v["suggestions"].as_array() {
                let words: Vec<&str> = suggestions.iter().filter_map(|w| w.as_str()).collect();
                out += &format!("suggestions (not searched): {}\n", words.join(", "));
            }
            if let Some(hint) = v["hint"].as_str() {
                out += &format!("hint: {hint}\n");
            }
            out += &format!("decision: {}\n", s(&v["decision"]));
        }
        _ => out += &format!("{v:#}\n"),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::render;
    use serde_json::json;

    #[test]
    fn an_unmeasured_key_is_shown_with_the_confidence_it_has() {
        let why = "no precedent is the same kind of data (the best precedent_confidence is 0.28, below 0.5), so the confidence is at most 0.28: decide this key with the user";
        let v = json!({
            "keys": [],
            "proposal": {
                "resolution": "complete",
                "tags": {"sensitivity": "internal"},
                "confidence": {"sensitivity": 0.28},
                "calibration": {"columns": 637, "sampled": false},
                "unmeasured": {"sensitivity": why},
            },
        });
        let out = render("suggest_tags", &v);
        assert!(
            out.contains(&format!("  confidence of sensitivity is 0.28: {why}\n")),
            "{out}"
        );
        let unmeasured_zero = json!({"proposal": {
            "confidence": {"sensitivity": 0.0},
            "unmeasured": {"sensitivity": "not measured"},
        }});
        let out = render("suggest_tags", &unmeasured_zero);
        assert!(
            out.contains("  confidence of sensitivity is 0.00: not measured\n"),
            "{out}"
        );
    }
}
