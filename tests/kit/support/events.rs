//! Response bodies of the fake server: SSE events (or one JSON body) released at absolute
//! times after the request arrived.

use super::{FakeConfig, Fault, UsageMode};
use axum::body::Bytes;
use hyper::body::{Body, Frame};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};
use tokio::time::Sleep;

const CHAT_ROLE: &str = "data: {\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n";
const CHAT_TOKEN: &str = "data: {\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok\"},\"finish_reason\":null}]}\n\n";
const CHAT_FINISH: &str = "data: {\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n";
const TEXT_TOKEN: &str = "data: {\"id\":\"cmpl-fake\",\"object\":\"text_completion\",\"created\":0,\"model\":\"fake\",\"choices\":[{\"index\":0,\"text\":\" tok\",\"finish_reason\":null}]}\n\n";
const CHAT_SILENT: &str = "data: {\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":null}]}\n\n";
const TEXT_SILENT: &str = "data: {\"id\":\"cmpl-fake\",\"object\":\"text_completion\",\"created\":0,\"model\":\"fake\",\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":null}]}\n\n";
const TEXT_FINISH: &str = "data: {\"id\":\"cmpl-fake\",\"object\":\"text_completion\",\"created\":0,\"model\":\"fake\",\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n";
const MALFORMED: &str = "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}\n\n";
const FAULT_DELAY: Duration = Duration::from_millis(50);
const DONE: &str = "data: [DONE]\n\n";

/// Which endpoint was called.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Api {
    Chat,
    Completions,
}

/// What one response holds.
pub struct Plan {
    /// When the request arrived: every step is timed from here.
    pub arrived: Instant,
    /// Where the delivered TTFT (from the request's arrival to the first token being handed
    /// to the connection) gets logged.
    pub first_token_log: Arc<Mutex<Vec<Duration>>>,
    pub api: Api,
    /// Delay between this response's tokens.
    pub itl: Duration,
    pub tokens: u32,
    pub prompt_tokens: u64,
    pub fault: Fault,
    /// Tokens stream as empty text.
    pub silent: bool,
}

/// Whitespace words of the prompt (or of every message's content).
pub fn prompt_words(request: &serde_json::Value) -> u64 {
    let words = |v: &serde_json::Value| v.as_str().map_or(0, |s| s.split_whitespace().count());
    let messages = request["messages"].as_array().into_iter().flatten();
    (words(&request["prompt"]) + messages.map(|m| words(&m["content"])).sum::<usize>()) as u64
}

fn usage(plan: &Plan) -> Bytes {
    Bytes::from(format!(
        "data: {{\"id\":\"fake\",\"choices\":[],\"usage\":{{\"prompt_tokens\":{},\"completion_tokens\":{},\"total_tokens\":{}}}}}\n\n",
        plan.prompt_tokens,
        plan.tokens,
        plan.prompt_tokens + u64::from(plan.tokens)
    ))
}

enum Step {
    Send(Bytes),
    Cut,
    Stall,
}

/// A streamed response.
pub struct EventBody {
    steps: Vec<(Duration, Step)>,
    next: usize,
    reached: Duration,
    start: Instant,
    waiting_for: Option<Instant>,
    stalled: bool,
    first_token: Option<(usize, Arc<Mutex<Vec<Duration>>>)>,
}

