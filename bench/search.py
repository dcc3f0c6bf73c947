"""The benchmark's search section (issue 27, bench/METHOD.md "Search mode"): `bench-search`
runs the search mode's ranking over 1,000 tools made from the real servers' and counts the
tokens of search mode's first tool list against the full one. Called by run.py (`--only
search`).
"""

import json
import statistics
from pathlib import Path


def search(tools, args, root, run_driver, log):
    """bench-search: the search mode's ranking over 1,000 tools made from the real servers'
    (p50 and p99 of one `Index::search`, medians of the runs), the token estimate of
    search mode's first tool list against the full one for 20 servers x 25 tools, and the
    pins' review of the same 1,000 tools (issue 28)."""
    if not Path(tools.search).exists():
        return {}, [{"cell": "search", "error": f"bench-search not found at {tools.search}; "
                     "build bench/ (make bench-build)"}]
    data = root / "crates/core/tests/data"
    argv = [tools.search, str(data / "real-tools.json"), str(data / "tool-queries.json"),
            "--rounds", "10" if args.smoke else "200"]
    runs, failures = [], []
    for n in range(args.runs):
        record, error = run_driver(argv, args.timeout)
        if error:
            failures.append({"cell": "search", "error": error})
            log(f"  FAILED search: {error}")
            continue
        runs.append(record)
        log(f"  search run {n + 1}: p50 {record['search']['p50_us']} us, "
            f"p99 {record['search']['p99_us']} us over {record['search']['tools']} tools")
    if not runs:
        return {}, failures
    result = {"runs": len(runs), "search": dict(runs[0]["search"]), "tokens": runs[0]["tokens"],
              "pins": dict(runs[0]["pins"])}
    for key in ("p50_us", "p99_us", "build_ms"):
        result["search"][key] = statistics.median(r["search"][key] for r in runs)
    for key in ("p50_ms", "p99_ms", "first_sight_ms", "hash_ms", "flags_ms"):
        result["pins"][key] = statistics.median(r["pins"][key] for r in runs)
    log(f"  pins: review of {result['pins']['tools']} tools p50 {result['pins']['p50_ms']} ms")
    log(f"  search: tokens {json.dumps(result['tokens'])}")
    return result, failures
