//! Server-sent events: splits a byte stream into events, each stamped with the arrival time
//! of its first byte. Only framing happens here; event payloads are interpreted by
//! [`super::chunk`].

use std::time::Instant;

/// Incremental SSE splitter for one response.
pub(crate) struct SseSplitter {
    /// Bytes of a line that has not ended yet.
    line: Vec<u8>,
    /// Arrival time of the first byte of `line`.
    line_at: Instant,
    /// `data` of the current event (several data lines are joined with `\n`).
    data: Vec<u8>,
    has_data: bool,
    /// Arrival time of the first byte of the current event.
    event_at: Option<Instant>,
}

impl SseSplitter {
    /// An empty splitter.
    pub fn new() -> Self {
        SseSplitter {
            line: Vec::new(),
            line_at: Instant::now(),
            data: Vec::with_capacity(512),
            has_data: false,
            event_at: None,
        }
    }

    /// Feeds bytes that arrived at `at`; calls `on_event(data, first_byte_at)` for each
    /// completed event that carries data.
    pub(crate) fn feed(
        &mut self,
        mut bytes: &[u8],
        at: Instant,
        on_event: &mut impl FnMut(&[u8], Instant),
    ) {
        while let Some(end) = memchr::memchr(b'\n', bytes) {
            let (head, rest) = (&bytes[..end], &bytes[end + 1..]);
            if self.line.is_empty() {
                self.process_line(head, at, on_event);
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(head);
                self.process_line(&line, self.line_at, on_event);
                line.clear();
                self.line = line;
            }
            bytes = rest;
        }
        if !bytes.is_empty() {
            if self.line.is_empty() {
                self.line_at = at;
            }
            self.line.extend_from_slice(bytes);
        }
    }

    /// Ends the stream: an unterminated last event is still delivered.
    pub fn finish(&mut self, on_event: &mut impl FnMut(&[u8], Instant)) {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, self.line_at, on_event);
        }
        self.process_line(b"", self.line_at, on_event);
    }

    fn process_line(
        &mut self,
        line: &[u8],
        at: Instant,
        on_event: &mut impl FnMut(&[u8], Instant),
    ) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            if let Some(start) = self.event_at.take() {
                if self.has_data {
                    on_event(&self.data, start);
                }
            }
            self.data.clear();
            self.has_data = false;
            return;
        }
        if line[0] == b':' {
            return;
        }
        self.event_at.get_or_insert(at);
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        if name == b"data" {
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn split(parts: &[(&str, u64)]) -> Vec<(String, u64)> {
        let base = Instant::now();
        let mut splitter = SseSplitter::new();
        let mut events = Vec::new();
        let mut on_event = |data: &[u8], at: Instant| {
            let ms = at.duration_since(base).as_millis() as u64;
            events.push((String::from_utf8(data.to_vec()).unwrap(), ms));
        };
        for (text, ms) in parts {
            splitter.feed(
                text.as_bytes(),
                base + Duration::from_millis(*ms),
                &mut on_event,
            );
        }
        splitter.finish(&mut on_event);
        events
    }

    #[test]
    fn events_carry_the_time_of_their_first_byte() {
        let events = split(&[
            ("data: a\n\nda", 1),
            ("ta: b\r\n", 5),
            ("\r\ndata: c\n\n", 9),
        ]);
        assert_eq!(
            events,
            vec![("a".into(), 1), ("b".into(), 1), ("c".into(), 9)]
        );
    }

    #[test]
    fn comments_and_other_fields_are_skipped_and_data_lines_joined() {
        let events = split(&[(": ping\n\nevent: x\nid: 3\ndata: one\ndata:two\n\n", 2)]);
        assert_eq!(events, vec![("one\ntwo".into(), 2)]);
    }

    #[test]
    fn an_unterminated_last_event_is_delivered() {
        let events = split(&[("data: [DONE]", 4)]);
        assert_eq!(events, vec![("[DONE]".into(), 4)]);
    }
}
