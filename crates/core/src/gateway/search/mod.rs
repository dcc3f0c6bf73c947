//! Search mode's ranking (issue 27; docs/gateway.md, "Search mode"): which of the aggregated
//! endpoint's tools best answer a few words a host sends. BM25 (k1 1.2, b 0.75) over one
//! document per tool whose fields count with weights: the host-facing name ×3, the title ×2,
//! the description ×1, the parameter names (`inputSchema.properties`' keys) ×2 and their
//! descriptions ×1. Words are `tokens::words`.
//!
//! Pure and deterministic: hits come by score, highest first, then by name, and the same
//! tools and query always give the same list. The tools are the servers' own JSON, so
//! nothing in them is trusted: each field is read up to a cap, a query too, and the work
//! is linear in what was read — no input makes `build` or `search` panic or run long.
//!
//! Hand-written rather than the `bm25` crate (2.3.2): that crate ranks one text per
//! document (no field weights), breaks ties in `HashSet` order (random per process), scores
//! in `f32` over 32-bit hashes of the words (two words can collide), and its default
//! tokenizer pulls five crates; what is left here is about a hundred lines.

mod tokens;

#[cfg(test)]
mod tests;

use serde_json::Value;
use std::collections::HashMap;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The weight of each field: a word in the name counts three times, and so on.
const NAME: f64 = 3.0;
const TITLE: f64 = 2.0;
const DESCRIPTION: f64 = 1.0;
const PARAM_NAME: f64 = 2.0;
const PARAM_DESCRIPTION: f64 = 1.0;

/// How much of each field is read, in bytes: well past what real tools send (the longest
/// description of the five real servers in the query set is under 1 KiB), so a server
/// cannot make one tool cost more than about 12 KiB of words.
const MAX_NAME: usize = 256;
const MAX_TITLE: usize = 256;
const MAX_DESCRIPTION: usize = 4096;
const MAX_PARAMS: usize = 32;
const MAX_PARAM_NAME: usize = 64;
const MAX_PARAM_DESCRIPTION: usize = 256;
/// How much of a query is read, and how many distinct words of it count.
const MAX_QUERY: usize = 1024;
const MAX_QUERY_WORDS: usize = 32;

/// One tool found: its host-facing name and how well it matched (BM25, higher is better;
/// comparable only within one search).
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub name: String,
    pub score: f64,
}

/// The tools of one catalog, ready to search. Build it again when the catalog changes.
#[derive(Debug, Default, Clone)]
pub struct Index {
    /// The host-facing names, by document number.
    names: Vec<String>,
    /// Per document, BM25's length term `k1 · (1 − b + b · length / average length)`.
    norms: Vec<f64>,
    /// Per word, its inverse document frequency and the documents that hold it with the
    /// word's weighted frequency there, in document order.
    postings: HashMap<String, Postings>,
}

#[derive(Debug, Clone)]
struct Postings {
    idf: f64,
    docs: Vec<(u32, f64)>,
}