impl EventBody {
    pub fn new(config: &FakeConfig, plan: Plan) -> Self {
        let (token, finish) = match (plan.api, plan.silent) {
            (Api::Chat, false) => (CHAT_TOKEN, CHAT_FINISH),
            (Api::Chat, true) => (CHAT_SILENT, CHAT_FINISH),
            (Api::Completions, false) => (TEXT_TOKEN, TEXT_FINISH),
            (Api::Completions, true) => (TEXT_SILENT, TEXT_FINISH),
        };
        let mut steps = Vec::with_capacity(plan.tokens as usize + 4);
        if config.role_chunk && plan.api == Api::Chat {
            steps.push((
                Duration::ZERO,
                Step::Send(Bytes::from_static(CHAT_ROLE.as_bytes())),
            ));
        }
        let first_token = (plan.tokens > 0).then(|| (steps.len(), plan.first_token_log.clone()));
        for i in 0..plan.tokens {
            let at = config.ttft + plan.itl * i;
            let broken = match plan.fault {
                Fault::DisconnectAfter(k) if k == i => Some(Step::Cut),
                Fault::StallAfter(k) if k == i => Some(Step::Stall),
                Fault::MalformedAfter(k) if k == i => {
                    Some(Step::Send(Bytes::from_static(MALFORMED.as_bytes())))
                }
                _ => None,
            };
            if let Some(step) = broken {
                // Late enough that the tokens before it are flushed first.
                steps.push((at + FAULT_DELAY, step));
                return Self::with_steps(steps, plan.arrived, first_token);
            }
            steps.push((at, Step::Send(Bytes::from_static(token.as_bytes()))));
        }
        let last = config.ttft + plan.itl * plan.tokens.saturating_sub(1);
        steps.push((last, Step::Send(Bytes::from_static(finish.as_bytes()))));
        let end = match config.usage {
            UsageMode::Omit => last,
            UsageMode::AtEnd => {
                steps.push((last, Step::Send(usage(&plan))));
                last
            }
            UsageMode::Late(delay) => {
                steps.push((last + delay, Step::Send(usage(&plan))));
                last + delay
            }
        };
        steps.push((end, Step::Send(Bytes::from_static(DONE.as_bytes()))));
        Self::with_steps(steps, plan.arrived, first_token)
    }

    fn with_steps(
        steps: Vec<(Duration, Step)>,
        start: Instant,
        first_token: Option<(usize, Arc<Mutex<Vec<Duration>>>)>,
    ) -> Self {
        EventBody {
            steps,
            next: 0,
            reached: Duration::ZERO,
            start,
            waiting_for: None,
            stalled: false,
            first_token,
        }
    }
}

impl Body for EventBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if this.stalled {
            return Poll::Pending;
        }
        let Some((offset, _)) = this.steps.get(this.next) else {
            return Poll::Ready(None);
        };
        if *offset > this.reached {
            let deadline = this.start + *offset;
            if Instant::now() < deadline {
                if this.waiting_for != Some(deadline) {
                    this.waiting_for = Some(deadline);
                    super::clock::wake_at(deadline, cx.waker());
                }
                return Poll::Pending;
            }
            this.reached = *offset;
        }
        if let Some((_, log)) = this.first_token.as_ref().filter(|(i, _)| *i == this.next) {
            log.lock().unwrap().push(this.start.elapsed());
        }
        let step = &this.steps[this.next].1;
        this.next += 1;
        match step {
            Step::Send(bytes) => Poll::Ready(Some(Ok(Frame::data(bytes.clone())))),
            Step::Cut => Poll::Ready(Some(Err(std::io::Error::other("fake disconnect")))),
            Step::Stall => {
                this.stalled = true;
                Poll::Pending
            }
        }
    }
}

/// A non-streamed response, sent whole when the last token would have been.
pub struct WholeBody {
    body: Option<Bytes>,
    sleep: Pin<Box<Sleep>>,
}

impl WholeBody {
    pub fn new(config: &FakeConfig, plan: Plan) -> Self {
        let text = " tok".repeat(plan.tokens as usize);
        let choice = match plan.api {
            Api::Chat => {
                serde_json::json!({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"})
            }
            Api::Completions => {
                serde_json::json!({"index": 0, "text": text, "finish_reason": "length"})
            }
        };
        let body = serde_json::json!({
            "id": "fake",
            "choices": [choice],
            "usage": {"prompt_tokens": plan.prompt_tokens, "completion_tokens": plan.tokens},
        });
        let done = config.ttft + plan.itl * plan.tokens.saturating_sub(1);
        WholeBody {
            body: Some(Bytes::from(body.to_string())),
            sleep: Box::pin(tokio::time::sleep_until((plan.arrived + done).into())),
        }
    }
}

impl Body for WholeBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        ready!(self.sleep.as_mut().poll(cx));
        Poll::Ready(self.body.take().map(|b| Ok(Frame::data(b))))
    }
}
