//! HTTP/1.1 response framing, without I/O: the status line and headers, then the body as
//! pieces of data in the order they arrive (chunked, length-delimited or up to the close).

use std::ops::Range;

/// Largest response head accepted.
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// Headers looked at in a response head.
const MAX_HEADERS: usize = 64;

/// What a response head says.
#[derive(Debug, PartialEq)]
pub(crate) struct Head {
    /// The status code.
    pub status: u16,
    /// How its body ends.
    pub body: BodyDecoder,
    /// Whether the connection can carry another request once the body is read.
    pub keep_alive: bool,
}

/// Parses a response head at the start of `input`: `Ok(None)` until it is complete, then
/// the head and its length in bytes. Informational (1xx) heads are returned like others.
pub(crate) fn parse_head(input: &[u8]) -> Result<Option<(Head, usize)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let length = match response.parse(input) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) if input.len() > MAX_HEAD => {
            return Err(format!("response head longer than {MAX_HEAD} bytes"))
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("invalid HTTP response head: {e}")),
    };
    let status = response.code.unwrap_or_default();
    let mut keep_alive = response.version == Some(1);
    let (mut chunked, mut content_length) = (false, None);
    for header in response.headers.iter() {
        let value = std::str::from_utf8(header.value).unwrap_or("").trim();
        if header.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value
                .rsplit(',')
                .next()
                .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
        } else if header.name.eq_ignore_ascii_case("content-length") {
            let parsed = value
                .parse::<u64>()
                .map_err(|_| format!("invalid Content-Length `{value}`"))?;
            content_length = Some(parsed);
        } else if header.name.eq_ignore_ascii_case("connection") {
            let has = |token: &str| {
                value
                    .split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case(token))
            };
            keep_alive = if has("close") {
                false
            } else {
                keep_alive || has("keep-alive")
            };
        }
    }
    let body = if (100..200).contains(&status) || status == 204 || status == 304 {
        BodyDecoder::Length(0)
    } else if chunked {
        BodyDecoder::Chunked(ChunkState::Size)
    } else if let Some(length) = content_length {
        BodyDecoder::Length(length)
    } else {
        keep_alive = false;
        BodyDecoder::UntilClose
    };
    Ok(Some((
        Head {
            status,
            body,
            keep_alive,
        },
        length,
    )))
}

/// Where a chunked body is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ChunkState {
    /// At a chunk-size line.
    Size,
    /// Inside a chunk's data, this many bytes left.
    Data(u64),
    /// At the line break after a chunk's data.
    DataEnd,
    /// At the trailer lines after the last chunk.
    Trailers,
    /// After the body.
    Done,
}

/// Reads a body's pieces out of the bytes received.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum BodyDecoder {
    /// This many bytes left.
    Length(u64),
    /// Chunked transfer coding.
    Chunked(ChunkState),
    /// Everything up to the end of the connection.
    UntilClose,
}

/// One step of [`BodyDecoder::step`].
#[derive(Debug, PartialEq)]
pub(crate) enum Step {
    /// Body data at `data`; `consumed` bytes of the input are used up.
    Data { consumed: usize, data: Range<usize> },
    /// More input is needed; `consumed` bytes of framing are used up.
    More { consumed: usize },
    /// The body has ended after `consumed` bytes.
    End { consumed: usize },
}

impl BodyDecoder {
    /// Takes the next piece of body out of `input` (the bytes received and not yet used).
    pub fn step(&mut self, input: &[u8]) -> Result<Step, String> {
        match self {
            BodyDecoder::Length(0) => Ok(Step::End { consumed: 0 }),
            BodyDecoder::Length(left) => Ok(take_data(left, input)),
            BodyDecoder::UntilClose if input.is_empty() => Ok(Step::More { consumed: 0 }),
            BodyDecoder::UntilClose => Ok(Step::Data {
                consumed: input.len(),
                data: 0..input.len(),
            }),
            BodyDecoder::Chunked(state) => step_chunked(state, input),
        }
    }

    /// Whether the end of the connection is where this body ends.
    pub(crate) fn ends_at_close(&self) -> bool {
        matches!(self, BodyDecoder::UntilClose)
    }
}

/// Data of a length-delimited stretch with `left` bytes to go.
fn take_data(left: &mut u64, input: &[u8]) -> Step {
    let taken = input
        .len()
        .min(usize::try_from(*left).unwrap_or(usize::MAX));
    if taken == 0 {
        return Step::More { consumed: 0 };
    }
    *left -= taken as u64;
    Step::Data {
        consumed: taken,
        data: 0..taken,
    }
}

fn step_chunked(state: &mut ChunkState, input: &[u8]) -> Result<Step, String> {
    let mut consumed = 0;
    loop {
        let rest = &input[consumed..];
        match state {
            ChunkState::Done => return Ok(Step::End { consumed }),
            ChunkState::Data(left) => {
                return Ok(match take_data(left, rest) {
                    Step::Data { consumed: n, .. } => {
                        if *left == 0 {
                            *state = ChunkState::DataEnd;
                        }
                        Step::Data {
                            consumed: consumed + n,
                            data: consumed..consumed + n,
                        }
                    }
                    _ => Step::More { consumed },
                });
            }
            ChunkState::Size | ChunkState::DataEnd | ChunkState::Trailers => {
                let Some(end) = memchr::memchr(b'\n', rest) else {
                    if rest.len() > MAX_HEAD {
                        return Err("chunk framing line too long".into());
                    }
                    return Ok(Step::More { consumed });
                };
                let line = rest[..end].strip_suffix(b"\r").unwrap_or(&rest[..end]);
                consumed += end + 1;
                *state = match state {
                    ChunkState::Size => match chunk_size(line)? {
                        0 => ChunkState::Trailers,
                        size => ChunkState::Data(size),
                    },
                    ChunkState::DataEnd if line.is_empty() => ChunkState::Size,
                    ChunkState::DataEnd => return Err("chunk data longer than its size".into()),
                    _ if line.is_empty() => ChunkState::Done,
                    _ => ChunkState::Trailers,
                };
            }
        }
    }
}

