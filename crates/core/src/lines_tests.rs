use super::*;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, BufReader, ReadBuf};

async fn lines(input: &[u8], max: usize) -> Vec<String> {
    let mut r = BufReader::with_capacity(4, input);
    let mut out = Vec::new();
    loop {
        let mut buf = Vec::new();
        match read_line_capped(&mut r, &mut buf, max).await.unwrap() {
            LineRead::Line => out.push(String::from_utf8(buf).unwrap()),
            LineRead::Eof => return out,
            LineRead::TooLong => {
                out.push("<too long>".into());
                return out;
            }
        }
    }
}

#[tokio::test]
async fn lines_are_framed_and_capped() {
    assert_eq!(
        lines(b"ab\ncdefgh\n\nlast", 10).await,
        ["ab", "cdefgh", "", "last"]
    );
    assert_eq!(
        lines(b"ab\n0123456789abc\nx\n", 10).await,
        ["ab", "<too long>"]
    );
    assert_eq!(lines(b"0123456789\n", 10).await, ["0123456789"]);
    assert_eq!(lines(b"", 10).await, Vec::<String>::new());
}

/// A stream that never ends and never sends `\n`, counting what was read from it.
struct Endless {
    served: usize,
}

impl AsyncRead for Endless {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = buf.remaining();
        buf.put_slice(&vec![b'x'; n]);
        self.served += n;
        Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn an_endless_line_is_refused_at_the_cap_without_reading_past_it() {
    const MAX: usize = 1 << 20;
    const CHUNK: usize = 8 * 1024;
    let mut r = BufReader::with_capacity(CHUNK, Endless { served: 0 });
    let mut buf = Vec::new();
    let read = read_line_capped(&mut r, &mut buf, MAX).await.unwrap();
    assert_eq!(read, LineRead::TooLong);
    assert!(
        buf.len() <= MAX,
        "held {} bytes over a cap of {MAX}",
        buf.len()
    );
    let served = r.get_ref().served;
    assert!(
        served <= MAX + CHUNK,
        "read {served} bytes for a cap of {MAX}: the reader went past the cap"
    );
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_read_continues_the_same_line() {
    let (mut tx, rx) = tokio::io::duplex(64);
    let mut r = BufReader::new(rx);
    let mut buf = Vec::new();
    use tokio::io::AsyncWriteExt;
    tx.write_all(b"hel").await.unwrap();
    // The first half is consumed, then the read is cancelled waiting for the rest.
    let first = tokio::time::timeout(
        std::time::Duration::from_millis(20),
        read_line_capped(&mut r, &mut buf, 100),
    );
    assert!(first.await.is_err(), "no line yet");
    assert_eq!(buf, b"hel");
    tx.write_all(b"lo\nnext\n").await.unwrap();
    let read = read_line_capped(&mut r, &mut buf, 100).await.unwrap();
    assert_eq!((read, buf.as_slice()), (LineRead::Line, &b"hello"[..]));
}

#[test]
fn caps_read_as_written() {
    let check = |n: usize, s: &str| assert_eq!(fmt_bytes(n), s);
    check(16 * 1024 * 1024, "16 MiB");
    check(64 * 1024, "64 KiB");
    check(1000, "1000 bytes");
}
