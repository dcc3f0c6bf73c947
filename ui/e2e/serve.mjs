// A tiny static file server for ui/dist on 127.0.0.1 (an ephemeral port), for the e2e tests.
// `node e2e/serve.mjs [port]` serves by hand.

import { createReadStream, statSync } from "node:fs";
import { createServer } from "node:http";
import { extname, join, normalize, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** @type {Record<string, string>} */
const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
};

export const DIST = resolve(fileURLToPath(new URL("../dist", import.meta.url)));

/** Serves `root` on 127.0.0.1; resolves to { url, close }. */
export function serve(root = DIST, port = 0) {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    const file = normalize(join(root, path === "/" ? "index.html" : path));
    if (file !== root && !file.startsWith(root + sep)) {
      res.writeHead(403).end();
      return;
    }
    let size;
    try {
      const st = statSync(file);
      if (!st.isFile()) throw new Error("not a file");
      size = st.size;
    } catch {
      res.writeHead(404, { "content-type": "text/plain" }).end(`not found: ${path}`);
      return;
    }
    res.writeHead(200, {
      "content-type": TYPES[extname(file)] ?? "application/octet-stream",
      "content-length": size,
      "cache-control": "no-store",
    });
    createReadStream(file).pipe(res);
  });
  return new Promise((ok, fail) => {
    server.once("error", fail);
    server.listen(port, "127.0.0.1", () => {
      const { port: p } = /** @type {import("node:net").AddressInfo} */ (server.address());
      ok({
        url: `http://127.0.0.1:${p}`,
        close: () => new Promise((done) => server.close(() => done(undefined))),
      });
    });
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { url } = await serve(DIST, Number(process.argv[2] ?? 4173));
  console.log(`serving ${DIST} at ${url}/index.html?mock`);
}
