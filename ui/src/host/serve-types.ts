// The "Serve over HTTP" dialog's wire types, as crates/desktop/src/serve.rs serializes them
// (`EndpointView`, `TokenClient`, `NewToken`). Hand-written: these shapes have no ts-rs
// derive, so keep them in step with serve.rs.

/** The app's local Streamable HTTP endpoint (`gateway_endpoint`, `gateway_set`). */
export interface EndpointView {
  /** `lifeline.serve.enabled` in the config. */
  enabled: boolean;
  /** `http://127.0.0.1:PORT/servers/NAME/mcp` once listening (NAME literally). */
  url: string | null;
  /** The port it listens on, once listening. */
  port: number | null;
  /** `lifeline.serve.port` in the config; 0 is any free port. */
  configured_port: number;
  tokens_file: string | null;
  /** Why it is not listening, when enabled. */
  error: string | null;
}

/** A client with a token: never the token. */
export interface TokenClient {
  name: string;
  created: string;
}

/** A token just made: the only answer that holds one; shown once. */
export interface NewToken {
  client: string;
  token: string;
  /** What `lifeline serve token add` prints: the URL, the header, the hosts' snippets. */
  usage: string;
}
