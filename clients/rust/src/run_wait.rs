//! `wait_for_async_run` (spec "Run-wait contract"):
//! subscribe STDOUT,EXIT,REMOVED → backfill output from position 0 → dedupe STDOUT by byte
//! position → wait for EXIT / REMOVED / `__disconnected__` / the caller timeout → clean up
//! (unsubscribe unless the transport is dead; delete the run app only after an observed exit).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::client::SvcClient;
use crate::error::{Result, SvcError};
use crate::models::{AppEvent, AppRun, OutputHandler, EVENT_TYPE_DISCONNECTED};

/// Output delivered so far, deduplicated by byte position.
struct OutputCursor {
    next: u64,
    handler: OutputHandler,
}

impl OutputCursor {
    /// Delivers the part of `text` (starting at byte `position`) not delivered yet.
    fn offer(&mut self, text: &str, position: u64) {
        let end = position + text.len() as u64;
        if end <= self.next {
            return;
        }
        let skip = self.next.saturating_sub(position) as usize;
        let fresh = text.get(skip..).unwrap_or_else(|| &text[text.len()..]);
        let start = position.max(self.next);
        self.next = end;
        if let Some(handler) = &self.handler {
            if !fresh.is_empty() {
                handler(fresh, start);
            }
        }
    }
}

enum Outcome {
    Exited(i32),
    Removed,
    Disconnected,
    TimedOut,
}

impl SvcClient {
    /// Waits for a run started by `run_app_async`: its exit code (negative for a signal: not an
    /// error), `None` when `timeout` passes first, `SvcError::AppRemoved` when the app is removed
    /// before it exits, `SvcError::TransportDisconnected` when the persistent transport drops.
    /// Output goes to `stdout_handler` once per byte. Over REST it long-polls the output instead
    /// of subscribing.
    pub async fn wait_for_async_run(
        &self,
        run: &AppRun,
        stdout_handler: OutputHandler,
        timeout: Duration,
    ) -> Result<Option<i32>> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut cursor = OutputCursor {
            next: 0,
            handler: stdout_handler,
        };
        if self.transport_name() == "REST" {
            return self.poll_run(run, &mut cursor, deadline).await;
        }
        let (tx, mut events) = mpsc::unbounded_channel::<AppEvent>();
        let callback = Arc::new(move |event: AppEvent| {
            let _ = tx.send(event);
        });
        let subscription = self
            .subscribe(&run.name, Some(&["STDOUT", "EXIT", "REMOVED"]), Some(callback))
            .await?;
        let outcome = match self.backfill(run, &mut cursor).await {
            Ok(Some(code)) => Outcome::Exited(code),
            Ok(None) => self.await_outcome(&mut events, &mut cursor, deadline).await,
            Err(SvcError::TransportDisconnected) => Outcome::Disconnected,
            Err(e) if e.code().is_some_and(|c| c.as_str() == "app_not_found") => Outcome::Removed,
            Err(e) => {
                let _ = self.unsubscribe(&subscription.subscription_id).await;
                return Err(e);
            }
        };
        match outcome {
            Outcome::Disconnected => Err(SvcError::TransportDisconnected),
            Outcome::Removed => {
                let _ = self.unsubscribe(&subscription.subscription_id).await;
                Err(SvcError::AppRemoved)
            }
            Outcome::TimedOut => {
                let _ = self.unsubscribe(&subscription.subscription_id).await;
                Ok(None)
            }
            Outcome::Exited(code) => {
                let _ = self.unsubscribe(&subscription.subscription_id).await;
                let _ = self.delete_app(&run.name).await;
                Ok(Some(code))
            }
        }
    }

    /// Reads output from the cursor until no new bytes; the exit code if the process exited.
    async fn backfill(&self, run: &AppRun, cursor: &mut OutputCursor) -> Result<Option<i32>> {
        loop {
            let out = self
                .get_app_output(&run.name, cursor.next, None, None, Some(&run.process_uuid), None)
                .await?;
            let before = cursor.next;
            cursor.offer(&out.output, before);
            if let Some(position) = out.output_position {
                cursor.next = cursor.next.max(position);
            }
            if out.exit_code.is_some() {
                return Ok(out.exit_code);
            }
            if out.output.is_empty() || cursor.next == before {
                return Ok(None);
            }
        }
    }

    async fn await_outcome(
        &self,
        events: &mut mpsc::UnboundedReceiver<AppEvent>,
        cursor: &mut OutputCursor,
        deadline: tokio::time::Instant,
    ) -> Outcome {
        loop {
            let event = tokio::select! {
                event = events.recv() => event,
                _ = tokio::time::sleep_until(deadline) => return Outcome::TimedOut,
            };
            let Some(event) = event else {
                return Outcome::Disconnected;
            };
            match event.event_type.as_str() {
                "STDOUT" => {
                    let text = event.data.get("output").and_then(|v| v.as_str()).unwrap_or("");
                    let position = event
                        .data
                        .get("position")
                        .and_then(|v| v.as_u64())
                        .unwrap_or(cursor.next);
                    cursor.offer(text, position);
                }
                "EXIT" => {
                    let code = event.data.get("exit_code").and_then(|v| v.as_i64()).unwrap_or(0);
                    return Outcome::Exited(code as i32);
                }
                "REMOVED" => return Outcome::Removed,
                EVENT_TYPE_DISCONNECTED => return Outcome::Disconnected,
                _ => {}
            }
        }
    }

    /// REST: long-poll the output until the exit code appears or the deadline passes.
    async fn poll_run(
        &self,
        run: &AppRun,
        cursor: &mut OutputCursor,
        deadline: tokio::time::Instant,
    ) -> Result<Option<i32>> {
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            let wait = left.as_secs().clamp(1, 5) as u32;
            let polled = self.get_app_output(&run.name, cursor.next, None, None, Some(&run.process_uuid), Some(wait));
            let out = match tokio::time::timeout_at(deadline, polled).await {
                Err(_) => return Ok(None),
                Ok(Err(e)) if e.code().is_some_and(|c| c.as_str() == "app_not_found") => {
                    return Err(SvcError::AppRemoved)
                }
                Ok(result) => result?,
            };
            let before = cursor.next;
            cursor.offer(&out.output, before);
            if let Some(position) = out.output_position {
                cursor.next = cursor.next.max(position);
            }
            if let Some(code) = out.exit_code {
                let _ = self.delete_app(&run.name).await;
                return Ok(Some(code));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn output_cursor_delivers_each_byte_once() {
        let seen = Arc::new(Mutex::new(String::new()));
        let sink = seen.clone();
        let mut cursor = OutputCursor {
            next: 0,
            handler: Some(Arc::new(move |text: &str, _| sink.lock().unwrap().push_str(text))),
        };
        cursor.offer("abc", 0);
        cursor.offer("bcd", 1);
        cursor.offer("abcd", 0);
        cursor.offer("ef", 4);
        assert_eq!(*seen.lock().unwrap(), "abcdef");
        assert_eq!(cursor.next, 6);
    }
}
