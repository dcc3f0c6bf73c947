//! The search mode's benchmark (issue 27, "Benchmarks"): how long `gateway::search` takes
//! over 1,000 tools, and how much smaller the host's first tool list is in search mode.
//! Prints one JSON object:
//!
//! - `search`: 1,000 tools made from the real servers' (crates/core/tests/data/
//!   real-tools.json: 50 tools of five servers, each copied under 20 server names, its
//!   description given a word of its copy), `Index::search(query, 5)` for every query of the
//!   labelled set (tool-queries.json), `--rounds` times after one unmeasured round: p50 and
//!   p99 of one search, nearest rank; and how long building the index took.
//! - `tokens`: the `tools/list` result a host is given for 20 servers × 25 tools (the real
//!   tools again, `server__tool`) against the one of search mode (the three meta-tools
//!   below), as compact JSON bytes ÷ 4 — an approximation of a tokenizer's count (no host's
//!   tokenizer is public); the ratio is what the target is about, and does not depend on
//!   the divisor.
//!
//! - `pins` (issue 28, "Benchmark"): the same 1,000 tools judged against their pins
//!   (`pins::review`: each definition's RFC 8785 digest, compared with its pin's), as on
//!   every list a server gives: p50 and p99 of one review of all 1,000; the first sight
//!   (digests and pins made); every digest taken anew (what a review costs when every
//!   definition changed); and `pins::flags` over all 1,000.
//!
//! usage: bench-search TOOLS_JSON QUERIES_JSON [--rounds N]

use lifeline_bench::percentile;
use lifeline_core::gateway::search::Index;
use lifeline_core::pins::{self, flags};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::time::Instant;

const SERVERS: usize = 20;
const TOOLS_PER_SERVER: usize = 25;
const COPIES: usize = 20;

/// Search mode's first `tools/list`, as issue 27 describes its meta-tools. A stand-in until
/// the aggregated endpoint serves them: then this should be the list it serves.
fn meta_tools() -> Value {
    json!({"tools": [
        {
            "name": "find_tools",
            "title": "Find tools",
            "description": "Search this endpoint's tools by what they do. Returns the best \
                matches with their names, descriptions and input schemas; call one with \
                call_tool.",
            "inputSchema": {"type": "object", "properties": {
                "query": {"type": "string", "description": "What the tool should do, in a few words"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5,
                          "description": "How many tools to return"}
            }, "required": ["query"]},
            "annotations": {"readOnlyHint": true}
        },
        {
            "name": "call_tool",
            "title": "Call a tool",
            "description": "Call a tool that find_tools returned, by its name, with its arguments.",
            "inputSchema": {"type": "object", "properties": {
                "name": {"type": "string", "description": "The tool's name, as find_tools gave it"},
                "arguments": {"type": "object", "description": "The tool's arguments, as its input schema says"}
            }, "required": ["name"]}
        },
        {
            "name": "describe_tool",
            "title": "Describe a tool",
            "description": "The full definition of one tool: its description and input schema.",
            "inputSchema": {"type": "object", "properties": {
                "name": {"type": "string", "description": "The tool's name"}
            }, "required": ["name"]},
            "annotations": {"readOnlyHint": true}
        }
    ]})
}

/// The real tools, in file order: (server, tool JSON).
fn real_tools(file: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (server, listed) in file["servers"].as_object().expect("servers") {
        for tool in listed["tools"].as_array().expect("tools") {
            out.push((server.clone(), tool.clone()));
        }
    }
    out
}

