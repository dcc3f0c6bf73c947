//! Opening a host session at `initialize`: room made under the session caps (`sweep`: idle
//! sessions end, then the client's own least recently used idle one), the supervisor for
//! NAME resolved, a session id from the OS's random source, and the answer carrying it in
//! `Mcp-Session-Id`.

use super::reply::refuse;
use super::session::HttpSession;
use super::{Body, IDLE, State, answer};
use crate::gateway::Target;
use crate::gateway::attach::Refusal;
use crate::protocol::{Message, RpcError};
use hyper::header::HeaderValue;
use hyper::{Response, StatusCode};
use std::io;
use std::sync::Arc;
use std::time::Duration;

pub(super) async fn initialize(
    state: &Arc<State>,
    msg: Message,
    name: Target,
    client: Option<String>,
    stream: bool,
) -> Response<Body> {
    if let Err(why) = sweep(state, client.as_deref()) {
        return refuse(StatusCode::SERVICE_UNAVAILABLE, -32000, why);
    }
    let served = match (state.resolve)(name.clone()).await {
        Ok(found) => found,
        Err((kind, message)) => {
            let status = match kind {
                Refusal::Unknown => StatusCode::NOT_FOUND,
                Refusal::Closing => StatusCode::SERVICE_UNAVAILABLE,
                _ => StatusCode::BAD_REQUEST,
            };
            return refuse(status, -32000, message);
        }
    };
    let id = match session_id() {
        Ok(id) => id,
        Err(e) => {
            return refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                RpcError::INTERNAL_ERROR,
                format!("no session id: the OS gave no random bytes ({e})"),
            );
        }
    };
    let session = HttpSession::start(
        id.clone(),
        name.clone(),
        client.clone(),
        served,
        state.limits.stream_queue,
        state.limits.resume_bytes,
    );
    state
        .sessions
        .lock()
        .expect("sessions lock")
        .insert(id.clone(), session.clone());
    tracing::info!(
        "gateway: {} opened a session on {} over HTTP",
        client.as_deref().unwrap_or("a host"),
        name.shown()
    );
    let Message::Request(r) = &msg else {
        unreachable!("initialize is a request")
    };
    let mut response = answer(&session, r.id.clone(), msg.clone(), stream).await;
    if let Ok(v) = HeaderValue::from_str(&id) {
        response.headers_mut().insert("mcp-session-id", v);
    }
    response
}

/// Ends the sessions that have been unused for `IDLE`, and makes room for one more of
/// `client`'s: at its own cap, or at the global one, its least recently used idle session
/// ends (never another client's). Why there is no room, if there is none.
fn sweep(state: &State, client: Option<&str>) -> Result<(), String> {
    let limits = state.limits;
    // Without tokens every session is the same client's: only the global cap holds.
    let own_cap = if client.is_some() {
        limits.sessions_per_client.min(limits.sessions)
    } else {
        limits.sessions
    };
    let (ended, room) = {
        let mut sessions = state.sessions.lock().expect("sessions lock");
        let mut ended: Vec<_> = {
            let ids: Vec<_> = sessions
                .iter()
                .filter(|(_, s)| s.idle_for(IDLE))
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| sessions.remove(id)).collect()
        };
        let own = sessions
            .values()
            .filter(|s| s.client.as_deref() == client)
            .count();
        if own >= own_cap || sessions.len() >= limits.sessions {
            let oldest = sessions
                .iter()
                .filter(|(_, s)| s.client.as_deref() == client && s.idle_for(Duration::ZERO))
                .min_by_key(|(_, s)| s.last_used())
                .map(|(id, _)| id.clone());
            ended.extend(oldest.and_then(|id| sessions.remove(&id)));
        }
        let own = sessions
            .values()
            .filter(|s| s.client.as_deref() == client)
            .count();
        let room = if own >= own_cap {
            Err(format!(
                "{} has {own_cap} host sessions open and busy: end one (DELETE) first",
                client.unwrap_or("this endpoint")
            ))
        } else if sessions.len() >= limits.sessions {
            Err(format!(
                "{} host sessions are open and busy: try again when one ends",
                limits.sessions
            ))
        } else {
            Ok(())
        };
        (ended, room)
    };
    for s in ended {
        tracing::info!(
            "gateway: ending idle session {} on {}",
            s.short_id(),
            s.target.shown()
        );
        tokio::spawn(s.end());
    }
    room
}

/// 32 hex digits from the OS's random source: visible ASCII, as the spec asks.
fn session_id() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
