//! The few rtnetlink messages the route source reads (`netlink.rs`), parsed by hand: the dump
//! request, and in the kernel's answer, whether the main table has a default route the
//! machine can use — a unicast route to 0.0.0.0/0 or ::/0 out of an interface that is not the
//! loopback and whose link is not down. Pure; every length is checked, so odd bytes end the
//! reading, never the process. Layouts: linux/netlink.h and linux/rtnetlink.h.

/// `RTMGRP_LINK`: a link came up or went down (a lost carrier leaves its routes in place,
/// flagged, and tells no route change).
pub const GROUP_LINK: u32 = 0x1;
/// `RTMGRP_IPV4_ROUTE`.
pub const GROUP_IPV4_ROUTE: u32 = 0x40;
/// `RTMGRP_IPV6_ROUTE`.
pub const GROUP_IPV6_ROUTE: u32 = 0x400;

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const RTM_NEWROUTE: u16 = 24;
const RTM_GETROUTE: u16 = 26;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;

const RT_TABLE_MAIN: u32 = 254;
const RTN_UNICAST: u8 = 1;
const RTA_OIF: u16 = 4;
const RTA_MULTIPATH: u16 = 9;
const RTA_TABLE: u16 = 15;
const RTNH_F_DEAD: u32 = 1;
const RTNH_F_LINKDOWN: u32 = 16;

/// `struct nlmsghdr`.
const HEADER: usize = 16;
/// `struct rtmsg`.
const RTMSG: usize = 12;
/// `struct rtnexthop`.
const NEXTHOP: usize = 8;

/// `RTM_GETROUTE` with `NLM_F_DUMP` for every family: the kernel answers with each route.
pub fn dump_request(seq: u32) -> [u8; HEADER + RTMSG] {
    let mut out = [0u8; HEADER + RTMSG];
    out[0..4].copy_from_slice(&((HEADER + RTMSG) as u32).to_ne_bytes());
    out[4..6].copy_from_slice(&RTM_GETROUTE.to_ne_bytes());
    out[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    out[8..12].copy_from_slice(&seq.to_ne_bytes());
    // The port id stays 0 (the kernel fills it in); the rtmsg is zero: AF_UNSPEC, any table.
    out
}

/// One netlink message: its header's type and sequence number, and its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    pub kind: u16,
    pub seq: u32,
    pub payload: &'a [u8],
}

/// The messages of one datagram, in order; a length that does not fit ends them.
pub fn messages(mut buf: &[u8]) -> impl Iterator<Item = Message<'_>> {
    std::iter::from_fn(move || {
        let len = u32_at(buf, 0)? as usize;
        if len < HEADER || len > buf.len() {
            return None;
        }
        let message = Message {
            kind: u16_at(buf, 4)?,
            seq: u32_at(buf, 8)?,
            payload: &buf[HEADER..len],
        };
        buf = buf.get(align(len)..).unwrap_or_default();
        Some(message)
    })
}

/// A dump's answer as it arrives, datagram by datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dump {
    seq: u32,
    loopback: u32,
    /// Whether a usable default route was seen so far.
    pub default_route: bool,
    /// The kernel said `NLMSG_DONE`, or an error (`failed`).
    pub done: bool,
    /// The kernel refused the dump: its errno.
    pub failed: Option<i32>,
}

impl Dump {
    /// The answer to the request numbered `seq`; `loopback` is the loopback's interface index.
    pub fn new(seq: u32, loopback: u32) -> Dump {
        Dump {
            seq,
            loopback,
            default_route: false,
            done: false,
            failed: None,
        }
    }

    /// Reads one datagram; messages of another sequence (a change told meanwhile) are not
    /// the dump's and are left out.
    pub fn read(&mut self, datagram: &[u8]) {
        for message in messages(datagram) {
            if self.done {
                return;
            }
            if message.seq != self.seq {
                continue;
            }
            match message.kind {
                NLMSG_DONE => self.done = true,
                NLMSG_ERROR => {
                    let errno = i32_at(message.payload, 0).unwrap_or(0);
                    if errno != 0 {
                        self.failed = Some(-errno);
                        self.done = true;
                    }
                }
                RTM_NEWROUTE => {
                    self.default_route |= Route::parse(message.payload)
                        .is_some_and(|route| route.is_default(self.loopback));
                }
                _ => {}
            }
        }
    }
}

/// What a route says of the way out, as far as this reading needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub family: u8,
    pub dst_len: u8,
    pub table: u32,
    pub kind: u8,
    pub flags: u32,
    /// `RTA_OIF`, when the route has one interface.
    pub oif: Option<u32>,
    /// `RTA_MULTIPATH`'s next hops, each (flags, interface).
    pub hops: Vec<(u32, u32)>,
}

impl Route {
    /// The `RTM_NEWROUTE` payload `payload` (an rtmsg and its attributes).
    pub fn parse(payload: &[u8]) -> Option<Route> {
        let head = payload.get(..RTMSG)?;
        let mut route = Route {
            family: head[0],
            dst_len: head[1],
            table: u32::from(head[4]),
            kind: head[7],
            flags: u32_at(head, 8)?,
            oif: None,
            hops: Vec::new(),
        };
        for (kind, value) in attributes(&payload[RTMSG..]) {
            match kind {
                RTA_TABLE => route.table = u32_at(value, 0)?,
                RTA_OIF => route.oif = Some(u32_at(value, 0)?),
                RTA_MULTIPATH => route.hops = hops(value),
                _ => {}
            }
        }
        Some(route)
    }

    /// A default route of the main table that leads out: unicast (not `unreachable` and the
    /// like, which the kernel puts on the loopback), not out of the loopback, its link up.
    pub fn is_default(&self, loopback: u32) -> bool {
        let usable =
            |flags: u32, oif: u32| flags & (RTNH_F_DEAD | RTNH_F_LINKDOWN) == 0 && oif != loopback;
        self.dst_len == 0
            && self.table == RT_TABLE_MAIN
            && self.kind == RTN_UNICAST
            && match self.oif {
                Some(oif) => usable(self.flags, oif),
                None => self.hops.iter().any(|&(flags, oif)| usable(flags, oif)),
            }
    }
}

/// `struct rtattr`s: (type, value) pairs; a length that does not fit ends them.
fn attributes(mut buf: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = usize::from(u16_at(buf, 0)?);
        if len < 4 || len > buf.len() {
            return None;
        }
        let attribute = (u16_at(buf, 2)?, &buf[4..len]);
        buf = buf.get(align(len)..).unwrap_or_default();
        Some(attribute)
    })
}

/// `RTA_MULTIPATH`'s `struct rtnexthop`s: (flags, interface index) each.
fn hops(mut buf: &[u8]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    while let Some(len) = u16_at(buf, 0).map(usize::from) {
        if len < NEXTHOP || len > buf.len() {
            break;
        }
        if let Some(oif) = u32_at(buf, 4) {
            out.push((u32::from(buf[2]), oif));
        }
        buf = buf.get(align(len)..).unwrap_or_default();
    }
    out
}

/// Netlink's 4-byte alignment.
fn align(len: usize) -> usize {
    len.saturating_add(3) & !3
}

fn u16_at(buf: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(buf.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(buf: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(buf.get(at..at + 4)?.try_into().ok()?))
}

fn i32_at(buf: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_ne_bytes(buf.get(at..at + 4)?.try_into().ok()?))
}

#[cfg(test)]
#[path = "routes_tests.rs"]
mod routes_tests;
