//! The least HTTP/1.1 request parsing the fake needs: a head ending in a blank line, then a
//! body of `Content-Length` bytes (keep-alive, no chunked request bodies).

/// A complete request at the front of the read buffer.
pub struct Request {
    /// Bytes the request takes up (head and body).
    pub len: usize,
    /// Whitespace words of the prompt (or of every message's content), reported as usage.
    pub prompt_tokens: u64,
}

/// Parses the request at the front of `buf`: `Ok(None)` while it is incomplete.
pub fn parse(buf: &[u8]) -> Result<Option<Request>, String> {
    let Some(head_end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = std::str::from_utf8(&buf[..head_end])
        .map_err(|_| "request head is not UTF-8".to_string())?;
    let mut length = 0;
    for line in head.split("\r\n").skip(1) {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value
                .trim()
                .parse()
                .map_err(|_| format!("bad Content-Length `{}`", value.trim()))?;
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err("chunked request bodies are not supported".into());
        }
    }
    let start = head_end + 4;
    let end = start + length;
    if buf.len() < end {
        return Ok(None);
    }
    Ok(Some(Request {
        len: end,
        prompt_tokens: prompt_words(&buf[start..end]),
    }))
}

fn prompt_words(body: &[u8]) -> u64 {
    let request: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let words = |v: &serde_json::Value| v.as_str().map_or(0, |s| s.split_whitespace().count());
    let messages = request["messages"].as_array().into_iter().flatten();
    (words(&request["prompt"]) + messages.map(|m| words(&m["content"])).sum::<usize>()) as u64
}
