//! Where a request goes: the target a path asks for, the caller its bearer token names, and
//! whether that caller may open that target. A token bound to a profile opens that profile
//! alone: `/mcp` is its profile (not `default`), its own `/profiles/P/mcp` is the same, and
//! any other path is 403 saying which URL to use.

use super::reply::{refuse, unauthorized};
use super::tokens::Caller;
use super::{Auth, Body, State, end_revoked, header, profile_url};
use crate::config::DEFAULT_PROFILE;
use crate::gateway::Target;
use hyper::http::request::Parts;
use hyper::{Response, StatusCode};

/// What a path asks for: `/servers/NAME/mcp` a server, `/profiles/P/mcp` a profile, `/mcp`
/// the `default` profile. Names are the config's: 1 to 64 of letters, digits, `-_.`.
pub(super) fn target(path: &str) -> Option<Target> {
    if path == "/mcp" {
        return Some(Target::Profile(DEFAULT_PROFILE.to_owned()));
    }
    let name_in = |prefix: &str| {
        let name = path.strip_prefix(prefix)?.strip_suffix("/mcp")?;
        let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        (!name.is_empty() && name.len() <= 64 && name.chars().all(ok)).then(|| name.to_owned())
    };
    name_in("/servers/")
        .map(Target::Server)
        .or_else(|| name_in("/profiles/").map(Target::Profile))
}

/// Who calls (`None` under `Auth::Open`), or the 401 for a request without a client's
/// token. The clients whose token went away meanwhile have their sessions ended first.
pub(super) fn caller(state: &State, parts: &Parts) -> Result<Option<Caller>, Box<Response<Body>>> {
    let Auth::Tokens(tokens) = &state.auth else {
        return Ok(None);
    };
    let Some(token) = header(parts, "authorization").and_then(super::guard::bearer) else {
        return Err(Box::new(unauthorized(
            "Lifeline's endpoint needs `Authorization: Bearer TOKEN`; make a token with \
             `lifeline serve token add CLIENT`",
        )));
    };
    let found = tokens.caller_of(token);
    end_revoked(state);
    match found {
        Some(caller) => Ok(Some(caller)),
        None => Err(Box::new(unauthorized(
            "the bearer token is not one of Lifeline's clients' (see `lifeline serve token \
             list`; `lifeline serve token add CLIENT` makes a new one)",
        ))),
    }
}

/// What `caller` is served at `path`, whose target is `target`: the target itself for an
/// unbound token, its profile for a bound one at `/mcp` or at its own profile's path, or
/// the 403 naming the profile and its URL on `port`.
pub(super) fn opens(
    path: &str,
    target: Target,
    caller: Option<&Caller>,
    port: u16,
) -> Result<Target, Box<Response<Body>>> {
    let Some((client, profile)) = caller.and_then(|c| Some((&c.client, c.profile.as_ref()?)))
    else {
        return Ok(target);
    };
    if path == "/mcp" || target == Target::Profile(profile.clone()) {
        return Ok(Target::Profile(profile.clone()));
    }
    tracing::info!(
        "gateway: refused {client} (bound to profile `{profile}`) at {}",
        target.shown()
    );
    Err(Box::new(refuse(
        StatusCode::FORBIDDEN,
        -32000,
        format!(
            "the token of `{client}` is bound to profile `{profile}` and opens only that, not \
             {}: use {}",
            target.shown(),
            profile_url(port, profile)
        ),
    )))
}
