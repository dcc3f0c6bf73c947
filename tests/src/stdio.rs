//! The stdio transport: newline-delimited JSON-RPC on stdin/stdout.
//!
//! One writer task owns stdout and flushes after every line, so garbage and oversized lines
//! land exactly between the messages around them.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::log::Received;
use crate::mcp::{self, Message, RpcError, Server};
use crate::process;
use crate::script::{Action, StdinEof};

type Lines = mpsc::UnboundedSender<Vec<u8>>;

pub async fn serve(server: Arc<Server>) -> std::io::Result<()> {
    process::start(&server, "stdio")?;
    let (out, lines) = mpsc::unbounded_channel();
    let writer = tokio::spawn(write_lines(lines));
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    loop {
        line.clear();
        if stdin.read_until(b'\n', &mut line).await? == 0 {
            break;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        handle_line(&server, &out, &line);
    }
    server.log.event("stdin_closed", json!({}));
    if server.script.on_stdin_eof == StdinEof::Stay {
        std::future::pending::<()>().await;
    }
    // Finish the answers in flight: the writer ends once every answer task has dropped its
    // sender and the queued lines are out.
    drop(out);
    let _ = writer.await;
    server
        .log
        .event("exit", json!({"code": 0, "reason": "stdin_closed"}));
    Ok(())
}

async fn write_lines(mut lines: mpsc::UnboundedReceiver<Vec<u8>>) {
    let mut stdout = tokio::io::stdout();
    while let Some(mut line) = lines.recv().await {
        line.push(b'\n');
        if stdout.write_all(&line).await.is_err() || stdout.flush().await.is_err() {
            return;
        }
    }
}

fn send(out: &Lines, message: &Value) {
    let _ = out.send(message.to_string().into_bytes());
}

fn handle_line(server: &Arc<Server>, out: &Lines, line: &[u8]) {
    let parsed: Option<Value> = serde_json::from_slice(line).ok();
    server.log.received(&Received {
        transport: "stdio",
        message: parsed.as_ref(),
        unparsable: parsed.is_none(),
        ..Received::default()
    });
    let Some(message) = parsed else {
        let e = RpcError::new(mcp::PARSE_ERROR, "Parse error");
        return send(out, &mcp::error_response(&Value::Null, &e));
    };
    match mcp::classify(&message) {
        Message::Request(req) => {
            let action = server.decide(&req);
            if let Then::Answer(action) = act(server, out, action) {
                answer(server, out, req, action);
            }
        }
        Message::Notification { .. } => {}
        Message::Response { .. } => server.accept_response(&message),
        Message::Invalid => {
            let e = RpcError::new(mcp::INVALID_REQUEST, "Invalid Request");
            send(out, &mcp::error_response(&Value::Null, &e));
        }
    }
}

/// What follows the stdio side of a fault.
enum Then {
    /// Answer, with `Delay` or `RpcError` applied if that was the fault.
    Answer(Option<Action>),
    Leave,
}

/// Performs the stdio side of a fault. HTTP-only faults answer normally here.
fn act(server: &Server, out: &Lines, action: Option<Action>) -> Then {
    let answer_if = |then_answer: bool| {
        if then_answer {
            Then::Answer(None)
        } else {
            Then::Leave
        }
    };
    match action {
        Some(Action::Crash { code }) => process::crash(&server.log, code),
        Some(Action::NeverAnswer) => Then::Leave,
        Some(Action::Garbage { text, then_answer }) => {
            let _ = out.send(text.into_bytes());
            answer_if(then_answer)
        }
        Some(Action::Oversized { bytes, then_answer }) => {
            let _ = out.send(mcp::padded_notification(bytes));
            answer_if(then_answer)
        }
        Some(
            Action::HttpStatus(_)
            | Action::WrongContentType { .. }
            | Action::SseClose(_)
            | Action::StreamBreak { .. },
        ) => Then::Answer(None),
        other @ (None | Some(Action::Delay { .. } | Action::RpcError { .. })) => {
            Then::Answer(other)
        }
    }
}

fn answer(server: &Arc<Server>, out: &Lines, req: mcp::Request, action: Option<Action>) {
    let mut outbound = server.answer(req, action);
    let out = out.clone();
    tokio::spawn(async move {
        while let Some(message) = outbound.recv().await {
            send(&out, message.message());
        }
    });
}
