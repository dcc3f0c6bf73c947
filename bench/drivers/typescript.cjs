// The TypeScript SDK (@modelcontextprotocol/sdk) benchmark driver: the same command line,
// loop and JSON record as bench/src/lib.rs (see docs/benchmarks.md). The SDK is the one pinned
// in tests/peers (scripts/setup.sh installs it); run it with the project's Node 22:
//   node bench/drivers/typescript.cjs (--stdio 'CMD ARGS' | --http URL) [--concurrency N] ...
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { createRequire } = require('node:module');

const peers = createRequire(path.join(__dirname, '..', '..', 'tests', 'peers', 'package.json'));
const { Client } = peers('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = peers('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = peers('@modelcontextprotocol/sdk/client/streamableHttp.js');

const USAGE =
  "usage: typescript.cjs (--stdio 'COMMAND ARGS...' | --http URL) [--concurrency N] " +
  '[--calls N] [--warmup N] [--tool NAME] [--arguments JSON] [--once] [--list] [--list-first]';

function parse(argv) {
  const run = { concurrency: 1, calls: 1000, warmup: 50, tool: 'echo', arguments: { text: 'hello' } };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${flag} needs a value; ${USAGE}`);
      return argv[++i];
    };
    const number = (v) => {
      if (!/^\d+$/.test(v)) throw new Error(`${flag} must be a whole number, not \`${v}\``);
      return Number(v);
    };
    switch (flag) {
      case '--stdio': {
        const [command, ...args] = value().split(/\s+/).filter(Boolean);
        run.server = { transport: 'stdio', command, args };
        break;
      }
      case '--http': run.server = { transport: 'http', url: value() }; break;
      case '--concurrency': run.concurrency = Math.max(1, number(value())); break;
      case '--calls': run.calls = Math.max(1, number(value())); break;
      case '--warmup': run.warmup = number(value()); break;
      case '--tool': run.tool = value(); break;
      case '--once': run.once = true; break;
      // Times Client.listTools (the SDK's validation of the list included) instead of a call.
      case '--list': run.list = true; break;
      // One Client.listTools after connecting, before the calls, as hosts do.
      case '--list-first': run.listFirst = true; break;
      case '--arguments': run.arguments = JSON.parse(value()); break;
      default: throw new Error(`unknown option \`${flag}\`; ${USAGE}`);
    }
  }
  if (!run.server) throw new Error(`say where the server is; ${USAGE}`);
  return run;
}

// VmHWM of /proc/self/status, not resourceUsage().maxRSS: Linux carries ru_maxrss across
// exec, so a driver started by the orchestrator would count the orchestrator's size.
function peakRssKb() {
  const m = /^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : process.resourceUsage().maxRSS;
}

function percentile(sorted, p) {
  if (sorted.length === 0) return 0;
  const rank = Math.max(1, Math.ceil((p * sorted.length) / 100));
  return sorted[rank - 1];
}

// Fault-matrix mode: connect, one call, how it ended and how long the failing step took.
async function once(client, transport, call) {
  const seconds = (t) => Number(process.hrtime.bigint() - t) / 1e9;
  const print = (r) => console.log(JSON.stringify({ client: 'typescript', ...r }));
  let t = process.hrtime.bigint();
  try {
    await client.connect(transport);
  } catch (e) {
    return print({ outcome: 'error', step: 'connect', seconds: seconds(t), error: String(e && e.message || e) });
  }
  t = process.hrtime.bigint();
  try {
    await call();
    print({ outcome: 'ok', step: 'call', seconds: seconds(t) });
  } catch (e) {
    print({ outcome: 'error', step: 'call', seconds: seconds(t), error: String(e && e.message || e) });
  }
}

async function main() {
  const run = parse(process.argv.slice(2));
  const transport = run.server.transport === 'stdio'
    ? new StdioClientTransport({ command: run.server.command, args: run.server.args, stderr: 'ignore' })
    : new StreamableHTTPClientTransport(new URL(run.server.url));
  const client = new Client({ name: 'lifeline-bench', version: '0.1.0' });
  const call = run.list
    ? async () => { run.tools = (await client.listTools()).tools.length; }
    : async () => {
      const result = await client.callTool({ name: run.tool, arguments: run.arguments });
      if (result.isError) throw new Error(`the tool failed: ${JSON.stringify(result.content)}`);
    };
  if (run.once) return once(client, transport, call);
  await client.connect(transport);
  if (run.listFirst) await client.listTools();
  for (let i = 0; i < run.warmup; i++) await call();

  const cpuBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  let next = 0;
  const latencies = [];
  const worker = async () => {
    while (next++ < run.calls) {
      const t = process.hrtime.bigint();
      await call();
      latencies.push(Number(process.hrtime.bigint() - t) / 1000);
    }
  };
  await Promise.all(Array.from({ length: run.concurrency }, worker));
  const wallS = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  latencies.sort((a, b) => a - b);
  const n = latencies.length;
  const cpuMs = (cpu.user + cpu.system) / 1000;
  console.log(JSON.stringify({
    client: 'typescript',
    transport: run.server.transport,
    concurrency: run.concurrency,
    calls: n,
    p50_us: Math.round(percentile(latencies, 50)),
    p99_us: Math.round(percentile(latencies, 99)),
    calls_per_s: Math.round((n / wallS) * 10) / 10,
    cpu_ms_per_10k: Math.round(((cpuMs * 10000) / n) * 10) / 10,
    peak_rss_kb: peakRssKb(),
    ...(run.list ? { method: 'tools/list', tools: run.tools } : {}),
  }));
  await client.close();
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(`benchmark run failed: ${e && e.message ? e.message : e}`);
    process.exit(1);
  },
);
