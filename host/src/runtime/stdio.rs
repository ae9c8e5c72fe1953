//! The guest's stdout and stderr: captured into bounded in-memory buffers (deny-all WASI inherits nothing
//! from the host process) and turned into log lines tagged with the plugin's name after each call.
//!
//! wasmtime-wasi's `MemoryOutputPipe` traps the guest when full; a chatty plugin must lose output, not its
//! call, so this pipe drops what does not fit and counts it.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use crate::contract::{LogLevel, LogLine, LogSource};

/// How much the guest may write per `write` call; it is always ready for more.
const WRITE_BUDGET: usize = 64 * 1024;

#[derive(Clone)]
pub(crate) struct CapturePipe {
    buffer: Arc<Mutex<Captured>>,
}

#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    capacity: usize,
    dropped: usize,
}

impl Captured {
    fn append(&mut self, data: &[u8]) {
        let room = self.capacity.saturating_sub(self.bytes.len());
        let kept = data.len().min(room);
        self.bytes.extend_from_slice(&data[..kept]);
        self.dropped += data.len() - kept;
    }
}

impl CapturePipe {
    pub(crate) fn new(capacity: usize) -> Self {
        CapturePipe {
            buffer: Arc::new(Mutex::new(Captured {
                capacity,
                ..Captured::default()
            })),
        }
    }

    fn append(&self, data: &[u8]) {
        self.buffer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .append(data);
    }

    /// The captured text as log lines (`Info` for stdout, `Warn` for stderr), plus the count of dropped bytes.
    pub(crate) fn lines(&self, source: LogSource) -> (Vec<LogLine>, usize) {
        let captured = self.buffer.lock().unwrap_or_else(PoisonError::into_inner);
        let level = if source == LogSource::Stderr {
            LogLevel::Warn
        } else {
            LogLevel::Info
        };
        let lines = String::from_utf8_lossy(&captured.bytes)
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| LogLine {
                source,
                level,
                message: line.to_owned(),
                fields: Vec::new(),
            })
            .collect();
        (lines, captured.dropped)
    }

    /// The last `max` bytes, for error messages (a Rust panic message lands on stderr).
    pub(crate) fn tail(&self, max: usize) -> String {
        let captured = self.buffer.lock().unwrap_or_else(PoisonError::into_inner);
        let start = captured.bytes.len().saturating_sub(max);
        String::from_utf8_lossy(&captured.bytes[start..])
            .trim()
            .to_owned()
    }
}

impl IsTerminal for CapturePipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CapturePipe {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl OutputStream for CapturePipe {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.append(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_BUDGET)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CapturePipe {
    async fn ready(&mut self) {}
}

impl AsyncWrite for CapturePipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.append(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_up_to_capacity_and_counts_the_rest() {
        let mut pipe = CapturePipe::new(8);
        pipe.write(Bytes::from_static(b"hello\n")).unwrap();
        pipe.write(Bytes::from_static(b"world\n")).unwrap();
        let (lines, dropped) = pipe.lines(LogSource::Stdout);
        let text: Vec<_> = lines.iter().map(|l| l.message.as_str()).collect();
        assert_eq!(text, ["hello", "wo"]);
        assert_eq!(dropped, 4);
        assert_eq!(
            pipe.check_write().unwrap(),
            WRITE_BUDGET,
            "a full pipe never refuses a write"
        );
    }
}
