//! JSON-RPC 2.0 framing and the client side of MCP's messages. Pure data: no I/O, no
//! clocks. Everything that crosses the wire is (de)serialized here and nowhere else.

pub mod jsonrpc;
pub mod mcp;
pub mod revision;
pub mod stateless;

pub use jsonrpc::{Message, Notification, Request, RequestId, Response, RpcError};