/// The size on a chunk-size line (extensions after `;` are ignored).
fn chunk_size(line: &[u8]) -> Result<u64, String> {
    let digits = line.split(|&b| b == b';').next().unwrap_or(line);
    let text = std::str::from_utf8(digits).unwrap_or("").trim();
    u64::from_str_radix(text, 16).map_err(|_| {
        format!(
            "invalid chunk size line `{}`",
            String::from_utf8_lossy(line)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` in pieces of `piece` bytes; returns the body data and whether it ended.
    fn decode(mut decoder: BodyDecoder, input: &[u8], piece: usize) -> (Vec<u8>, bool) {
        let (mut buffer, mut body, mut fed) = (Vec::new(), Vec::new(), 0);
        loop {
            match decoder.step(&buffer).unwrap() {
                Step::Data { consumed, data } => {
                    body.extend_from_slice(&buffer[data]);
                    buffer.drain(..consumed);
                }
                Step::More { consumed } => {
                    buffer.drain(..consumed);
                    if fed == input.len() {
                        return (body, false);
                    }
                    let next = (fed + piece).min(input.len());
                    buffer.extend_from_slice(&input[fed..next]);
                    fed = next;
                }
                Step::End { consumed } => {
                    buffer.drain(..consumed);
                    return (body, true);
                }
            }
        }
    }

    #[test]
    fn heads_give_status_framing_and_reuse() {
        let input = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                      Transfer-Encoding: chunked\r\n\r\nrest";
        let (head, length) = parse_head(input).unwrap().unwrap();
        assert_eq!(&input[length..], b"rest");
        assert_eq!(head.status, 200);
        assert_eq!(head.body, BodyDecoder::Chunked(ChunkState::Size));
        assert!(head.keep_alive);
        let (head, _) =
            parse_head(b"HTTP/1.1 503 Busy\r\ncontent-length: 4\r\nConnection: close\r\n\r\n")
                .unwrap()
                .unwrap();
        assert_eq!(
            (head.status, head.body, head.keep_alive),
            (503, BodyDecoder::Length(4), false)
        );
        let (head, _) = parse_head(b"HTTP/1.0 200 OK\r\n\r\n").unwrap().unwrap();
        assert_eq!(
            (head.body, head.keep_alive),
            (BodyDecoder::UntilClose, false)
        );
        let (head, _) = parse_head(b"HTTP/1.1 100 Continue\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(head.body, BodyDecoder::Length(0));
    }

    #[test]
    fn partial_and_broken_heads() {
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\nContent-").unwrap(), None);
        assert!(parse_head(b"SMTP ready\r\n\r\n")
            .unwrap_err()
            .contains("invalid"));
        let bad = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: many\r\n\r\n").unwrap_err();
        assert!(bad.contains("Content-Length"), "{bad}");
    }

    #[test]
    fn chunked_bodies_decode_in_any_pieces() {
        let input = b"5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nTrailer: x\r\n\r\nNEXT";
        for piece in [1, 2, 3, 7, 64] {
            let (body, ended) = decode(BodyDecoder::Chunked(ChunkState::Size), input, piece);
            assert_eq!(
                (body.as_slice(), ended),
                (&b"hello, world"[..], true),
                "{piece}"
            );
        }
        let (body, ended) = decode(BodyDecoder::Chunked(ChunkState::Size), b"5\r\nhel", 2);
        assert_eq!((body.as_slice(), ended), (&b"hel"[..], false));
    }

    #[test]
    fn broken_chunks_are_errors() {
        let mut decoder = BodyDecoder::Chunked(ChunkState::Size);
        assert!(decoder.step(b"zz\r\n").unwrap_err().contains("chunk size"));
        let mut decoder = BodyDecoder::Chunked(ChunkState::Size);
        let mut input = &b"2\r\nabc\r\n"[..];
        let error = loop {
            match decoder.step(input) {
                Ok(Step::Data { consumed, .. }) => input = &input[consumed..],
                Ok(other) => panic!("{other:?}"),
                Err(e) => break e,
            }
        };
        assert!(error.contains("longer"), "{error}");
    }

    #[test]
    fn length_and_close_delimited_bodies() {
        let (body, ended) = decode(BodyDecoder::Length(5), b"helloNEXT", 3);
        assert_eq!((body.as_slice(), ended), (&b"hello"[..], true));
        let (body, ended) = decode(BodyDecoder::UntilClose, b"all of it", 4);
        assert_eq!((body.as_slice(), ended), (&b"all of it"[..], false));
        assert!(BodyDecoder::UntilClose.ends_at_close());
    }
}