/// `tool` as the host sees it under `name`.
fn renamed(tool: &Value, name: &str) -> Value {
    let mut tool = tool.clone();
    tool["name"] = json!(name);
    tool
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: bench-search TOOLS_JSON QUERIES_JSON [--rounds N]";
    let (Some(tools_path), Some(queries_path)) = (args.first(), args.get(1)) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let rounds: usize = match args.get(2).map(String::as_str) {
        Some("--rounds") => args.get(3).and_then(|n| n.parse().ok()).expect(usage),
        _ => 200,
    };
    let read = |path: &str| -> Value {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let real = real_tools(&read(tools_path));
    let queries: Vec<String> = read(queries_path)["queries"]
        .as_array()
        .expect("queries")
        .iter()
        .map(|q| q["query"].as_str().expect("query").to_owned())
        .collect();

    // 1,000 tools: every real tool under 20 server names, each copy's description given a
    // word of its own, so the copies are not one document twenty times.
    let mut many = Vec::new();
    for copy in 0..COPIES {
        for (server, tool) in &real {
            let name = format!("{server}{copy:02}__{}", tool["name"].as_str().unwrap_or(""));
            let mut tool = renamed(tool, &name);
            let said = tool["description"].as_str().unwrap_or("").to_owned();
            tool["description"] = json!(format!("{said} (deployment {copy}, copy{copy})"));
            many.push((name, tool));
        }
    }
    let started = Instant::now();
    let index = Index::build(many.iter().map(|(n, t)| (n.as_str(), t)));
    let build = started.elapsed();
    let mut found = 0;
    for query in &queries {
        found += index.search(query, 5).len(); // the unmeasured round
    }
    let mut samples = Vec::with_capacity(rounds * queries.len());
    for _ in 0..rounds {
        for query in &queries {
            let started = Instant::now();
            let hits = index.search(query, 5);
            samples.push(started.elapsed());
            std::hint::black_box(hits);
        }
    }
    samples.sort();
    let us = |d: Duration| (d.as_secs_f64() * 1e7).round() / 10.0;

    // 20 servers × 25 tools, the real tools in turn.
    let full: Vec<Value> = (0..SERVERS * TOOLS_PER_SERVER)
        .map(|i| {
            let (_, tool) = &real[i % real.len()];
            let server = format!("s{:02}", i / TOOLS_PER_SERVER);
            renamed(
                tool,
                &format!("{server}__{}", tool["name"].as_str().unwrap_or("")),
            )
        })
        .collect();
    let full_bytes = serde_json::to_vec(&json!({ "tools": full }))
        .expect("json")
        .len();
    let search_bytes = serde_json::to_vec(&meta_tools()).expect("json").len();
    let tokens = |bytes: usize| bytes.div_ceil(4);
    let ratio = search_bytes as f64 / full_bytes as f64;
    let pins = pins_record(&many, rounds.min(100));
    let record = json!({
        "pins": pins,
        "search": {
            "tools": index.len(),
            "queries": queries.len(),
            "searches": samples.len(),
            "limit": 5,
            "hits_per_round": found,
            "p50_us": us(percentile(&samples, 50)),
            "p99_us": us(percentile(&samples, 99)),
            "build_ms": (build.as_secs_f64() * 1e4).round() / 10.0,
        },
        "tokens": {
            "servers": SERVERS,
            "tools_per_server": TOOLS_PER_SERVER,
            "full_bytes": full_bytes,
            "search_bytes": search_bytes,
            "full_tokens": tokens(full_bytes),
            "search_tokens": tokens(search_bytes),
            "ratio": (ratio * 10_000.0).round() / 10_000.0,
        },
    });
    println!("{record}");
}

/// `pins::review` of `tools` against their pins, `rounds` times after one unmeasured round;
/// the first sight and the flags once each (they run once per server, not per list).
fn pins_record(tools: &[(String, Value)], rounds: usize) -> Value {
    let tools: Vec<Value> = tools.iter().map(|(_, t)| t.clone()).collect();
    let started = Instant::now();
    let first = pins::review(None, &tools, 0);
    let first_sight = started.elapsed();
    let mut samples = Vec::with_capacity(rounds);
    std::hint::black_box(pins::review(Some(&*first.pins), &tools, 1));
    for _ in 0..rounds {
        let started = Instant::now();
        let review = pins::review(Some(&*first.pins), &tools, 1);
        samples.push(started.elapsed());
        assert!(review.newly_held.is_empty(), "the same tools are approved");
    }
    samples.sort();
    let started = Instant::now();
    let digests: Vec<String> = tools.iter().map(pins::digest).collect();
    let hashing = started.elapsed();
    std::hint::black_box(digests);
    let descriptions = tools.iter().filter_map(|t| t["description"].as_str());
    let context = flags::Context {
        norm: flags::norm(descriptions),
        others: &[],
    };
    let started = Instant::now();
    let flagged: usize = tools.iter().map(|t| flags::flags(t, &context).len()).sum();
    let flagging = started.elapsed();
    let ms = |d: Duration| (d.as_secs_f64() * 1e5).round() / 100.0;
    json!({
        "tools": tools.len(),
        "reviews": samples.len(),
        "p50_ms": ms(percentile(&samples, 50)),
        "p99_ms": ms(percentile(&samples, 99)),
        "first_sight_ms": ms(first_sight),
        "hash_ms": ms(hashing),
        "flags_ms": ms(flagging),
        "flags": flagged,
    })
}