impl Index {
    /// Indexes each tool under its host-facing name. `tool` is the tool's JSON as its server
    /// listed it; when its own `name` does not appear in the host name (one shortened to fit
    /// the host), the words of both are the name field.
    pub fn build<'a>(tools: impl IntoIterator<Item = (&'a str, &'a Value)>) -> Index {
        let mut index = Index::default();
        let mut lengths = Vec::new();
        let mut counts: HashMap<String, Vec<(u32, f64)>> = HashMap::new();
        for (name, tool) in tools {
            let Ok(doc) = u32::try_from(index.names.len()) else {
                break; // four billion tools: the rest cannot be numbered
            };
            let (frequencies, length) = document(name, tool);
            for (word, tf) in frequencies {
                counts.entry(word).or_default().push((doc, tf));
            }
            index.names.push(name.to_owned());
            lengths.push(length);
        }
        let n = index.names.len() as f64;
        let average = lengths.iter().sum::<f64>() / n.max(1.0);
        index.norms = lengths
            .iter()
            .map(|l| K1 * (1.0 - B + B * if average > 0.0 { l / average } else { 1.0 }))
            .collect();
        index.postings = counts
            .into_iter()
            .map(|(word, mut docs)| {
                docs.sort_by_key(|&(doc, _)| doc);
                let df = docs.len() as f64;
                // Lucene's form, never negative: a word in every tool still counts a little.
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                (word, Postings { idf, docs })
            })
            .collect();
        index
    }

    /// How many tools are indexed.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The `limit` tools that best match `query`, by score (highest first), then by name.
    /// Only tools that share a word with the query are hits, so a query of stop words, of
    /// no ASCII letters or digits, or an empty one finds nothing.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let words = query_words(query);
        if limit == 0 || words.is_empty() {
            return Vec::new();
        }
        let mut scores = vec![0.0_f64; self.names.len()];
        let mut touched = Vec::new();
        // In the query's word order, so the sums (and the ties they make) never vary.
        for (word, weight) in &words {
            let Some(postings) = self.postings.get(word.as_str()) else {
                continue;
            };
            for &(doc, tf) in &postings.docs {
                let slot = &mut scores[doc as usize];
                if *slot == 0.0 {
                    touched.push(doc);
                }
                *slot += weight * postings.idf * tf * (K1 + 1.0) / (tf + self.norms[doc as usize]);
            }
        }
        let mut hits: Vec<Hit> = touched
            .into_iter()
            .map(|doc| Hit {
                name: self.names[doc as usize].clone(),
                score: scores[doc as usize],
            })
            .collect();
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.name.cmp(&b.name))
        });
        hits.truncate(limit);
        hits
    }
}

/// A query's distinct words, each with how much it counts: 1 for its own, `ALTERNATIVE` for
/// one it implies (`tokens::alternatives`) and does not hold itself. Its own come first.
fn query_words(query: &str) -> Vec<(String, f64)> {
    let mut own: Vec<String> = Vec::new();
    tokens::words(query, MAX_QUERY, |w| {
        if own.len() < MAX_QUERY_WORDS && !own.contains(&w) {
            own.push(w);
        }
    });
    let mut words: Vec<(String, f64)> = own.iter().map(|w| (w.clone(), 1.0)).collect();
    for w in &own {
        for &also in tokens::alternatives(w) {
            if !words.iter().any(|(x, _)| x == also) {
                words.push((also.to_owned(), tokens::ALTERNATIVE));
            }
        }
    }
    words
}

/// One tool's words with their weighted frequencies, and its weighted length.
fn document(name: &str, tool: &Value) -> (HashMap<String, f64>, f64) {
    let mut frequencies: HashMap<String, f64> = HashMap::new();
    let mut length = 0.0;
    let mut add = |text: &str, cap: usize, weight: f64| {
        tokens::words(text, cap, |w| {
            *frequencies.entry(w).or_default() += weight;
            length += weight;
        });
    };
    add(name, MAX_NAME, NAME);
    if let Some(own) = text(tool, "name")
        && !words_within(own, name)
    {
        add(own, MAX_NAME, NAME);
    }
    let title =
        text(tool, "title").or_else(|| tool.get("annotations").and_then(|a| text(a, "title")));
    if let Some(title) = title {
        add(title, MAX_TITLE, TITLE);
    }
    if let Some(description) = text(tool, "description") {
        add(description, MAX_DESCRIPTION, DESCRIPTION);
    }
    let properties = tool
        .get("inputSchema")
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    for (param, schema) in properties.into_iter().flatten().take(MAX_PARAMS) {
        add(param, MAX_PARAM_NAME, PARAM_NAME);
        if let Some(description) = text(schema, "description") {
            add(description, MAX_PARAM_DESCRIPTION, PARAM_DESCRIPTION);
        }
    }
    (frequencies, length)
}

fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// Whether every word of `part` is a word of `whole` (a tool's own name within its host
/// name, sanitized or not).
fn words_within(part: &str, whole: &str) -> bool {
    let mut known = Vec::new();
    tokens::words(whole, MAX_NAME, |w| known.push(w));
    let mut within = true;
    tokens::words(part, MAX_NAME, |w| within &= known.contains(&w));
    within
}
