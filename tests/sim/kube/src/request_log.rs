//! A record of the requests the server answered, in the order it answered them, with who made each (the
//! authenticated user) and the status it got: what an audit log gives a real cluster's operator. Tests read it to
//! check properties across clients, such as two operator replicas never both writing.

use std::collections::VecDeque;
use std::sync::Mutex;

/// One answered request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    /// Order of answering, from 1.
    pub seq: u64,
    pub user: String,
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    pub status: u16,
}

impl RequestRecord {
    /// A create, update, patch or delete (of one object or a collection).
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
    }

    pub fn succeeded(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// The most recent requests (older ones are dropped past the capacity).
#[derive(Debug)]
pub struct RequestLog {
    inner: Mutex<Inner>,
    capacity: usize,
}

#[derive(Debug, Default)]
struct Inner {
    records: VecDeque<RequestRecord>,
    next: u64,
}

impl Default for RequestLog {
    fn default() -> Self {
        RequestLog {
            inner: Mutex::default(),
            capacity: 200_000,
        }
    }
}

impl RequestLog {
    /// Records a request; its `seq` is assigned here.
    pub fn record(&self, mut r: RequestRecord) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.next += 1;
        r.seq = inner.next;
        if inner.records.len() >= self.capacity {
            inner.records.pop_front();
        }
        inner.records.push_back(r);
    }

    /// The records numbered after `seq`, oldest first.
    pub fn records_since(&self, seq: u64) -> Vec<RequestRecord> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        // Sequence numbers are consecutive, so the first wanted record's position follows from the oldest kept.
        let oldest = inner.records.front().map_or(0, |r| r.seq);
        let skip = (seq + 1).saturating_sub(oldest.max(1)) as usize;
        inner.records.iter().skip(skip).cloned().collect()
    }

    pub fn records(&self) -> Vec<RequestRecord> {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .records
            .iter()
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str) -> RequestRecord {
        RequestRecord {
            seq: 0,
            user: "u".into(),
            verb: "get".into(),
            group: String::new(),
            resource: "configmaps".into(),
            subresource: String::new(),
            namespace: "default".into(),
            name: name.into(),
            status: 200,
        }
    }

    #[test]
    fn records_since_follows_the_log_past_its_capacity() {
        let log = RequestLog {
            capacity: 3,
            ..RequestLog::default()
        };
        assert!(log.records_since(0).is_empty());
        for i in 0..5 {
            log.record(record(&format!("o{i}")));
        }
        // Kept: 3, 4, 5.
        let names =
            |since: u64| -> Vec<u64> { log.records_since(since).iter().map(|r| r.seq).collect() };
        assert_eq!(
            names(0),
            [3, 4, 5],
            "older ones are gone; what is kept comes back"
        );
        assert_eq!(names(3), [4, 5]);
        assert_eq!(names(4), [5]);
        assert_eq!(names(5), Vec::<u64>::new());
        assert_eq!(names(9), Vec::<u64>::new());
        assert_eq!(log.records_since(4)[0].name, "o4");
    }
}
