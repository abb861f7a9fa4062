//! The engine task of `sim serve`: the simulated engine stepped in real time (modelled step
//! durations × time scale), fed by HTTP handlers through a channel.

use super::prom::Counters;
use crate::sim::cache::Content;
use crate::sim::core::SimEngine;
use crate::sim::scheduler::Event;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// What a handler receives for its request.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum StreamEvent {
    /// One output token.
    Token,
    /// All tokens generated.
    Finished,
    /// The engine refused or dropped the request.
    Rejected(String),
}

/// Requests to the engine task.
#[derive(Debug)]
pub enum Command {
    /// Queue a request; its events go to `events`.
    Add {
        /// Request id (unique per server).
        id: u64,
        /// Prompt tokens.
        prompt: u32,
        /// What the prompt is made of.
        content: Content,
        /// Tokens to generate.
        output: u32,
        /// Where tokens go.
        events: mpsc::UnboundedSender<StreamEvent>,
    },
    /// The client went away.
    Abort {
        /// Request id.
        id: u64,
    },
}

/// Run the engine until every command sender is dropped.
pub async fn run(
    mut engine: SimEngine,
    mut commands: mpsc::UnboundedReceiver<Command>,
    time_scale: f64,
    counters: Arc<Mutex<Counters>>,
) {
    let mut streams: HashMap<u64, mpsc::UnboundedSender<StreamEvent>> = HashMap::new();
    let mut events = Vec::new();
    let mut deadline = Instant::now();
    let mut idle_energy = 0.0;
    {
        let mut c = lock(&counters);
        c.power.cards = engine.config().tp;
        c.power.time_scale = time_scale;
    }
    loop {
        while let Ok(cmd) = commands.try_recv() {
            apply(&mut engine, &mut streams, &counters, cmd);
        }
        if engine.is_idle() {
            publish(&engine, &counters);
            let idle_w = engine.power().idle_w;
            let since = std::time::Instant::now();
            lock(&counters).power.idle = Some((since, idle_w, time_scale));
            let cmd = commands.recv().await;
            idle_energy += idle_w * since.elapsed().as_secs_f64() / time_scale;
            {
                let mut c = lock(&counters);
                c.power.energy_j = engine.busy_energy_j() + idle_energy;
                c.power.idle = None;
            }
            match cmd {
                Some(cmd) => apply(&mut engine, &mut streams, &counters, cmd),
                None => return,
            }
            deadline = Instant::now();
            continue;
        }
        let busy_before = engine.busy_energy_j();
        let Some(seconds) = engine.step(&mut events) else {
            dispatch(&mut engine, &mut streams, &counters, &mut events);
            continue;
        };
        {
            let mut c = lock(&counters);
            c.power.energy_j = engine.busy_energy_j() + idle_energy;
            c.power.watts = (engine.busy_energy_j() - busy_before) / seconds.max(f64::MIN_POSITIVE);
        }
        deadline = deadline.max(Instant::now()) + Duration::from_secs_f64(seconds * time_scale);
        tokio::time::sleep_until(deadline).await;
        dispatch(&mut engine, &mut streams, &counters, &mut events);
        publish(&engine, &counters);
    }
}

fn apply(
    engine: &mut SimEngine,
    streams: &mut HashMap<u64, mpsc::UnboundedSender<StreamEvent>>,
    counters: &Mutex<Counters>,
    cmd: Command,
) {
    match cmd {
        Command::Add {
            id,
            prompt,
            content,
            output,
            events,
        } => match engine.add(id, prompt, output, &content) {
            Ok(()) => {
                lock(counters).prompt_tokens += u64::from(prompt);
                streams.insert(id, events);
            }
            Err(reason) => {
                // The handler may already be gone; nothing to tell then.
                let _ = events.send(StreamEvent::Rejected(reason));
            }
        },
        Command::Abort { id } => {
            if streams.remove(&id).is_some() {
                engine.abort(id);
                lock(counters).aborted += 1;
            }
        }
    }
}

fn dispatch(
    engine: &mut SimEngine,
    streams: &mut HashMap<u64, mpsc::UnboundedSender<StreamEvent>>,
    counters: &Mutex<Counters>,
    events: &mut Vec<Event>,
) {
    let mut c = lock(counters);
    for event in events.drain(..) {
        let (id, message, last) = match event {
            Event::Token { id, .. } => {
                c.generation_tokens += 1;
                (id, StreamEvent::Token, false)
            }
            Event::Finished { id } => {
                c.finished += 1;
                (id, StreamEvent::Finished, true)
            }
            Event::Rejected { id, reason } => (id, StreamEvent::Rejected(reason), true),
        };
        let gone = match streams.get(&id) {
            Some(tx) => tx.send(message).is_err(),
            None => false,
        };
        if last {
            streams.remove(&id);
        } else if gone {
            streams.remove(&id);
            engine.abort(id);
            c.aborted += 1;
        }
    }
}

fn publish(engine: &SimEngine, counters: &Mutex<Counters>) {
    let mut c = lock(counters);
    c.gauges = engine.gauges();
    if engine.is_idle() {
        c.power.watts = engine.power().idle_w;
    }
}

fn lock(counters: &Mutex<Counters>) -> std::sync::MutexGuard<'_, Counters> {
    // A poisoned lock only means a handler panicked mid-update; the counters stay usable.
    counters.lock().unwrap_or_else(|e| e.into_inner())
}
