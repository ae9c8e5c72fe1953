//! PATCH bodies for the three patch content types kube-apiserver accepts
//! besides server-side apply: JSON merge patch, JSON patch and strategic
//! merge patch.
//!
//! Clients compare what they get back byte for byte, and test suites assert
//! on quirks, so this module mirrors the code kube-apiserver 1.32 actually
//! runs rather than the RFCs:
//! - merge patch and JSON patch: `gopkg.in/evanphx/json-patch.v4` as vendored
//!   by kubernetes, called from
//!   `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go`
//!   (`applyJSPatch`);
//! - strategic merge patch: `k8s.io/apimachinery/pkg/util/strategicpatch`
//!   (`StrategicMergeMapPatch` and `mergeMap`), with the errors mapped to HTTP
//!   codes by `interpretStrategicMergePatchError` in the same handler.
//!
//! Where Go would panic (for example comparing two maps with `==`), the
//! apiserver's panic filter answers 500 with a fixed text; we return that as a
//! [`PatchError`] instead of panicking.

use std::fmt;

use crate::gofmt::{float as go_float, quote as go_quote};
use serde_json::{Map, Value};

/// The message `NewGenericServerResponse(422, ...)` puts in the Status. The
/// apiserver wraps every JSON patch apply failure (and a few strategic merge
/// patch failures) this way, which throws the concrete error text away: real
/// clients only ever see this sentence.
pub const GENERIC_INVALID_MESSAGE: &str =
    "the server rejected our request due to an error in our request";

/// What `WithPanicRecovery` writes (as text/plain, not a Status) when a
/// handler panics.
pub const APISERVER_PANIC_MESSAGE: &str =
    "This request caused apiserver to panic. Look in the logs for details.";

/// The most bytes a JSON patch's `copy` operations may add in total: kube-apiserver sets evanphx's
/// `AccumulatedCopySizeLimit` to its `JSONPatchMaxCopyBytes`, 3 MiB by default. Without it a patch of a few
/// dozen copies doubles the object each time.
pub const MAX_JSON_PATCH_COPY_BYTES: u64 = 3 * 1024 * 1024;

/// `maxJSONPatchOperations` in the apiserver's patch handler.
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10000;

/// Our own recursion guard, in JSON nesting levels. serde_json refuses to
/// parse documents nested more than 128 levels, so real requests never get
/// past it; it only protects the stack from values built in code.
const MAX_DEPTH: usize = 128;

/// Nested strategic merges cost several large stack frames each; this keeps
/// the worst case (lists of maps inside lists of maps) inside half of a 2 MiB
/// thread stack even in debug builds, and no JSON serde_json accepts (at most
/// 128 levels) reaches it.
const MAX_MERGE_DEPTH: usize = 128;

const DIRECTIVE_MARKER: &str = "$patch";
const DELETE_DIRECTIVE: &str = "delete";
const REPLACE_DIRECTIVE: &str = "replace";
const MERGE_DIRECTIVE: &str = "merge";
const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";

const ERR_BAD_PATCH_FORMAT_FOR_PRIMITIVE_LIST: &str = "invalid patch format of primitive list";
const ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS: &str = "invalid patch format of retainKeys";
const ERR_BAD_PATCH_FORMAT_FOR_SET_ELEMENT_ORDER: &str =
    "invalid patch format of setElementOrder list";

const GO_MAP_TYPE: &str = "map[string]interface {}";
const GO_SLICE_TYPE: &str = "[]interface {}";

/// An error applying a patch, carrying the HTTP status the real API server uses for it.
#[derive(Debug, Clone, PartialEq)]
pub struct PatchError {
    pub status: u16,
    pub message: String,
}

impl PatchError {
    fn new(status: u16, message: impl Into<String>) -> Self {
        PatchError {
            status,
            message: message.into(),
        }
    }

    /// `errors.NewBadRequest(msg)`.
    fn bad_request(message: impl Into<String>) -> Self {
        PatchError::new(400, message)
    }

    /// `errors.NewGenericServerResponse(422, "", GroupResource{}, "", err, 0, false)`:
    /// the concrete error is dropped, see [`GENERIC_INVALID_MESSAGE`].
    fn generic_invalid() -> Self {
        PatchError::new(422, GENERIC_INVALID_MESSAGE)
    }

    /// A plain Go error reaching `ErrorToAPIStatus`: 500 with no reason.
    fn internal(message: impl Into<String>) -> Self {
        PatchError::new(500, message)
    }

    /// What the apiserver answers when the Go code panics on this input.
    fn go_panic() -> Self {
        PatchError::new(500, APISERVER_PANIC_MESSAGE)
    }

    /// The `reason` field of the Status the apiserver sends for this error
    /// ("" when it sends none).
    pub fn reason(&self) -> &'static str {
        match self.status {
            400 => "BadRequest",
            413 => "RequestEntityTooLarge",
            415 => "UnsupportedMediaType",
            422 => "Invalid",
            _ => "",
        }
    }

    /// True when the real server would have panicked and answered with a
    /// text/plain body ([`APISERVER_PANIC_MESSAGE`]) instead of a Status.
    pub fn is_apiserver_panic(&self) -> bool {
        self.status == 500 && self.message == APISERVER_PANIC_MESSAGE
    }

    /// The metav1.Status body the apiserver sends for this error, with its
    /// field order. Only the 422 from `NewGenericServerResponse` carries an
    /// (empty) `details` object.
    pub fn to_status(&self) -> Value {
        let mut m = Map::new();
        m.insert("kind".into(), Value::from("Status"));
        m.insert("apiVersion".into(), Value::from("v1"));
        m.insert("metadata".into(), Value::Object(Map::new()));
        m.insert("status".into(), Value::from("Failure"));
        m.insert("message".into(), Value::from(self.message.clone()));
        let reason = self.reason();
        if !reason.is_empty() {
            m.insert("reason".into(), Value::from(reason));
        }
        if self.status == 422 {
            m.insert("details".into(), Value::Object(Map::new()));
        }
        m.insert("code".into(), Value::from(self.status));
        Value::Object(m)
    }
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.status)
    }
}

impl std::error::Error for PatchError {}

/// The 415 the apiserver answers when the Content-Type is not among the patch
/// types the resource accepts (`negotiation.NewUnsupportedMediaTypeError`).
/// For custom resources `accepted` is
/// `["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"]`.
pub fn unsupported_patch_type(accepted: &[&str]) -> PatchError {
    PatchError::new(
        415,
        format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            accepted.join(", ")
        ),
    )
}

// ---------------------------------------------------------------------------
// JSON merge patch
// ---------------------------------------------------------------------------

/// RFC 7386 JSON merge patch (application/merge-patch+json).
///
/// Follows evanphx/json-patch v4 where it departs from the RFC: nulls are also
/// pruned from objects nested inside arrays of newly added values, while null
/// array elements are kept; a patch object meeting a non-object value replaces
/// it with the (null-pruned) patch; a non-object value meeting an existing
/// object replaces it unpruned.
pub fn merge_patch(target: &Value, patch: &Value) -> Value {
    match patch {
        Value::Object(p) => {
            let mut doc = match target {
                Value::Object(m) => m.clone(),
                _ => Map::new(),
            };
            merge_docs(&mut doc, p, 0);
            Value::Object(doc)
        }
        other => pruned(other, 0),
    }
}

/// [`merge_patch`] plus the checks the apiserver's handler makes on the body
/// first (with the default `fieldValidation=Warn`, the body is decoded into a
/// `map[string]interface{}` before evanphx sees it).
pub fn merge_patch_request(target: &Value, patch: &Value) -> Result<Value, PatchError> {
    match patch {
        Value::Object(_) => Ok(merge_patch(target, patch)),
        // Decoding `null` into a map succeeds; evanphx then rejects it.
        Value::Null => Err(PatchError::bad_request("Invalid JSON Patch")),
        other => Err(PatchError::bad_request(format!(
            "error decoding patch: json: cannot unmarshal {} into Go value of type {GO_MAP_TYPE}",
            json_kind(other)
        ))),
    }
}

fn merge_docs(doc: &mut Map<String, Value>, patch: &Map<String, Value>, depth: usize) {
    for (k, v) in patch {
        if v.is_null() {
            doc.shift_remove(k);
            continue;
        }
        match doc.get_mut(k) {
            Some(cur) if !cur.is_null() => {
                let merged = merge_node(cur, v, depth + 1);
                *cur = merged;
            }
            _ => {
                doc.insert(k.clone(), pruned(v, depth + 1));
            }
        }
    }
}

fn merge_node(cur: &mut Value, patch: &Value, depth: usize) -> Value {
    let Value::Object(cur_map) = cur else {
        return pruned(patch, depth);
    };
    let Value::Object(patch_map) = patch else {
        return patch.clone();
    };
    if depth > MAX_DEPTH {
        return patch.clone();
    }
    let mut merged = std::mem::take(cur_map);
    merge_docs(&mut merged, patch_map, depth);
    Value::Object(merged)
}

fn pruned(v: &Value, depth: usize) -> Value {
    if depth > MAX_DEPTH {
        return v.clone();
    }
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), pruned(v, depth + 1)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|v| pruned(v, depth + 1)).collect()),
        other => other.clone(),
    }
}

// ---------------------------------------------------------------------------
// JSON patch
// ---------------------------------------------------------------------------

/// RFC 6902 JSON patch (application/json-patch+json): add, remove, replace, move, copy, test; RFC 6901 pointers with ~0/~1 escapes and "-" for append.
///
/// Body problems are 400 (the handler decodes the body into
/// `[]handlers.jsonPatchOp` first), more than 10000 operations is 413, and
/// every failure while applying is the generic 422 (see
/// [`GENERIC_INVALID_MESSAGE`]); [`apply_json_patch_ops`] gives the concrete
/// evanphx error text for logs.
pub fn json_patch(target: &Value, ops: &Value) -> Result<Value, PatchError> {
    let ops = decode_json_patch(ops)?;
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::new(
            413,
            format!(
                "Request entity too large: The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                ops.len()
            ),
        ));
    }
    apply_ops(target, ops).map_err(|failure| match failure {
        ApplyFailure::Error(_) => PatchError::generic_invalid(),
        ApplyFailure::Panic(_) => PatchError::go_panic(),
    })
}

/// Applies already-decoded JSON patch operations the way evanphx/json-patch
/// v4 `Patch.Apply` does, returning its error text on failure (the text the
/// apiserver logs but does not send).
pub fn apply_json_patch_ops(target: &Value, ops: &[Value]) -> Result<Value, String> {
    apply_ops(target, ops).map_err(|failure| match failure {
        ApplyFailure::Error(e) | ApplyFailure::Panic(e) => e,
    })
}

enum ApplyFailure {
    Error(String),
    /// Inputs on which the Go code dereferences nil.
    Panic(String),
}

impl From<String> for ApplyFailure {
    fn from(e: String) -> Self {
        ApplyFailure::Error(e)
    }
}

const NIL_DEREFERENCE: &str = "runtime error: invalid memory address or nil pointer dereference";

/// Mirrors the strict decode into `[]jsonPatchOp` the handler does under the
/// default `fieldValidation=Warn`, including Go's error texts (the first type
/// error in document order wins).
fn decode_json_patch(ops: &Value) -> Result<&[Value], PatchError> {
    let items = match ops {
        // A null slice decodes fine and applies nothing.
        Value::Null => return Ok(&[]),
        Value::Array(items) => items,
        other => {
            return Err(PatchError::bad_request(format!(
                "error decoding patch: json: cannot unmarshal {} into Go value of type []handlers.jsonPatchOp",
                json_kind(other)
            )));
        }
    };
    for item in items {
        match item {
            Value::Null => {}
            Value::Object(fields) => {
                for (name, value) in fields {
                    let string_field = matches!(name.as_str(), "op" | "path" | "from");
                    if string_field && !matches!(value, Value::String(_) | Value::Null) {
                        return Err(PatchError::bad_request(format!(
                            "error decoding patch: json: cannot unmarshal {} into Go struct field jsonPatchOp.{name} of type string",
                            json_kind(value)
                        )));
                    }
                }
            }
            other => {
                return Err(PatchError::bad_request(format!(
                    "error decoding patch: json: cannot unmarshal {} into Go value of type handlers.jsonPatchOp",
                    json_kind(other)
                )));
            }
        }
    }
    Ok(items)
}

/// A JSON patch operation as evanphx sees it: a map of raw members, where a
/// member that is JSON null reads as absent for `op`, `path` and `from`.
struct Op<'a> {
    fields: Option<&'a Map<String, Value>>,
}

impl<'a> Op<'a> {
    fn kind(&self) -> &'a str {
        match self.fields.and_then(|m| m.get("op")) {
            Some(Value::String(s)) => s.as_str(),
            _ => "unknown",
        }
    }

    fn string_member(&self, name: &str, missing: &str) -> Result<String, String> {
        match self.fields.and_then(|m| m.get(name)) {
            Some(Value::String(s)) => Ok(s.clone()),
            None | Some(Value::Null) => Err(missing.to_string()),
            Some(other) => Err(format!(
                "json: cannot unmarshal {} into Go value of type string",
                json_kind(other)
            )),
        }
    }

    fn path(&self) -> Result<String, String> {
        self.string_member("path", "operation missing path field: missing value")
    }

    fn from(&self) -> Result<String, String> {
        self.string_member("from", "operation, missing from field: missing value")
    }

    /// `None` when the member is absent (evanphx's nil node), `Some(Null)`
    /// when it is JSON null (a node with a nil raw message).
    fn value(&self) -> Option<&'a Value> {
        self.fields.and_then(|m| m.get("value"))
    }

    /// The value a member-less or null `value` stores: JSON null.
    fn value_or_null(&self) -> Value {
        self.value().cloned().unwrap_or(Value::Null)
    }
}

#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

fn apply_ops(target: &Value, ops: &[Value]) -> Result<Value, ApplyFailure> {
    let mut doc = match target {
        Value::Object(_) | Value::Array(_) => target.clone(),
        other => {
            return Err(ApplyFailure::Error(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.partialDoc",
                json_kind(other)
            )));
        }
    };
    let mut copied = 0u64;
    for raw in ops {
        let op = Op {
            fields: raw.as_object(),
        };
        match op.kind() {
            "add" => op_add(&mut doc, &op)?,
            "remove" => op_remove(&mut doc, &op)?,
            "replace" => op_replace(&mut doc, &op)?,
            "move" => op_move(&mut doc, &op)?,
            "test" => op_test(&doc, &op)?,
            "copy" => op_copy(&mut doc, &op, &mut copied)?,
            other => return Err(ApplyFailure::Error(format!("Unexpected kind: {other}"))),
        }
    }
    Ok(doc)
}

fn op_add(doc: &mut Value, op: &Op<'_>) -> Result<(), ApplyFailure> {
    let path = op
        .path()
        .map_err(|_| "add operation failed to decode path: missing value".to_string())?;
    let (steps, key) = find_object(doc, &path).ok_or_else(|| {
        format!("add operation does not apply: doc is missing path: \"{path}\": missing value")
    })?;
    let con = resolve_mut(doc, &steps)?;
    container_add(con, &key, op.value_or_null())
        .map_err(|e| format!("error in add for path: '{path}': {e}"))?;
    Ok(())
}

fn op_remove(doc: &mut Value, op: &Op<'_>) -> Result<(), ApplyFailure> {
    let path = op
        .path()
        .map_err(|_| "remove operation failed to decode path: missing value".to_string())?;
    let (steps, key) = find_object(doc, &path).ok_or_else(|| {
        format!("remove operation does not apply: doc is missing path: \"{path}\": missing value")
    })?;
    let con = resolve_mut(doc, &steps)?;
    container_remove(con, &key).map_err(|e| format!("error in remove for path: '{path}': {e}"))?;
    Ok(())
}

fn op_replace(doc: &mut Value, op: &Op<'_>) -> Result<(), ApplyFailure> {
    let path = op
        .path()
        .map_err(|e| format!("replace operation failed to decode path: {e}"))?;
    if path.is_empty() {
        // v4 lets an empty path swap the whole document for an object or array.
        return match op.value() {
            None => Err(ApplyFailure::Panic(NIL_DEREFERENCE.to_string())),
            Some(v @ (Value::Object(_) | Value::Array(_))) => {
                *doc = v.clone();
                Ok(())
            }
            Some(_) => Err(ApplyFailure::Error(
                "replace operation value must be object or array: %!w(<nil>)".to_string(),
            )),
        };
    }
    let (steps, key) = find_object(doc, &path).ok_or_else(|| {
        format!("replace operation does not apply: doc is missing path: {path}: missing value")
    })?;
    let con = resolve_mut(doc, &steps)?;
    // An object "get" never fails in v4, so replacing a missing key adds it.
    container_get(con, &key).map_err(|_| {
        format!("replace operation does not apply: doc is missing key: {path}: missing value")
    })?;
    container_set(con, &key, op.value_or_null())
        .map_err(|e| format!("error in remove for path: '{path}': {e}"))?;
    Ok(())
}

fn op_move(doc: &mut Value, op: &Op<'_>) -> Result<(), ApplyFailure> {
    let from = op
        .from()
        .map_err(|e| format!("move operation failed to decode from: {e}"))?;
    let (steps, key) = find_object(doc, &from).ok_or_else(|| {
        format!("move operation does not apply: doc is missing from path: {from}: missing value")
    })?;
    let con = resolve_mut(doc, &steps)?;
    let val =
        container_get(con, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
    container_remove(con, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
    let path = op
        .path()
        .map_err(|e| format!("move operation failed to decode path: {e}"))?;
    let (steps, key) = find_object(doc, &path).ok_or_else(|| {
        format!(
            "move operation does not apply: doc is missing destination path: {path}: missing value"
        )
    })?;
    let con = resolve_mut(doc, &steps)?;
    container_add(con, &key, val.unwrap_or(Value::Null))
        .map_err(|e| format!("error in move for path: '{path}': {e}"))?;
    Ok(())
}

fn op_test(doc: &Value, op: &Op<'_>) -> Result<(), ApplyFailure> {
    let path = op
        .path()
        .map_err(|e| format!("test operation failed to decode path: {e}"))?;
    let failed = || ApplyFailure::Error(format!("testing value {path} failed: test failed"));
    if path.is_empty() {
        return match op.value() {
            None => Err(ApplyFailure::Panic(NIL_DEREFERENCE.to_string())),
            // A null raw message never equals a document.
            Some(Value::Null) => Err(failed()),
            Some(v) if v == doc => Ok(()),
            Some(_) => Err(failed()),
        };
    }
    let (steps, key) = find_object(doc, &path).ok_or_else(|| {
        format!("test operation does not apply: is missing path: {path}: missing value")
    })?;
    let con = resolve(doc, &steps)?;
    let val = container_get_ref(con, &key)
        .map_err(|e| format!("error in test for path: '{path}': {e}"))?;
    match (val, op.value()) {
        // A missing key and a JSON null are the same nil node to evanphx.
        (None, None | Some(Value::Null)) => Ok(()),
        (None, Some(_)) | (Some(_), None) => Err(failed()),
        (Some(actual), Some(expected)) if actual == expected => Ok(()),
        (Some(_), Some(_)) => Err(failed()),
    }
}

fn op_copy(doc: &mut Value, op: &Op<'_>, copied: &mut u64) -> Result<(), ApplyFailure> {
    let from = op
        .from()
        .map_err(|e| format!("copy operation failed to decode from: {e}"))?;
    let (steps, key) = find_object(doc, &from).ok_or_else(|| {
        format!("copy operation does not apply: doc is missing from path: {from}: missing value")
    })?;
    let con = resolve(doc, &steps)?;
    // Copying a missing object key copies evanphx's nil node, i.e. adds null.
    let source = container_get_ref(con, &key)
        .map_err(|e| format!("error in copy for from: '{from}': {e}"))?;
    // evanphx counts the copied value's encoded size against the limit before it copies; so does this, so an
    // over-limit copy never allocates.
    *copied = copied.saturating_add(source.map_or(4, encoded_len));
    if *copied > MAX_JSON_PATCH_COPY_BYTES {
        return Err(ApplyFailure::Error(format!(
            "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {MAX_JSON_PATCH_COPY_BYTES}"
        )));
    }
    let val = source.cloned().unwrap_or(Value::Null);
    let path = op
        .path()
        .map_err(|_| "copy operation failed to decode path: missing value".to_string())?;
    let (steps, key) = find_object(doc, &path).ok_or_else(|| {
        format!(
            "copy operation does not apply: doc is missing destination path: {path}: missing value"
        )
    })?;
    let con = resolve_mut(doc, &steps)?;
    container_add(con, &key, val)
        .map_err(|e| format!("error while adding value during copy: {e}"))?;
    Ok(())
}

/// The length of `v` encoded as compact JSON, counted without building the text.
fn encoded_len(v: &Value) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, v);
    count.0
}

/// evanphx `findObject`: walks every segment but the last and returns the
/// container plus the decoded last segment. Like v4 it ignores the first
/// segment, so a path without a leading slash still resolves from the root,
/// and it treats null intermediate values as missing.
fn find_object(doc: &Value, path: &str) -> Option<(Vec<Step>, String)> {
    let split: Vec<&str> = path.split('/').collect();
    if split.len() < 2 {
        return None;
    }
    let last = split.len() - 1;
    let mut cur = doc;
    let mut steps = Vec::new();
    for part in &split[1..last] {
        let key = decode_pointer_token(part);
        let (next, step) = match cur {
            Value::Object(m) => (m.get(&key)?, Step::Key(key)),
            Value::Array(a) => {
                let idx = array_get_index(a.len(), &key).ok()?;
                (a.get(idx)?, Step::Index(idx))
            }
            _ => return None,
        };
        if !matches!(next, Value::Object(_) | Value::Array(_)) {
            return None;
        }
        cur = next;
        steps.push(step);
    }
    Some((steps, decode_pointer_token(split[last])))
}

fn resolve<'a>(doc: &'a Value, steps: &[Step]) -> Result<&'a Value, ApplyFailure> {
    let mut cur = doc;
    for step in steps {
        let next = match (cur, step) {
            (Value::Object(m), Step::Key(k)) => m.get(k),
            (Value::Array(a), Step::Index(i)) => a.get(*i),
            _ => None,
        };
        cur = next.ok_or_else(|| ApplyFailure::Error("invalid state detected".to_string()))?;
    }
    Ok(cur)
}

fn resolve_mut<'a>(doc: &'a mut Value, steps: &[Step]) -> Result<&'a mut Value, ApplyFailure> {
    let mut cur = doc;
    for step in steps {
        let next = match (cur, step) {
            (Value::Object(m), Step::Key(k)) => m.get_mut(k),
            (Value::Array(a), Step::Index(i)) => a.get_mut(*i),
            _ => None,
        };
        cur = next.ok_or_else(|| ApplyFailure::Error("invalid state detected".to_string()))?;
    }
    Ok(cur)
}

/// RFC 6901 unescaping in one pass, as Go's `strings.NewReplacer("~1", "/", "~0", "~")`
/// does, so "~01" decodes to "~1".
fn decode_pointer_token(token: &str) -> String {
    let mut out = String::with_capacity(token.len());
    let mut rest = token;
    while let Some(pos) = rest.find('~') {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        if let Some(after) = tail.strip_prefix("~1") {
            out.push('/');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("~0") {
            out.push('~');
            rest = after;
        } else {
            out.push('~');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// Go's `strconv.Atoi`, with its error text.
fn go_atoi(s: &str) -> Result<i64, String> {
    s.parse::<i64>().map_err(|e| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "value out of range"
            }
            _ => "invalid syntax",
        };
        format!("strconv.Atoi: parsing {}: {why}", go_quote(s))
    })
}

fn invalid_index(idx: i64) -> String {
    format!("Unable to access invalid index: {idx}: invalid index referenced")
}

/// Index for `partialArray.get`/`set`: negative indices count from the end.
fn array_get_index(len: usize, key: &str) -> Result<usize, String> {
    let mut idx = go_atoi(key)?;
    let len = len as i64;
    if idx < 0 {
        if idx < -len {
            return Err(invalid_index(idx));
        }
        idx += len;
    }
    if idx >= len {
        return Err(invalid_index(idx));
    }
    usize::try_from(idx).map_err(|_| invalid_index(idx))
}

/// `partialDoc.get` / `partialArray.get`: `Ok(None)` is evanphx's nil node
/// (a missing key or a JSON null).
fn container_get_ref<'a>(con: &'a Value, key: &str) -> Result<Option<&'a Value>, String> {
    match con {
        Value::Object(m) => Ok(m.get(key).filter(|v| !v.is_null())),
        Value::Array(a) => {
            let idx = array_get_index(a.len(), key)?;
            Ok(a.get(idx).filter(|v| !v.is_null()))
        }
        _ => Err("invalid state detected".to_string()),
    }
}

fn container_get(con: &Value, key: &str) -> Result<Option<Value>, String> {
    container_get_ref(con, key).map(|v| v.cloned())
}

fn container_set(con: &mut Value, key: &str, val: Value) -> Result<(), String> {
    match con {
        Value::Object(m) => {
            m.insert(key.to_string(), val);
            Ok(())
        }
        Value::Array(a) => {
            let idx = array_get_index(a.len(), key)?;
            match a.get_mut(idx) {
                Some(slot) => {
                    *slot = val;
                    Ok(())
                }
                None => Err(invalid_index(idx as i64)),
            }
        }
        _ => Err("invalid state detected".to_string()),
    }
}

fn container_add(con: &mut Value, key: &str, val: Value) -> Result<(), String> {
    match con {
        Value::Object(m) => {
            m.insert(key.to_string(), val);
            Ok(())
        }
        Value::Array(a) => {
            if key == "-" {
                a.push(val);
                return Ok(());
            }
            let mut idx = go_atoi(key)
                .map_err(|e| format!("value was not a proper array index: '{key}': {e}"))?;
            let size = a.len() as i64 + 1;
            if idx >= size {
                return Err(invalid_index(idx));
            }
            if idx < 0 {
                if idx < -size {
                    return Err(invalid_index(idx));
                }
                idx += size;
            }
            let at = usize::try_from(idx).map_err(|_| invalid_index(idx))?;
            a.insert(at.min(a.len()), val);
            Ok(())
        }
        _ => Err("invalid state detected".to_string()),
    }
}

fn container_remove(con: &mut Value, key: &str) -> Result<(), String> {
    match con {
        Value::Object(m) => match m.shift_remove(key) {
            Some(_) => Ok(()),
            None => Err(format!(
                "Unable to remove nonexistent key: {key}: missing value"
            )),
        },
        Value::Array(a) => {
            let mut idx = go_atoi(key)?;
            let len = a.len() as i64;
            if idx >= len {
                return Err(invalid_index(idx));
            }
            if idx < 0 {
                if idx < -len {
                    return Err(invalid_index(idx));
                }
                idx += len;
            }
            let at = usize::try_from(idx).map_err(|_| invalid_index(idx))?;
            if at < a.len() {
                a.remove(at);
            }
            Ok(())
        }
        _ => Err("invalid state detected".to_string()),
    }
}

// ---------------------------------------------------------------------------
// Strategic merge patch: schema
// ---------------------------------------------------------------------------

/// How a list at a given place in an object merges under strategic merge patch.
#[derive(Debug, Clone, PartialEq)]
pub enum ListStrategy {
    Replace,
    MergeByKey(String),
    MergePrimitives,
}

/// Answers the list strategy for a path of field names from the object root (array indices are NOT in the path; e.g. ["spec","template","spec","containers"] and, inside a container, ["spec","template","spec","containers","ports"]).
pub trait StrategicSchema {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy;
}

/// The `patchStrategy`/`patchMergeKey` tags of one built-in kind, laid out by
/// where the tagged Go types sit inside the object.
struct BuiltinSchema {
    /// Paths at which an ObjectMeta sits (the object's own is `[]`).
    meta_roots: Vec<Vec<&'static str>>,
    /// Paths at which a PodSpec sits.
    pod_spec_roots: Vec<Vec<&'static str>>,
    /// Other tagged lists, by exact path.
    rules: Vec<(Vec<&'static str>, ListStrategy)>,
}

fn by_key(key: &str) -> ListStrategy {
    ListStrategy::MergeByKey(key.to_string())
}

/// ObjectMeta tags (k8s.io/apimachinery meta/v1 types.go): finalizers
/// `patchStrategy:"merge"`, ownerReferences `patchStrategy:"merge"
/// patchMergeKey:"uid"`; managedFields and everything else untagged.
fn object_meta_strategy(rel: &[&str]) -> Option<ListStrategy> {
    match rel {
        ["metadata", "finalizers"] => Some(ListStrategy::MergePrimitives),
        ["metadata", "ownerReferences"] => Some(by_key("uid")),
        _ => None,
    }
}

/// PodSpec, Container and EphemeralContainerCommon tags (k8s.io/api core/v1
/// types.go). Tolerations, readinessGates, envFrom, resizePolicy, args and
/// command carry no patch tags, so they replace.
fn pod_spec_strategy(rel: &[&str]) -> Option<ListStrategy> {
    const CONTAINER_LISTS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];
    match rel {
        ["volumes"]
        | ["initContainers"]
        | ["containers"]
        | ["ephemeralContainers"]
        | ["imagePullSecrets"]
        | ["schedulingGates"]
        | ["resourceClaims"] => Some(by_key("name")),
        ["hostAliases"] => Some(by_key("ip")),
        ["topologySpreadConstraints"] => Some(by_key("topologyKey")),
        [list, field] if CONTAINER_LISTS.contains(list) => match *field {
            "ports" => Some(by_key("containerPort")),
            "env" => Some(by_key("name")),
            "volumeMounts" => Some(by_key("mountPath")),
            "volumeDevices" => Some(by_key("devicePath")),
            _ => None,
        },
        // An ephemeral volume's PVC template carries its own ObjectMeta.
        ["volumes", "ephemeral", "volumeClaimTemplate", rest @ ..] => object_meta_strategy(rest),
        _ => None,
    }
}

impl StrategicSchema for BuiltinSchema {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        for root in &self.meta_roots {
            if let Some(rel) = path.strip_prefix(root.as_slice())
                && let Some(s) = object_meta_strategy(rel)
            {
                return s;
            }
        }
        for root in &self.pod_spec_roots {
            if let Some(rel) = path.strip_prefix(root.as_slice())
                && let Some(s) = pod_spec_strategy(rel)
            {
                return s;
            }
        }
        for (rule_path, strategy) in &self.rules {
            if rule_path.as_slice() == path {
                return strategy.clone();
            }
        }
        ListStrategy::Replace
    }
}

/// The built-in patch-merge-key table for the built-in kinds (by apiVersion group and kind), or None when the kind has no strategic schema (custom resources: the server answers 415).
///
/// `group` is "" (or "core") for the core group. Kinds whose types carry no
/// list tags besides ObjectMeta's still get a schema, because the real server
/// accepts strategic merge patches for every built-in type.
pub fn builtin_strategic_schema(
    group: &str,
    kind: &str,
) -> Option<Box<dyn StrategicSchema + Send + Sync>> {
    let conditions = || (vec!["status", "conditions"], by_key("type"));
    let pod_template = |schema: &mut BuiltinSchema| {
        schema.meta_roots.push(vec!["spec", "template"]);
        schema.pod_spec_roots.push(vec!["spec", "template", "spec"]);
    };
    let mut schema = BuiltinSchema {
        meta_roots: vec![vec![]],
        pod_spec_roots: vec![],
        rules: vec![],
    };
    match (group, kind) {
        ("" | "core", "Pod") => {
            schema.pod_spec_roots.push(vec!["spec"]);
            schema.rules.push(conditions());
            schema.rules.push((vec!["status", "podIPs"], by_key("ip")));
            schema.rules.push((vec!["status", "hostIPs"], by_key("ip")));
            schema
                .rules
                .push((vec!["status", "resourceClaimStatuses"], by_key("name")));
        }
        ("" | "core", "PodTemplate") => {
            schema.meta_roots.push(vec!["template"]);
            schema.pod_spec_roots.push(vec!["template", "spec"]);
        }
        ("" | "core", "ReplicationController") => {
            pod_template(&mut schema);
            schema.rules.push(conditions());
        }
        ("" | "core", "Service") => {
            schema.rules.push((vec!["spec", "ports"], by_key("port")));
            schema.rules.push(conditions());
        }
        ("" | "core", "Namespace" | "PersistentVolumeClaim") => schema.rules.push(conditions()),
        ("" | "core", "Node") => {
            schema
                .rules
                .push((vec!["spec", "podCIDRs"], ListStrategy::MergePrimitives));
            schema.rules.push(conditions());
            schema
                .rules
                .push((vec!["status", "addresses"], by_key("type")));
        }
        ("" | "core", "ServiceAccount") => {
            // Only `secrets` is tagged; ServiceAccount.imagePullSecrets has no
            // patch tags (unlike PodSpec.imagePullSecrets), so it replaces.
            schema.rules.push((vec!["secrets"], by_key("name")));
        }
        ("" | "core", "ComponentStatus") => schema.rules.push((vec!["conditions"], by_key("type"))),
        (
            "" | "core",
            "ConfigMap" | "Secret" | "Event" | "Endpoints" | "LimitRange" | "ResourceQuota"
            | "PersistentVolume" | "Binding",
        ) => {}
        ("apps", "Deployment" | "ReplicaSet" | "DaemonSet") => {
            pod_template(&mut schema);
            schema.rules.push(conditions());
        }
        ("apps", "StatefulSet") => {
            pod_template(&mut schema);
            schema.rules.push(conditions());
            // volumeClaimTemplates is an untagged list of whole PVCs.
            schema.meta_roots.push(vec!["spec", "volumeClaimTemplates"]);
            schema.rules.push((
                vec!["spec", "volumeClaimTemplates", "status", "conditions"],
                by_key("type"),
            ));
        }
        ("apps", "ControllerRevision") => {}
        ("batch", "Job") => {
            pod_template(&mut schema);
            schema.rules.push(conditions());
        }
        ("batch", "CronJob") => {
            schema.meta_roots.push(vec!["spec", "jobTemplate"]);
            schema
                .meta_roots
                .push(vec!["spec", "jobTemplate", "spec", "template"]);
            schema
                .pod_spec_roots
                .push(vec!["spec", "jobTemplate", "spec", "template", "spec"]);
        }
        ("policy", "PodDisruptionBudget") | ("autoscaling", "HorizontalPodAutoscaler") => {
            schema.rules.push(conditions());
        }
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration",
        ) => {
            schema.rules.push((vec!["webhooks"], by_key("name")));
        }
        (
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicy" | "ValidatingAdmissionPolicyBinding",
        )
        | (
            "rbac.authorization.k8s.io",
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding",
        )
        | ("networking.k8s.io", "Ingress" | "IngressClass" | "NetworkPolicy")
        | ("coordination.k8s.io", "Lease")
        | ("events.k8s.io", "Event")
        | ("discovery.k8s.io", "EndpointSlice")
        | (
            "storage.k8s.io",
            "StorageClass" | "CSIDriver" | "CSINode" | "VolumeAttachment" | "CSIStorageCapacity",
        )
        | ("scheduling.k8s.io", "PriorityClass")
        | ("node.k8s.io", "RuntimeClass")
        | ("certificates.k8s.io", "CertificateSigningRequest")
        | ("apiextensions.k8s.io", "CustomResourceDefinition")
        | ("apiregistration.k8s.io", "APIService") => {}
        _ => return None,
    }
    Some(Box::new(schema))
}

// ---------------------------------------------------------------------------
// Strategic merge patch: algorithm
// ---------------------------------------------------------------------------

/// Strategic merge patch (application/strategic-merge-patch+json), including the directives $patch (replace, delete, merge), $retainKeys, $deleteFromPrimitiveList/<field>, $setElementOrder/<field>.
///
/// Mirrors `strategicpatch.StrategicMergeMapPatch` with the server's options
/// (`MergeParallelList`, `IgnoreUnmatchedNulls`), including its quirks: a
/// `$deleteFromPrimitiveList/x` for a list the object lacks sets `x` to the
/// deletion list, and values taken from the patch verbatim (new keys, new list
/// elements, replaced lists) keep no directives, since the typed decode that
/// follows in the apiserver drops them.
///
/// Errors use the apiserver's codes: the malformed-directive errors are 400,
/// lists of lists 422 (generic message), and everything else — such as
/// `map: map[image:nginx] does not contain declared merge key: name` — is a
/// plain error, which the apiserver turns into a 500 Status without a reason.
pub fn strategic_merge_patch(
    original: &Value,
    patch: &Value,
    schema: &dyn StrategicSchema,
) -> Result<Value, PatchError> {
    let patch_map = match patch {
        Value::Object(m) => m.clone(),
        // Decoding `null` leaves a nil map, which patches nothing.
        Value::Null => return Ok(original.clone()),
        other => {
            return Err(PatchError::bad_request(format!(
                "json: cannot unmarshal {} into Go value of type {GO_MAP_TYPE}",
                json_kind(other)
            )));
        }
    };
    let original_map = match original {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    let mut ctx = SmpCtx {
        schema,
        path: Vec::new(),
        depth: 0,
    };
    merge_map(original_map, patch_map, &mut ctx).map(Value::Object)
}

struct SmpCtx<'a> {
    schema: &'a dyn StrategicSchema,
    path: Vec<String>,
    /// Nesting of `merge_map` calls, which recurse through list elements
    /// without growing `path`.
    depth: usize,
}

impl SmpCtx<'_> {
    fn strategy_for(&self, field: &str) -> ListStrategy {
        let mut path: Vec<&str> = self.path.iter().map(String::as_str).collect();
        path.push(field);
        self.schema.list_strategy(&path)
    }

    fn enter(&mut self, field: &str) -> Result<(), PatchError> {
        if self.path.len() >= MAX_DEPTH {
            return Err(too_deep());
        }
        self.path.push(field.to_string());
        Ok(())
    }

    fn leave(&mut self) {
        self.path.pop();
    }

    fn parent(&self) -> Option<&str> {
        self.path.last().map(String::as_str)
    }

    /// How deep into the document the merge is, for the recursion guards of
    /// the helpers it calls.
    fn json_depth(&self) -> usize {
        self.path.len() + self.depth
    }
}

/// Go's JSON decoder gives up at 10000 levels with this text; serde_json
/// already stops at 128, so only values built in code get here.
fn too_deep() -> PatchError {
    PatchError::bad_request("exceeded max depth")
}

fn is_directive_key(key: &str) -> bool {
    key == DIRECTIVE_MARKER
        || key == RETAIN_KEYS_DIRECTIVE
        || key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
        || key.starts_with(SET_ELEMENT_ORDER_PREFIX)
}

fn merge_map(
    original: Map<String, Value>,
    patch: Map<String, Value>,
    ctx: &mut SmpCtx<'_>,
) -> Result<Map<String, Value>, PatchError> {
    if ctx.depth >= MAX_MERGE_DEPTH {
        return Err(too_deep());
    }
    ctx.depth += 1;
    let merged = merge_map_inner(original, patch, ctx);
    ctx.depth -= 1;
    merged
}

fn merge_map_inner(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    ctx: &mut SmpCtx<'_>,
) -> Result<Map<String, Value>, PatchError> {
    if let Some(directive) = patch.get(DIRECTIVE_MARKER).cloned() {
        return match directive.as_str() {
            Some(REPLACE_DIRECTIVE) => {
                patch.shift_remove(DIRECTIVE_MARKER);
                let depth = ctx.json_depth();
                Ok(clean_map(
                    patch,
                    ctx.parent(),
                    ctx.path.iter().rev().nth(1).map(String::as_str),
                    depth,
                ))
            }
            Some(DELETE_DIRECTIVE) => Ok(Map::new()),
            _ => Err(err_bad_patch_type(&directive, &patch)),
        };
    }

    apply_retain_keys_directive(&mut original, &mut patch)?;
    merge_patch_into_original(&mut original, &mut patch, ctx)?;

    for (patch_key, patch_v) in patch {
        let mut is_delete_list = false;
        let mut key = patch_key;
        if key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
            let stripped = extract_key(&key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)?;
            is_delete_list = true;
            if !stripped.is_empty() {
                key = stripped;
            }
        }

        if patch_v.is_null() {
            original.shift_remove(&key);
            continue;
        }

        let Some(orig_v) = original.get_mut(&key) else {
            if !is_directive_key(&key) {
                let cleaned = clean_value(patch_v, Some(&key), ctx.parent(), ctx.json_depth());
                original.insert(key, cleaned);
            }
            continue;
        };

        if go_type(orig_v) != go_type(&patch_v) {
            *orig_v = clean_value(patch_v, Some(&key), ctx.parent(), ctx.json_depth());
            continue;
        }

        match patch_v {
            Value::Object(patch_child) => {
                let orig_child = match std::mem::take(orig_v) {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                ctx.enter(&key)?;
                let merged = merge_map(orig_child, patch_child, ctx);
                ctx.leave();
                *orig_v = Value::Object(merged?);
            }
            Value::Array(patch_list) => {
                let orig_list = match std::mem::take(orig_v) {
                    Value::Array(a) => a,
                    _ => Vec::new(),
                };
                let merged = merge_slice_handler(orig_list, patch_list, &key, is_delete_list, ctx)?;
                *orig_v = Value::Array(merged);
            }
            scalar => *orig_v = scalar,
        }
    }
    Ok(original)
}

/// `applyRetainKeysDirective` with `MergeParallelList` set.
fn apply_retain_keys_directive(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), PatchError> {
    let Some(retain) = patch.shift_remove(RETAIN_KEYS_DIRECTIVE) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(PatchError::bad_request(
            ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS,
        ));
    };
    // The list becomes the keys of a Go map: maps and slices can't be hashed.
    if retain.iter().any(is_composite) {
        return Err(PatchError::go_panic());
    }
    let retained = |k: &str| retain.iter().any(|v| v.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
            || k.starts_with(SET_ELEMENT_ORDER_PREFIX)
        {
            continue;
        }
        if !retained(k) {
            return Err(PatchError::bad_request(
                ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS,
            ));
        }
    }
    original.retain(|k, _| retained(k));
    Ok(())
}

/// `mergePatchIntoOriginal`: handles every `$setElementOrder/<field>` together
/// with `<field>`, then removes both from the patch.
fn merge_patch_into_original(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    ctx: &mut SmpCtx<'_>,
) -> Result<(), PatchError> {
    let order_keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER_PREFIX))
        .cloned()
        .collect();
    for order_key in order_keys {
        let Some(order_v) = patch.shift_remove(&order_key) else {
            continue;
        };
        let set_order = match order_v {
            Value::Array(a) => a,
            other => return Err(err_bad_arg_type(GO_SLICE_TYPE, &other)),
        };
        let field = extract_key(&order_key, SET_ELEMENT_ORDER_PREFIX)?;

        let original_list = match original.get(&field) {
            None => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => return Err(err_bad_arg_type(GO_SLICE_TYPE, other)),
        };
        let patch_list = match patch.get(&field) {
            None => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => return Err(err_bad_arg_type(GO_SLICE_TYPE, other)),
        };
        let merge_key = match ctx.strategy_for(&field) {
            ListStrategy::MergeByKey(k) => k,
            ListStrategy::Replace | ListStrategy::MergePrimitives => String::new(),
        };
        let original_field_value = original_list.clone().unwrap_or_default();
        let patch_field_value = patch_list.clone().unwrap_or_default();
        validate_patch_with_set_order_list(&patch_field_value, &set_order, &merge_key)?;

        let merged = match (original_list, patch_list) {
            (Some(o), None) => o,
            (None, Some(p)) => clean_list(p, Some(&field), ctx.parent(), ctx.json_depth()),
            (Some(o), Some(p)) => merge_slice_handler(o, p, &field, false, ctx)?,
            (None, None) => continue,
        };

        let (patch_items, server_only) = if merge_key.is_empty() {
            partition_primitives_by_present_in_list(merged, &set_order)?
        } else {
            partition_maps_by_present_in_list(merged, &set_order, &merge_key)?
        };
        let kind = slice_element_type(&[&original_field_value, &patch_field_value])?;
        let both = normalize_element_order(
            patch_items,
            server_only,
            &set_order,
            &original_field_value,
            &merge_key,
            kind,
        )?;
        original.insert(field.clone(), Value::Array(both));
        patch.shift_remove(&field);
    }
    Ok(())
}

/// `validatePatchWithSetOrderList`: the patch list must follow the order the
/// `$setElementOrder` list gives (directive elements aside).
fn validate_patch_with_set_order_list(
    patch_list: &[Value],
    set_order: &[Value],
    merge_key: &str,
) -> Result<(), PatchError> {
    if set_order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_delete = if merge_key.is_empty() {
        patch_list.to_vec()
    } else {
        extract_to_delete_items(patch_list.to_vec())?.0
    };
    let (mut pi, mut si) = (0, 0);
    while pi < non_delete.len() && si < set_order.len() {
        if contains_directive_marker(&non_delete[pi]) {
            pi += 1;
            continue;
        }
        if merge_key_value_equal(&non_delete[pi], &set_order[si], merge_key)? {
            pi += 1;
        }
        si += 1;
    }
    if pi < non_delete.len() && si >= set_order.len() {
        return Err(PatchError::internal(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER_PREFIX} list:\n{}\n",
            go_v_list(patch_list),
            go_v_list(set_order)
        )));
    }
    Ok(())
}

fn contains_directive_marker(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|m| m.contains_key(DIRECTIVE_MARKER))
}

fn merge_key_value_equal(left: &Value, right: &Value, merge_key: &str) -> Result<bool, PatchError> {
    if merge_key.is_empty() {
        return go_eq(left, right);
    }
    let Value::Object(l) = left else {
        return Err(err_bad_arg_type(GO_MAP_TYPE, left));
    };
    let Value::Object(r) = right else {
        return Err(err_bad_arg_type(GO_MAP_TYPE, right));
    };
    let lv = l
        .get(merge_key)
        .ok_or_else(|| err_no_merge_key(l, merge_key))?;
    let rv = r
        .get(merge_key)
        .ok_or_else(|| err_no_merge_key(r, merge_key))?;
    go_eq(lv, rv)
}

/// `extractKey`: `<prefix>/<field>` → `<field>`.
fn extract_key(key: &str, prefix: &str) -> Result<String, PatchError> {
    match key.split_once('/') {
        Some((head, field)) if head == prefix => Ok(field.to_string()),
        _ if prefix == DELETE_FROM_PRIMITIVE_LIST_PREFIX => Err(PatchError::bad_request(
            ERR_BAD_PATCH_FORMAT_FOR_PRIMITIVE_LIST,
        )),
        _ => Err(PatchError::bad_request(
            ERR_BAD_PATCH_FORMAT_FOR_SET_ELEMENT_ORDER,
        )),
    }
}

fn merge_slice_handler(
    original: Vec<Value>,
    patch: Vec<Value>,
    field: &str,
    is_delete_list: bool,
    ctx: &mut SmpCtx<'_>,
) -> Result<Vec<Value>, PatchError> {
    let (merge_key, elem_kind) = match ctx.strategy_for(field) {
        ListStrategy::Replace => {
            return Ok(clean_list(
                patch,
                Some(field),
                ctx.parent(),
                ctx.json_depth(),
            ));
        }
        ListStrategy::MergeByKey(k) => (k, "struct"),
        ListStrategy::MergePrimitives => (String::new(), "string"),
    };
    ctx.enter(field)?;
    let merged = merge_slice(original, patch, &merge_key, elem_kind, is_delete_list, ctx);
    ctx.leave();
    merged
}

/// `mergeSlice`. `elem_kind` is the Go kind of the declared element type,
/// which only shows up in an error message.
fn merge_slice(
    original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
    elem_kind: &str,
    is_delete_list: bool,
    ctx: &mut SmpCtx<'_>,
) -> Result<Vec<Value>, PatchError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let kind = slice_element_type(&[&original, &patch])?;

    let (merged, original_order, patch_order) = if kind != GoType::Map {
        if is_delete_list {
            return delete_from_slice(original, &patch);
        }
        let mut both = original.clone();
        both.extend(patch.iter().cloned());
        (deduplicate_scalars(both)?, original, patch)
    } else {
        if merge_key.is_empty() {
            return Err(PatchError::internal(format!(
                "cannot merge lists without merge key for type {elem_kind}"
            )));
        }
        let (original, patch) = merge_slice_with_special_elements(original, patch, merge_key, ctx)?;
        let merged =
            merge_slice_without_special_elements(original.clone(), &patch, merge_key, ctx)?;
        (merged, original, patch)
    };

    let (patch_items, server_only) = if merge_key.is_empty() {
        partition_primitives_by_present_in_list(merged, &patch_order)?
    } else {
        partition_maps_by_present_in_list(merged, &patch_order, merge_key)?
    };
    normalize_element_order(
        patch_items,
        server_only,
        &patch_order,
        &original_order,
        merge_key,
        kind,
    )
}

/// `mergeSliceWithSpecialElements`: applies `$patch: delete` elements and
/// detects `$patch: replace`, returning the new original and the patch without
/// directive elements.
fn merge_slice_with_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
    ctx: &SmpCtx<'_>,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut without_special = Vec::with_capacity(patch.len());
    let mut replace = false;
    for v in patch {
        // Go asserts the element type unchecked here.
        let Value::Object(typed) = &v else {
            return Err(PatchError::go_panic());
        };
        let Some(directive) = typed.get(DIRECTIVE_MARKER).cloned() else {
            without_special.push(v);
            continue;
        };
        match directive.as_str() {
            Some(DELETE_DIRECTIVE) => {
                let value = typed
                    .get(merge_key)
                    .ok_or_else(|| err_no_merge_key(typed, merge_key))?;
                while let Some(i) = find_map_in_slice(&original, merge_key, value)? {
                    original.remove(i);
                }
            }
            // Keep going so later directive elements are still pruned.
            Some(REPLACE_DIRECTIVE) => replace = true,
            Some(MERGE_DIRECTIVE) => {
                return Err(PatchError::internal(
                    "merging lists cannot yet be specified in the patch",
                ));
            }
            _ => return Err(err_bad_patch_type(&directive, typed)),
        }
    }
    if replace {
        let field = ctx.parent().map(str::to_string);
        return Ok((
            clean_list(without_special, field.as_deref(), None, ctx.json_depth()),
            Vec::new(),
        ));
    }
    Ok((original, without_special))
}

fn merge_slice_without_special_elements(
    mut original: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
    ctx: &mut SmpCtx<'_>,
) -> Result<Vec<Value>, PatchError> {
    for v in patch {
        let Value::Object(typed) = v else {
            return Err(PatchError::go_panic());
        };
        let merge_value = typed
            .get(merge_key)
            .ok_or_else(|| err_no_merge_key(typed, merge_key))?;
        match find_map_in_slice(&original, merge_key, merge_value)? {
            Some(i) => {
                let orig_elem = match std::mem::take(&mut original[i]) {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                original[i] = Value::Object(merge_map(orig_elem, typed.clone(), ctx)?);
            }
            None => {
                let field = ctx.parent().map(str::to_string);
                original.push(clean_value(
                    v.clone(),
                    field.as_deref(),
                    None,
                    ctx.json_depth(),
                ));
            }
        }
    }
    Ok(original)
}

fn find_map_in_slice(
    list: &[Value],
    key: &str,
    value: &Value,
) -> Result<Option<usize>, PatchError> {
    for (i, v) in list.iter().enumerate() {
        let Value::Object(m) = v else {
            return Err(PatchError::internal(format!(
                "value for key {i} is not a map."
            )));
        };
        if let Some(candidate) = m.get(key)
            && go_eq(candidate, value)?
        {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// `deleteFromSlice`: drops every element found in the deletion list.
fn delete_from_slice(current: Vec<Value>, to_delete: &[Value]) -> Result<Vec<Value>, PatchError> {
    if to_delete.iter().chain(current.iter()).any(is_composite) {
        return Err(PatchError::go_panic());
    }
    let mut kept = Vec::with_capacity(current.len());
    for v in current {
        if !contains_go(to_delete, &v)? {
            kept.push(v);
        }
    }
    Ok(kept)
}

/// Go's in-place `deduplicateScalars`, which moves the last element into each
/// duplicate's slot (the order is fixed up later by the normalisation).
fn deduplicate_scalars(mut s: Vec<Value>) -> Result<Vec<Value>, PatchError> {
    let mut length = s.len() as isize - 1;
    let mut i: isize = 0;
    while i < length {
        let mut j = i + 1;
        while j <= length {
            if go_eq(&s[i as usize], &s[j as usize])? {
                s.swap(j as usize, length as usize);
                s.truncate(length as usize);
                length -= 1;
                j -= 1;
            }
            j += 1;
        }
        i += 1;
    }
    Ok(s)
}

fn partition_primitives_by_present_in_list(
    list: Vec<Value>,
    partition_by: &[Value],
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    if partition_by.iter().chain(list.iter()).any(is_composite) {
        return Err(PatchError::go_panic());
    }
    let mut present = Vec::new();
    let mut server_only = Vec::new();
    for v in list {
        if contains_go(partition_by, &v)? {
            present.push(v);
        } else {
            server_only.push(v);
        }
    }
    Ok((present, server_only))
}

fn partition_maps_by_present_in_list(
    list: Vec<Value>,
    partition_by: &[Value],
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut present = Vec::new();
    let mut server_only = Vec::new();
    for v in list {
        let Value::Object(m) = &v else {
            return Err(err_bad_arg_type(GO_MAP_TYPE, &v));
        };
        let key_value = m
            .get(merge_key)
            .ok_or_else(|| err_no_merge_key(m, merge_key))?;
        if find_map_in_slice(partition_by, merge_key, key_value)?.is_some() {
            present.push(v);
        } else {
            server_only.push(v);
        }
    }
    Ok((present, server_only))
}

/// `normalizeElementOrder`: patch items follow the patch order, server-only
/// items the live order, then the two are interleaved.
fn normalize_element_order(
    patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: GoType,
) -> Result<Vec<Value>, PatchError> {
    let patch = normalize_slice_order(patch, patch_order, merge_key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, kind)?;
    merge_sorted_slice(server_only, patch, server_order, merge_key, kind)
}

fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: GoType,
) -> Result<Vec<Value>, PatchError> {
    let (to_sort, to_delete) = if kind == GoType::Map {
        validate_merge_key_in_lists(merge_key, &[&to_sort, order])?;
        extract_to_delete_items(to_sort)?
    } else {
        (to_sort, Vec::new())
    };
    // The comparator only depends on each element's position in `order`, so
    // look that up once; an element missing from `order` compares as "less"
    // against anything, exactly like the Go closure.
    let mut keyed = Vec::with_capacity(to_sort.len());
    for v in to_sort {
        keyed.push((index_in(order, &v, merge_key, kind)?, v));
    }
    go_stable_sort(
        &mut keyed,
        &|a: &(Option<usize>, Value), b: &(Option<usize>, Value)| match (a.0, b.0) {
            (Some(x), Some(y)) => x < y,
            _ => true,
        },
    );
    let mut sorted: Vec<Value> = keyed.into_iter().map(|(_, v)| v).collect();
    sorted.extend(to_delete);
    Ok(sorted)
}

fn validate_merge_key_in_lists(merge_key: &str, lists: &[&[Value]]) -> Result<(), PatchError> {
    for list in lists {
        for item in list.iter() {
            let Value::Object(m) = item else {
                return Err(err_bad_arg_type(GO_MAP_TYPE, item));
            };
            if !m.contains_key(merge_key) {
                return Err(err_no_merge_key(m, merge_key));
            }
        }
    }
    Ok(())
}

fn extract_to_delete_items(list: Vec<Value>) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut keep = Vec::new();
    let mut delete = Vec::new();
    for v in list {
        let Value::Object(m) = &v else {
            return Err(err_bad_arg_type(GO_MAP_TYPE, &v));
        };
        if m.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some(DELETE_DIRECTIVE) {
            delete.push(v);
        } else {
            keep.push(v);
        }
    }
    Ok((keep, delete))
}

/// `index`: position of `val` in `list`, comparing merge key values for maps
/// (a missing key reads as nil) and whole values otherwise.
fn index_in(
    list: &[Value],
    val: &Value,
    merge_key: &str,
    kind: GoType,
) -> Result<Option<usize>, PatchError> {
    let wanted = comparison_key(val, merge_key, kind);
    for (i, item) in list.iter().enumerate() {
        if go_eq(wanted, comparison_key(item, merge_key, kind))? {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

fn comparison_key<'a>(item: &'a Value, merge_key: &str, kind: GoType) -> &'a Value {
    static NIL: Value = Value::Null;
    if kind == GoType::Map {
        item.as_object()
            .and_then(|m| m.get(merge_key))
            .unwrap_or(&NIL)
    } else {
        item
    }
}

/// `mergeSortedSlice`: inserts the server-only items (`left`) among the patch
/// items (`right`) using their live positions.
fn merge_sorted_slice(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    kind: GoType,
) -> Result<Vec<Value>, PatchError> {
    let mut left_idx = Vec::with_capacity(left.len());
    for v in &left {
        left_idx.push(index_in(server_order, v, merge_key, kind)?);
    }
    let mut right_idx = Vec::with_capacity(right.len());
    for v in &right {
        right_idx.push(index_in(server_order, v, merge_key, kind)?);
    }
    let size = left.len() + right.len();
    let mut left = left.into_iter().zip(left_idx).peekable();
    let mut right = right.into_iter().zip(right_idx).peekable();
    let mut out = Vec::with_capacity(size);
    for _ in 0..size {
        let take_left = match (left.peek(), right.peek()) {
            (Some(_), None) => true,
            (None, _) => false,
            (Some((_, li)), Some((_, ri))) => matches!((li, ri), (Some(l), Some(r)) if l < r),
        };
        let next = if take_left { left.next() } else { right.next() };
        if let Some((v, _)) = next {
            out.push(v);
        }
    }
    Ok(out)
}

/// `sliceElementType`: every element of every slice must share one Go type,
/// which must not be a slice.
fn slice_element_type(slices: &[&[Value]]) -> Result<GoType, PatchError> {
    let mut prev: Option<GoType> = None;
    for s in slices {
        for v in s.iter() {
            let cur = go_type(v);
            match prev {
                None => {
                    // reflect.TypeOf(nil).Kind() dereferences a nil interface.
                    if cur == GoType::Nil {
                        return Err(PatchError::go_panic());
                    }
                    if cur == GoType::Slice {
                        return Err(PatchError::generic_invalid());
                    }
                    prev = Some(cur);
                }
                Some(p) if p != cur => {
                    let rendered: Vec<String> = slices.iter().map(|s| go_v_list(s)).collect();
                    return Err(PatchError::internal(format!(
                        "list element types are not identical: [{}]",
                        rendered.join(" ")
                    )));
                }
                Some(_) => {}
            }
        }
    }
    prev.ok_or_else(|| PatchError::internal("no elements in any of the given slices"))
}

/// Drops what the apiserver's typed decode would drop from a value copied
/// verbatim from the patch: directive keys and null members. Null label and
/// annotation values become "" because they decode into `map[string]string`.
fn clean_value(v: Value, key: Option<&str>, parent: Option<&str>, depth: usize) -> Value {
    match v {
        Value::Object(m) => Value::Object(clean_map(m, key, parent, depth)),
        Value::Array(a) if depth <= MAX_DEPTH => Value::Array(
            a.into_iter()
                .map(|e| clean_value(e, key, parent, depth + 1))
                .collect(),
        ),
        other => other,
    }
}

fn clean_map(
    m: Map<String, Value>,
    key: Option<&str>,
    parent: Option<&str>,
    depth: usize,
) -> Map<String, Value> {
    if depth > MAX_DEPTH {
        return m;
    }
    let string_map = matches!(key, Some("labels" | "annotations")) && parent == Some("metadata");
    let mut out = Map::new();
    for (k, v) in m {
        if is_directive_key(&k) {
            continue;
        }
        if v.is_null() {
            if string_map {
                out.insert(k, Value::from(""));
            }
            continue;
        }
        let cleaned = clean_value(v, Some(&k), key, depth + 1);
        out.insert(k, cleaned);
    }
    out
}

fn clean_list(
    list: Vec<Value>,
    key: Option<&str>,
    parent: Option<&str>,
    depth: usize,
) -> Vec<Value> {
    list.into_iter()
        .map(|v| clean_value(v, key, parent, depth + 1))
        .collect()
}

// ---------------------------------------------------------------------------
// Go semantics helpers
// ---------------------------------------------------------------------------

/// The dynamic Go type a decoded JSON value has in the apiserver (integers
/// decode as int64, other numbers as float64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GoType {
    Nil,
    Bool,
    Int64,
    Float64,
    String,
    Map,
    Slice,
}

fn go_type(v: &Value) -> GoType {
    match v {
        Value::Null => GoType::Nil,
        Value::Bool(_) => GoType::Bool,
        Value::Number(n) if n.as_i64().is_some() => GoType::Int64,
        Value::Number(_) => GoType::Float64,
        Value::String(_) => GoType::String,
        Value::Object(_) => GoType::Map,
        Value::Array(_) => GoType::Slice,
    }
}

fn go_type_name(v: &Value) -> &'static str {
    match go_type(v) {
        GoType::Nil => "%!s(<nil>)",
        GoType::Bool => "bool",
        GoType::Int64 => "int64",
        GoType::Float64 => "float64",
        GoType::String => "string",
        GoType::Map => GO_MAP_TYPE,
        GoType::Slice => GO_SLICE_TYPE,
    }
}

fn is_composite(v: &Value) -> bool {
    matches!(v, Value::Object(_) | Value::Array(_))
}

/// Go `==` on two `interface{}` values; comparing two maps or two slices is a
/// runtime panic in Go.
fn go_eq(a: &Value, b: &Value) -> Result<bool, PatchError> {
    let (ta, tb) = (go_type(a), go_type(b));
    if ta != tb {
        return Ok(false);
    }
    Ok(match (a, b) {
        (Value::Object(_), _) | (Value::Array(_), _) => return Err(PatchError::go_panic()),
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        _ => a == b,
    })
}

fn contains_go(list: &[Value], v: &Value) -> Result<bool, PatchError> {
    for item in list {
        if go_eq(item, v)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The word Go's JSON decoder uses for a value in `cannot unmarshal X into`.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn err_no_merge_key(m: &Map<String, Value>, key: &str) -> PatchError {
    PatchError::internal(format!(
        "map: {} does not contain declared merge key: {key}",
        go_v_map(m)
    ))
}

fn err_bad_arg_type(expected: &str, actual: &Value) -> PatchError {
    PatchError::internal(format!(
        "expected a {expected}, but received a {}",
        go_type_name(actual)
    ))
}

fn err_bad_patch_type(directive: &Value, m: &Map<String, Value>) -> PatchError {
    let mut t = String::new();
    write_go(&mut t, directive, GoVerb::S, 0);
    PatchError::internal(format!("unknown patch type: {t} in map: {}", go_v_map(m)))
}

#[derive(Clone, Copy, PartialEq)]
enum GoVerb {
    V,
    S,
}

fn go_v_map(m: &Map<String, Value>) -> String {
    let mut out = String::new();
    write_go_map(&mut out, m, GoVerb::V, 0);
    out
}

fn go_v_list(list: &[Value]) -> String {
    let mut out = String::from("[");
    for (i, v) in list.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_go(&mut out, v, GoVerb::V, 1);
    }
    out.push(']');
    out
}

/// `fmt`'s rendering of a decoded JSON value with `%v` or `%s` (map keys sorted).
fn write_go(out: &mut String, v: &Value, verb: GoVerb, depth: usize) {
    if depth > MAX_DEPTH {
        out.push_str("...");
        return;
    }
    match v {
        Value::Null => out.push_str(if verb == GoVerb::V {
            "<nil>"
        } else {
            "%!s(<nil>)"
        }),
        Value::Bool(b) => match verb {
            GoVerb::V => out.push_str(if *b { "true" } else { "false" }),
            GoVerb::S => out.push_str(&format!("%!s(bool={b})")),
        },
        Value::Number(n) => {
            let (text, type_name) = match n.as_i64() {
                Some(i) => (i.to_string(), "int64"),
                None => (go_float(n.as_f64().unwrap_or(0.0)), "float64"),
            };
            match verb {
                GoVerb::V => out.push_str(&text),
                GoVerb::S => out.push_str(&format!("%!s({type_name}={text})")),
            }
        }
        Value::String(s) => out.push_str(s),
        Value::Array(a) => {
            out.push('[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_go(out, e, verb, depth + 1);
            }
            out.push(']');
        }
        Value::Object(m) => write_go_map(out, m, verb, depth),
    }
}

fn write_go_map(out: &mut String, m: &Map<String, Value>, verb: GoVerb, depth: usize) {
    let mut entries: Vec<(&String, &Value)> = m.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    out.push_str("map[");
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(k);
        out.push(':');
        write_go(out, v, verb, depth + 1);
    }
    out.push(']');
}

/// Go's `sort.SliceStable` (insertion sort on blocks of 20, then SymMerge).
/// Reproducing the exact algorithm matters because the strategic merge patch
/// comparator is not a strict weak order when an element is missing from the
/// order list, so any other stable sort could order such lists differently.
fn go_stable_sort<T>(data: &mut [T], less: &dyn Fn(&T, &T) -> bool) {
    let n = data.len();
    let mut block = 20;
    let (mut a, mut b) = (0, block);
    while b <= n {
        insertion_sort(data, a, b, less);
        a = b;
        b += block;
    }
    insertion_sort(data, a, n, less);
    while block < n {
        a = 0;
        b = 2 * block;
        while b <= n {
            sym_merge(data, a, a + block, b, less);
            a = b;
            b += 2 * block;
        }
        let m = a + block;
        if m < n {
            sym_merge(data, a, m, n, less);
        }
        block *= 2;
    }
}

fn insertion_sort<T>(data: &mut [T], a: usize, b: usize, less: &dyn Fn(&T, &T) -> bool) {
    let mut i = a + 1;
    while i < b {
        let mut j = i;
        while j > a && less(&data[j], &data[j - 1]) {
            data.swap(j, j - 1);
            j -= 1;
        }
        i += 1;
    }
}

fn sym_merge<T>(data: &mut [T], a: usize, m: usize, b: usize, less: &dyn Fn(&T, &T) -> bool) {
    if m - a == 1 {
        let (mut i, mut j) = (m, b);
        while i < j {
            let h = (i + j) / 2;
            if less(&data[h], &data[a]) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = a;
        while k + 1 < i {
            data.swap(k, k + 1);
            k += 1;
        }
        return;
    }
    if b - m == 1 {
        let (mut i, mut j) = (a, m);
        while i < j {
            let h = (i + j) / 2;
            if !less(&data[m], &data[h]) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = m;
        while k > i {
            data.swap(k, k - 1);
            k -= 1;
        }
        return;
    }
    let mid = (a + b) / 2;
    let n = mid + m;
    let (mut start, mut r) = if m > mid { (n - b, mid) } else { (a, m) };
    let p = n - 1;
    while start < r {
        let c = (start + r) / 2;
        if !less(&data[p - c], &data[c]) {
            start = c + 1;
        } else {
            r = c;
        }
    }
    let end = n - start;
    if start < m && m < end {
        rotate(data, start, m, end);
    }
    if a < start && start < mid {
        sym_merge(data, a, start, mid, less);
    }
    if mid < end && end < b {
        sym_merge(data, mid, end, b, less);
    }
}

fn rotate<T>(data: &mut [T], a: usize, m: usize, b: usize) {
    let mut i = m - a;
    let mut j = b - m;
    while i != j {
        if i > j {
            swap_range(data, m - i, m, j);
            i -= j;
        } else {
            swap_range(data, m - i, m + j - i, i);
            j -= i;
        }
    }
    swap_range(data, m - i, m, i);
}

fn swap_range<T>(data: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        data.swap(a + i, b + i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "web",
                "labels": {"app": "web"},
                "finalizers": ["a", "b"],
                "ownerReferences": [{"uid": "u1", "name": "o1"}]
            },
            "spec": {
                "replicas": 1,
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": "nginx:1",
                                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
                            },
                            {"name": "side", "image": "busybox"}
                        ],
                        "tolerations": [{"key": "k1", "operator": "Exists"}],
                        "volumes": [{"name": "v1", "emptyDir": {}}]
                    }
                }
            },
            "status": {"conditions": [{"type": "Available", "status": "True"}]}
        })
    }

    fn deploy_schema() -> Box<dyn StrategicSchema + Send + Sync> {
        builtin_strategic_schema("apps", "Deployment").expect("Deployment has a schema")
    }

    fn smp(original: &Value, patch: Value) -> Result<Value, PatchError> {
        strategic_merge_patch(original, &patch, deploy_schema().as_ref())
    }

    fn containers(v: &Value) -> &Value {
        &v["spec"]["template"]["spec"]["containers"]
    }

    fn names(list: &Value) -> Vec<String> {
        list.as_array()
            .expect("a list")
            .iter()
            .map(|c| c["name"].as_str().expect("a name").to_string())
            .collect()
    }

    // ----- merge patch ------------------------------------------------------

    #[test]
    fn merge_patch_matches_rfc7386_and_evanphx_v4() {
        // (target, patch, result, behaviour mirrored)
        let cases = [
            // RFC 7386 appendix A.
            (
                json!({"a": "b"}),
                json!({"a": "c"}),
                json!({"a": "c"}),
                "RFC 7386 A: replace member",
            ),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
                "RFC 7386 A: add member",
            ),
            (
                json!({"a": "b"}),
                json!({"a": null}),
                json!({}),
                "RFC 7386 A: null deletes",
            ),
            (
                json!({"a": "b", "b": "c"}),
                json!({"a": null}),
                json!({"b": "c"}),
                "null deletes one key",
            ),
            (
                json!({"a": ["b"]}),
                json!({"a": "c"}),
                json!({"a": "c"}),
                "scalar replaces array",
            ),
            (
                json!({"a": "c"}),
                json!({"a": ["b"]}),
                json!({"a": ["b"]}),
                "array replaces scalar",
            ),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
                "objects merge recursively",
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
                "arrays replace, never merge",
            ),
            (
                json!(["a", "b"]),
                json!(["c", "d"]),
                json!(["c", "d"]),
                "non-object patch replaces",
            ),
            (
                json!({"a": "b"}),
                json!(["c"]),
                json!(["c"]),
                "non-object patch replaces object",
            ),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
                "existing nulls survive",
            ),
            (
                json!([1, 2]),
                json!({"a": "b", "c": null}),
                json!({"a": "b"}),
                "object patch on array",
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
                "nested nulls pruned",
            ),
            // evanphx v4 specifics.
            (
                json!({}),
                json!({"a": [{"x": null, "y": 1}, null]}),
                json!({"a": [{"y": 1}, null]}),
                "evanphx pruneAryNulls: nulls pruned inside array objects, null elements kept",
            ),
            (
                json!({"a": 1}),
                json!({"a": {"b": null, "c": 2}}),
                json!({"a": {"c": 2}}),
                "evanphx merge: object over scalar is the pruned patch",
            ),
            (
                json!({"a": {"b": 1}}),
                json!({"a": [{"x": null}]}),
                json!({"a": [{"x": null}]}),
                "evanphx merge: non-object over object is the unpruned patch",
            ),
            (
                json!({"a": null}),
                json!({"a": {"b": null}}),
                json!({"a": {}}),
                "null member counts as absent",
            ),
            (
                json!({"a": 1}),
                json!({"zz": null}),
                json!({"a": 1}),
                "deleting a missing key is a no-op",
            ),
        ];
        for (target, patch, want, why) in cases {
            assert_eq!(merge_patch(&target, &patch), want, "{why}");
        }
    }

    #[test]
    fn merge_patch_request_rejects_what_the_handler_rejects() {
        // patch.go applyJSPatch: strict decode into map[string]interface{} under
        // fieldValidation=Warn, then evanphx ErrBadJSONPatch for `null`.
        let target = json!({"a": 1});
        let cases = [
            (
                json!([1]),
                "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}",
            ),
            (
                json!("x"),
                "error decoding patch: json: cannot unmarshal string into Go value of type map[string]interface {}",
            ),
            (
                json!(3),
                "error decoding patch: json: cannot unmarshal number into Go value of type map[string]interface {}",
            ),
            (
                json!(true),
                "error decoding patch: json: cannot unmarshal bool into Go value of type map[string]interface {}",
            ),
            (Value::Null, "Invalid JSON Patch"),
        ];
        for (patch, message) in cases {
            let err = merge_patch_request(&target, &patch).expect_err("rejected");
            assert_eq!(
                err,
                PatchError {
                    status: 400,
                    message: message.into()
                }
            );
            assert_eq!(err.reason(), "BadRequest");
        }
        assert_eq!(
            merge_patch_request(&target, &json!({"b": 2})),
            Ok(json!({"a": 1, "b": 2}))
        );
    }

    #[test]
    fn merge_patch_keeps_key_order() {
        // preserve_order: existing keys keep their place, new keys go last.
        let out = merge_patch(
            &json!({"b": 1, "a": 2, "c": 3}),
            &json!({"a": 9, "d": 4, "b": null}),
        );
        let keys: Vec<&String> = out.as_object().expect("object").keys().collect();
        assert_eq!(keys, ["a", "c", "d"]);
    }

    // ----- JSON patch -------------------------------------------------------

    fn doc() -> Value {
        json!({"metadata": {"name": "x", "labels": {"a": "1"}}, "spec": {"list": [1, 2, 3]}})
    }

    #[test]
    fn json_patch_applies_rfc6902_operations() {
        let cases = [
            (
                json!([{"op": "add", "path": "/metadata/labels/b", "value": "2"}]),
                json!({"metadata": {"name": "x", "labels": {"a": "1", "b": "2"}}, "spec": {"list": [1, 2, 3]}}),
                "add a member",
            ),
            (
                json!([{"op": "add", "path": "/metadata/labels/app.kubernetes.io~1name", "value": "n"}]),
                json!({"metadata": {"name": "x", "labels": {"a": "1", "app.kubernetes.io/name": "n"}}, "spec": {"list": [1, 2, 3]}}),
                "RFC 6901 ~1 is /",
            ),
            (
                json!([{"op": "add", "path": "/metadata/labels/a~0b~01", "value": "t"}]),
                json!({"metadata": {"name": "x", "labels": {"a": "1", "a~b~1": "t"}}, "spec": {"list": [1, 2, 3]}}),
                "RFC 6901 ~0 is ~, decoded in one pass",
            ),
            (
                json!([{"op": "add", "path": "/spec/list/-", "value": 4}]),
                json!({"metadata": doc()["metadata"], "spec": {"list": [1, 2, 3, 4]}}),
                "- appends",
            ),
            (
                json!([{"op": "add", "path": "/spec/list/0", "value": 0}]),
                json!({"metadata": doc()["metadata"], "spec": {"list": [0, 1, 2, 3]}}),
                "add inserts",
            ),
            (
                json!([{"op": "add", "path": "/spec/list/3", "value": 9}]),
                json!({"metadata": doc()["metadata"], "spec": {"list": [1, 2, 3, 9]}}),
                "add at len appends",
            ),
            (
                json!([{"op": "add", "path": "/spec/list/-1", "value": 9}]),
                json!({"metadata": doc()["metadata"], "spec": {"list": [1, 2, 3, 9]}}),
                "evanphx SupportNegativeIndices: -1 on add is the end",
            ),
            (
                json!([{"op": "remove", "path": "/spec/list/0"}]),
                json!({"metadata": doc()["metadata"], "spec": {"list": [2, 3]}}),
                "remove an element",
            ),
            (
                json!([{"op": "remove", "path": "/spec/list/-1"}]),
                json!({"metadata": doc()["metadata"], "spec": {"list": [1, 2]}}),
                "negative remove counts from the end",
            ),
            (
                json!([{"op": "replace", "path": "/spec/list/1", "value": 7}]),
                json!({"metadata": doc()["metadata"], "spec": {"list": [1, 7, 3]}}),
                "replace an element",
            ),
            (
                json!([{"op": "replace", "path": "/metadata/labels/new", "value": "n"}]),
                json!({"metadata": {"name": "x", "labels": {"a": "1", "new": "n"}}, "spec": {"list": [1, 2, 3]}}),
                "evanphx v4: replace of a missing object key adds it (partialDoc.get never fails)",
            ),
            (
                json!([{"op": "move", "from": "/metadata/labels/a", "path": "/metadata/labels/c"}]),
                json!({"metadata": {"name": "x", "labels": {"c": "1"}}, "spec": {"list": [1, 2, 3]}}),
                "move",
            ),
            (
                json!([{"op": "copy", "from": "/spec/list", "path": "/spec/copy"}]),
                json!({"metadata": doc()["metadata"], "spec": {"list": [1, 2, 3], "copy": [1, 2, 3]}}),
                "copy",
            ),
            (
                json!([{"op": "test", "path": "/metadata/labels/a", "value": "1"}, {"op": "replace", "path": "/metadata/labels/a", "value": "2"}]),
                json!({"metadata": {"name": "x", "labels": {"a": "2"}}, "spec": {"list": [1, 2, 3]}}),
                "test then replace",
            ),
            (
                json!([{"op": "add", "path": "/metadata/labels/z"}]),
                json!({"metadata": {"name": "x", "labels": {"a": "1", "z": null}}, "spec": {"list": [1, 2, 3]}}),
                "evanphx: add without value adds null",
            ),
            (
                json!([{"op": "copy", "from": "/metadata/nope", "path": "/metadata/c"}]),
                json!({"metadata": {"name": "x", "labels": {"a": "1"}, "c": null}, "spec": {"list": [1, 2, 3]}}),
                "evanphx: copying a missing key copies null",
            ),
            (
                json!([{"op": "test", "path": "/metadata/nope", "value": null}]),
                doc(),
                "evanphx: a missing key tests equal to null",
            ),
            (
                json!([{"op": "replace", "path": "", "value": {"x": 1}}]),
                json!({"x": 1}),
                "evanphx v4: replace with an empty path swaps the document",
            ),
            (
                json!([{"op": "test", "path": "", "value": doc()}]),
                doc(),
                "test with an empty path compares the document",
            ),
            (
                json!([{"op": "add", "path": "ignored/q", "value": "q"}]),
                json!({"metadata": doc()["metadata"], "spec": {"list": [1, 2, 3]}, "q": "q"}),
                "evanphx findObject skips the first segment, slash or not",
            ),
            (Value::Null, doc(), "a null body is an empty patch"),
            (json!([]), doc(), "an empty patch changes nothing"),
        ];
        for (ops, want, why) in cases {
            assert_eq!(json_patch(&doc(), &ops), Ok(want), "{why}");
        }
    }

    #[test]
    fn json_patch_apply_failures_are_generic_422() {
        // patch.go: patchObj.Apply errors become
        // NewGenericServerResponse(422, ..., err.Error(), 0, false), whose
        // message is fixed; the evanphx text only reaches the logs.
        let cases = [
            (
                json!([{"op": "remove", "path": "/metadata/labels/zz"}]),
                "error in remove for path: '/metadata/labels/zz': Unable to remove nonexistent key: zz: missing value",
            ),
            (
                json!([{"op": "test", "path": "/metadata/labels/a", "value": "2"}]),
                "testing value /metadata/labels/a failed: test failed",
            ),
            (
                json!([{"op": "test", "path": "/metadata/labels/zz", "value": "2"}]),
                "testing value /metadata/labels/zz failed: test failed",
            ),
            (
                json!([{"op": "test", "path": "", "value": {}}]),
                "testing value  failed: test failed",
            ),
            (
                json!([{"op": "add", "path": "/nope/x", "value": 1}]),
                "add operation does not apply: doc is missing path: \"/nope/x\": missing value",
            ),
            (
                json!([{"op": "add", "path": "", "value": 1}]),
                "add operation does not apply: doc is missing path: \"\": missing value",
            ),
            (
                json!([{"op": "add", "path": "/spec/list/9", "value": 1}]),
                "error in add for path: '/spec/list/9': Unable to access invalid index: 9: invalid index referenced",
            ),
            (
                json!([{"op": "add", "path": "/spec/list/x", "value": 1}]),
                "error in add for path: '/spec/list/x': value was not a proper array index: 'x': strconv.Atoi: parsing \"x\": invalid syntax",
            ),
            (
                json!([{"op": "remove", "path": "/spec/list/3"}]),
                "error in remove for path: '/spec/list/3': Unable to access invalid index: 3: invalid index referenced",
            ),
            (
                json!([{"op": "remove", "path": "/spec/list/-4"}]),
                "error in remove for path: '/spec/list/-4': Unable to access invalid index: -4: invalid index referenced",
            ),
            (
                json!([{"op": "replace", "path": "/spec/list/5", "value": 1}]),
                "replace operation does not apply: doc is missing key: /spec/list/5: missing value",
            ),
            (
                json!([{"op": "replace", "path": "", "value": 1}]),
                "replace operation value must be object or array: %!w(<nil>)",
            ),
            (
                json!([{"op": "move", "from": "/metadata", "path": "/metadata/x"}]),
                "move operation does not apply: doc is missing destination path: /metadata/x: missing value",
            ),
            (
                json!([{"op": "move", "from": "/nope/a", "path": "/b"}]),
                "move operation does not apply: doc is missing from path: /nope/a: missing value",
            ),
            (
                json!([{"op": "move", "path": "/b"}]),
                "move operation failed to decode from: operation, missing from field: missing value",
            ),
            (
                json!([{"op": "add", "value": 1}]),
                "add operation failed to decode path: missing value",
            ),
            (
                json!([{"op": "replace", "path": null, "value": 1}]),
                "replace operation failed to decode path: operation missing path field: missing value",
            ),
            (
                json!([{"op": "frob", "path": "/a"}]),
                "Unexpected kind: frob",
            ),
            (json!([{"path": "/a"}]), "Unexpected kind: unknown"),
            (json!([null]), "Unexpected kind: unknown"),
            (
                json!([{"op": "add", "path": "/metadata/labels/b", "value": "2"}, {"op": "test", "path": "/metadata/labels/b", "value": "3"}]),
                "testing value /metadata/labels/b failed: test failed",
            ),
        ];
        for (ops, cause) in cases {
            assert_eq!(
                json_patch(&doc(), &ops),
                Err(PatchError::generic_invalid()),
                "{cause}"
            );
            let ops = ops.as_array().expect("ops");
            assert_eq!(apply_json_patch_ops(&doc(), ops), Err(cause.to_string()));
        }
    }

    #[test]
    fn json_patch_body_errors_are_400_and_413() {
        // patch.go: kjson.UnmarshalStrict into []jsonPatchOp (default
        // fieldValidation=Warn) fails with "error decoding patch: ..." (400);
        // more than maxJSONPatchOperations is 413.
        let cases = [
            (
                json!({"op": "add"}),
                "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp",
            ),
            (
                json!("x"),
                "error decoding patch: json: cannot unmarshal string into Go value of type []handlers.jsonPatchOp",
            ),
            (
                json!([1]),
                "error decoding patch: json: cannot unmarshal number into Go value of type handlers.jsonPatchOp",
            ),
            (
                json!([[]]),
                "error decoding patch: json: cannot unmarshal array into Go value of type handlers.jsonPatchOp",
            ),
            (
                json!([{"op": 1, "path": "/a"}]),
                "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string",
            ),
            (
                json!([{"op": "add", "path": {}}]),
                "error decoding patch: json: cannot unmarshal object into Go struct field jsonPatchOp.path of type string",
            ),
            (
                json!([{"op": "move", "path": "/a", "from": true}]),
                "error decoding patch: json: cannot unmarshal bool into Go struct field jsonPatchOp.from of type string",
            ),
        ];
        for (ops, message) in cases {
            assert_eq!(
                json_patch(&doc(), &ops),
                Err(PatchError {
                    status: 400,
                    message: message.into()
                })
            );
        }
        let many = Value::Array(vec![
            json!({"op": "test", "path": "/metadata/name", "value": "x"});
            10001
        ]);
        let err = json_patch(&doc(), &many).expect_err("too many");
        assert_eq!(err.status, 413);
        assert_eq!(
            err.message,
            "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
        );
        assert_eq!(err.reason(), "RequestEntityTooLarge");
        let exactly = Value::Array(vec![
            json!({"op": "test", "path": "/metadata/name", "value": "x"});
            10000
        ]);
        assert_eq!(json_patch(&doc(), &exactly), Ok(doc()));
    }

    #[test]
    fn status_bodies_match_the_apiserver() {
        // NewGenericServerResponse(422) has reason Invalid and an empty
        // details object; NewBadRequest has neither details nor causes; plain
        // errors from strategicpatch go through ErrorToAPIStatus (500, no reason).
        assert_eq!(
            PatchError::generic_invalid().to_status(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": GENERIC_INVALID_MESSAGE, "reason": "Invalid", "details": {}, "code": 422})
        );
        assert_eq!(
            PatchError::bad_request("Invalid JSON Patch").to_status(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "Invalid JSON Patch", "reason": "BadRequest", "code": 400})
        );
        assert_eq!(
            PatchError::internal("boom").to_status(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "boom", "code": 500})
        );
        let crd = unsupported_patch_type(&[
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ]);
        assert_eq!(crd.status, 415);
        assert_eq!(crd.reason(), "UnsupportedMediaType");
        assert_eq!(
            crd.message,
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        );
        assert!(PatchError::go_panic().is_apiserver_panic());
    }

    // ----- strategic merge patch: built-in kinds ------------------------------

    #[test]
    fn smp_maps_merge_and_null_deletes() {
        let out = smp(
            &deployment(),
            json!({"metadata": {"labels": {"app": null, "tier": "web"}}, "spec": {"replicas": 3}}),
        )
        .expect("patched");
        assert_eq!(out["metadata"]["labels"], json!({"tier": "web"}));
        assert_eq!(out["spec"]["replicas"], json!(3));
        assert_eq!(out["spec"]["template"], deployment()["spec"]["template"]);
    }

    #[test]
    fn smp_containers_merge_by_name() {
        // PodSpec.containers: patchStrategy=merge, patchMergeKey=name.
        let out = smp(&deployment(), json!({"spec": {"template": {"spec": {"containers": [{"name": "side", "image": "busybox:2"}]}}}}))
            .expect("patched");
        assert_eq!(
            containers(&out),
            &json!([
                deployment()["spec"]["template"]["spec"]["containers"][0].clone(),
                {"name": "side", "image": "busybox:2"}
            ])
        );
    }

    #[test]
    fn smp_new_list_items_go_before_server_only_items() {
        // strategicpatch mergeSortedSlice: without $setElementOrder a patch item
        // the live list lacks is emitted before the server-only items.
        let out = smp(&deployment(), json!({"spec": {"template": {"spec": {"containers": [{"name": "new", "image": "x"}]}}}}))
            .expect("patched");
        assert_eq!(names(containers(&out)), ["new", "app", "side"]);
    }

    #[test]
    fn smp_patch_order_wins_over_live_order() {
        // Design doc "preserve order in SMP": live [B, C, A], patch [A', B', D]
        // gives [C, A', B', D].
        let schema = builtin_strategic_schema("", "Pod").expect("Pod");
        let live = json!({"spec": {"containers": [{"name": "B"}, {"name": "C"}, {"name": "A"}]}});
        let patch = json!({"spec": {"containers": [{"name": "A", "x": 1}, {"name": "B", "x": 1}, {"name": "D"}]}});
        let out = strategic_merge_patch(&live, &patch, schema.as_ref()).expect("patched");
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "C"}, {"name": "A", "x": 1}, {"name": "B", "x": 1}, {"name": "D"}])
        );
    }

    #[test]
    fn smp_nested_container_lists_merge_by_their_keys() {
        // Container.env merges by name, Container.ports by containerPort.
        let patch = json!({"spec": {"template": {"spec": {"containers": [{
            "name": "app",
            "env": [{"name": "B", "value": "two"}],
            "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}]
        }]}}}});
        let out = smp(&deployment(), patch).expect("patched");
        let app = &containers(&out)[0];
        assert_eq!(
            app["env"],
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "two"}])
        );
        assert_eq!(
            app["ports"],
            json!([{"containerPort": 80, "protocol": "TCP", "name": "http"}, {"containerPort": 443}])
        );
        assert_eq!(app["image"], json!("nginx:1"));
    }

    #[test]
    fn smp_tolerations_replace() {
        // PodSpec.tolerations has no patch tags (+listType=atomic): it replaces.
        let out = smp(&deployment(), json!({"spec": {"template": {"spec": {"tolerations": [{"key": "k2", "operator": "Exists"}]}}}}))
            .expect("patched");
        assert_eq!(
            out["spec"]["template"]["spec"]["tolerations"],
            json!([{"key": "k2", "operator": "Exists"}])
        );
    }

    #[test]
    fn smp_patch_delete_directive_removes_the_element() {
        let out = smp(&deployment(), json!({"spec": {"template": {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}}}}))
            .expect("patched");
        assert_eq!(names(containers(&out)), ["app"]);
        // Deleting an element that is not there is fine.
        let out = smp(&deployment(), json!({"spec": {"template": {"spec": {"volumes": [{"name": "nope", "$patch": "delete"}]}}}}))
            .expect("patched");
        assert_eq!(
            out["spec"]["template"]["spec"]["volumes"],
            json!([{"name": "v1", "emptyDir": {}}])
        );
    }

    #[test]
    fn smp_patch_replace_directive_on_list_and_map() {
        let out = smp(&deployment(), json!({"spec": {"template": {"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "x"}]}}}}))
            .expect("patched");
        assert_eq!(containers(&out), &json!([{"name": "only", "image": "x"}]));

        let out = smp(
            &deployment(),
            json!({"metadata": {"labels": {"$patch": "replace", "fresh": "1"}}}),
        )
        .expect("patched");
        assert_eq!(out["metadata"]["labels"], json!({"fresh": "1"}));

        // handleDirectiveInMergeMap: `$patch: delete` on a map leaves an empty map.
        let out = smp(
            &deployment(),
            json!({"spec": {"template": {"metadata": {"$patch": "delete"}}}}),
        )
        .expect("patched");
        assert_eq!(out["spec"]["template"]["metadata"], json!({}));
    }

    #[test]
    fn smp_primitive_lists() {
        // ObjectMeta.finalizers: patchStrategy=merge on a []string.
        let out = smp(
            &deployment(),
            json!({"metadata": {"finalizers": ["c", "a"]}}),
        )
        .expect("patched");
        assert_eq!(out["metadata"]["finalizers"], json!(["c", "a", "b"]));

        let out = smp(
            &deployment(),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
        )
        .expect("patched");
        assert_eq!(out["metadata"]["finalizers"], json!(["b"]));

        // mergeMap stores the deletion list itself when the object lacks the
        // list (the key is simply absent from the original).
        let mut no_finalizers = deployment();
        no_finalizers["metadata"]
            .as_object_mut()
            .expect("meta")
            .shift_remove("finalizers");
        let out = smp(
            &no_finalizers,
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}}),
        )
        .expect("patched");
        assert_eq!(out["metadata"]["finalizers"], json!(["x"]));
    }

    #[test]
    fn smp_set_element_order_reorders() {
        let out = smp(&deployment(), json!({"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "side"}, {"name": "app"}]}}}}))
            .expect("patched");
        assert_eq!(names(containers(&out)), ["side", "app"]);
        assert!(
            out["spec"]["template"]["spec"]
                .get("$setElementOrder/containers")
                .is_none()
        );

        let out = smp(
            &deployment(),
            json!({"metadata": {"$setElementOrder/finalizers": ["b", "a"]}}),
        )
        .expect("patched");
        assert_eq!(out["metadata"]["finalizers"], json!(["b", "a"]));
    }

    #[test]
    fn smp_owner_references_merge_by_uid() {
        let out = smp(&deployment(), json!({"metadata": {"ownerReferences": [{"uid": "u1", "controller": true}, {"uid": "u2", "name": "o2"}]}}))
            .expect("patched");
        assert_eq!(
            out["metadata"]["ownerReferences"],
            json!([{"uid": "u1", "name": "o1", "controller": true}, {"uid": "u2", "name": "o2"}])
        );
    }

    #[test]
    fn smp_status_conditions_merge_by_type() {
        let out = smp(&deployment(), json!({"status": {"conditions": [{"type": "Available", "status": "False"}, {"type": "Progressing", "status": "True"}]}}))
            .expect("patched");
        assert_eq!(
            out["status"]["conditions"],
            json!([{"type": "Available", "status": "False"}, {"type": "Progressing", "status": "True"}])
        );
    }

    #[test]
    fn smp_retain_keys() {
        // DeploymentSpec.strategy is tagged retainKeys: kubectl sends
        // $retainKeys and the server drops every other key of the map.
        let mut d = deployment();
        d["spec"]["strategy"] = json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}});
        let out = smp(
            &d,
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        )
        .expect("patched");
        assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
    }

    #[test]
    fn smp_values_taken_verbatim_lose_directives_and_nulls() {
        // The apiserver decodes the result into the typed object, which drops
        // directive keys and turns nulls into zero values (absent, or "" for
        // label/annotation values).
        let mut d = deployment();
        d["spec"]["template"]
            .as_object_mut()
            .expect("template")
            .shift_remove("metadata");
        let patch = json!({"spec": {"template": {
            "metadata": {"labels": {"a": null, "b": "1"}, "annotations": {"$patch": "replace"}},
            "spec": {"containers": [{"name": "new", "image": null, "env": [{"name": "E", "$patch": "delete"}]}]}
        }}});
        let out = smp(&d, patch).expect("patched");
        assert_eq!(
            out["spec"]["template"]["metadata"],
            json!({"labels": {"a": "", "b": "1"}, "annotations": {}})
        );
        assert_eq!(
            containers(&out)[0],
            json!({"name": "new", "env": [{"name": "E"}]})
        );
    }

    #[test]
    fn smp_errors_carry_the_apiserver_status() {
        let cases = [
            (
                json!({"spec": {"template": {"spec": {"containers": [{"image": "nginx"}]}}}}),
                500,
                "map: map[image:nginx] does not contain declared merge key: name",
                "ErrNoMergeKey reaches ErrorToAPIStatus as a plain error",
            ),
            (
                json!({"spec": {"template": {"spec": {"volumes": [{"hostPath": {"path": "/var/lib/kubelet/pods"}}]}}}}),
                500,
                "map: map[hostPath:map[path:/var/lib/kubelet/pods]] does not contain declared merge key: name",
                "issue kubernetes#141112 message",
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": [{"name": "side", "$patch": "merge"}]}}}}),
                500,
                "merging lists cannot yet be specified in the patch",
                "mergeSliceWithSpecialElements",
            ),
            (
                json!({"metadata": {"labels": {"$patch": "merge", "a": "b"}}}),
                500,
                "unknown patch type: merge in map: map[$patch:merge a:b]",
                "handleDirectiveInMergeMap → ErrBadPatchType",
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": [{"name": "side", "$patch": 7}]}}}}),
                500,
                "unknown patch type: %!s(int64=7) in map: map[$patch:7 name:side]",
                "ErrBadPatchType formats the directive with %s",
            ),
            (
                json!({"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}}),
                400,
                "invalid patch format of primitive list",
                "ErrBadPatchFormatForPrimitiveList is a BadRequest",
            ),
            (
                json!({"metadata": {"$setElementOrderX/finalizers": ["a"]}}),
                400,
                "invalid patch format of setElementOrder list",
                "ErrBadPatchFormatForSetElementOrderList is a BadRequest",
            ),
            (
                json!({"metadata": {"$retainKeys": "name"}}),
                400,
                "invalid patch format of retainKeys",
                "ErrBadPatchFormatForRetainKeys: not a list",
            ),
            (
                json!({"metadata": {"$retainKeys": ["name"], "labels": {"x": "y"}}}),
                400,
                "invalid patch format of retainKeys",
                "ErrBadPatchFormatForRetainKeys: patch key outside the list",
            ),
            (
                json!({"metadata": {"finalizers": [["x"]]}}),
                500,
                "list element types are not identical: [[a b] [[x]]]",
                "sliceElementType only reports lists of lists for the first element",
            ),
            (
                json!({"metadata": {"finalizers": [1]}}),
                500,
                "list element types are not identical: [[a b] [1]]",
                "sliceElementType",
            ),
            (
                json!({"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "side"}], "containers": [{"name": "app"}, {"name": "side"}]}}}}),
                500,
                "The order in patch list:\n[map[name:app] map[name:side]]\n doesn't match $setElementOrder list:\n[map[name:side]]\n",
                "validatePatchWithSetOrderList",
            ),
            (
                json!({"spec": {"template": {"spec": {"$setElementOrder/containers": {"name": "side"}}}}}),
                500,
                "expected a []interface {}, but received a map[string]interface {}",
                "ErrBadArgType",
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": [{"name": {"x": 1}}]}}}}),
                500,
                APISERVER_PANIC_MESSAGE,
                "comparing two maps with == panics in Go",
            ),
        ];
        for (patch, status, message, why) in cases {
            assert_eq!(
                smp(&deployment(), patch),
                Err(PatchError {
                    status,
                    message: message.into()
                }),
                "{why}"
            );
        }
    }

    #[test]
    fn smp_list_of_lists_is_422() {
        // sliceElementType returns ErrNoListOfLists, which
        // interpretStrategicMergePatchError maps to NewGenericServerResponse(422).
        let original = json!({"metadata": {"finalizers": []}});
        assert_eq!(
            smp(&original, json!({"metadata": {"finalizers": [["x"]]}})),
            Err(PatchError::generic_invalid())
        );
    }

    #[test]
    fn smp_body_shape() {
        // strategicPatchObject: the body is decoded into map[string]interface{}.
        assert_eq!(
            smp(&deployment(), json!([1])),
            Err(PatchError {
                status: 400,
                message:
                    "json: cannot unmarshal array into Go value of type map[string]interface {}"
                        .into()
            })
        );
        assert_eq!(smp(&deployment(), Value::Null), Ok(deployment()));
        assert_eq!(smp(&deployment(), json!({})), Ok(deployment()));
    }

    #[test]
    fn builtin_schema_tags() {
        let pod = builtin_strategic_schema("", "Pod").expect("Pod");
        let cases: &[(&[&str], ListStrategy)] = &[
            (&["metadata", "finalizers"], ListStrategy::MergePrimitives),
            (
                &["metadata", "ownerReferences"],
                ListStrategy::MergeByKey("uid".into()),
            ),
            (&["metadata", "managedFields"], ListStrategy::Replace),
            (
                &["spec", "containers"],
                ListStrategy::MergeByKey("name".into()),
            ),
            (
                &["spec", "initContainers", "volumeMounts"],
                ListStrategy::MergeByKey("mountPath".into()),
            ),
            (
                &["spec", "ephemeralContainers", "volumeDevices"],
                ListStrategy::MergeByKey("devicePath".into()),
            ),
            (
                &["spec", "containers", "ports"],
                ListStrategy::MergeByKey("containerPort".into()),
            ),
            (
                &["spec", "containers", "env"],
                ListStrategy::MergeByKey("name".into()),
            ),
            (&["spec", "containers", "envFrom"], ListStrategy::Replace),
            (&["spec", "containers", "args"], ListStrategy::Replace),
            (
                &["spec", "hostAliases"],
                ListStrategy::MergeByKey("ip".into()),
            ),
            (&["spec", "tolerations"], ListStrategy::Replace),
            (
                &["spec", "topologySpreadConstraints"],
                ListStrategy::MergeByKey("topologyKey".into()),
            ),
            (
                &["spec", "imagePullSecrets"],
                ListStrategy::MergeByKey("name".into()),
            ),
            (
                &["spec", "volumes"],
                ListStrategy::MergeByKey("name".into()),
            ),
            (
                &["status", "conditions"],
                ListStrategy::MergeByKey("type".into()),
            ),
            (&["status", "podIPs"], ListStrategy::MergeByKey("ip".into())),
            (&["status", "containerStatuses"], ListStrategy::Replace),
        ];
        for (path, want) in cases {
            assert_eq!(&pod.list_strategy(path), want, "{path:?}");
        }

        let cron = builtin_strategic_schema("batch", "CronJob").expect("CronJob");
        assert_eq!(
            cron.list_strategy(&[
                "spec",
                "jobTemplate",
                "spec",
                "template",
                "spec",
                "containers"
            ]),
            ListStrategy::MergeByKey("name".into())
        );
        assert_eq!(
            cron.list_strategy(&["spec", "jobTemplate", "metadata", "finalizers"]),
            ListStrategy::MergePrimitives
        );

        let svc = builtin_strategic_schema("", "Service").expect("Service");
        assert_eq!(
            svc.list_strategy(&["spec", "ports"]),
            ListStrategy::MergeByKey("port".into())
        );

        // The real ServiceAccount type tags `secrets` only.
        let sa = builtin_strategic_schema("core", "ServiceAccount").expect("ServiceAccount");
        assert_eq!(
            sa.list_strategy(&["secrets"]),
            ListStrategy::MergeByKey("name".into())
        );
        assert_eq!(
            sa.list_strategy(&["imagePullSecrets"]),
            ListStrategy::Replace
        );

        let hook = builtin_strategic_schema(
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration",
        )
        .expect("hooks");
        assert_eq!(
            hook.list_strategy(&["webhooks"]),
            ListStrategy::MergeByKey("name".into())
        );
        assert_eq!(
            hook.list_strategy(&["webhooks", "rules"]),
            ListStrategy::Replace
        );

        let sts = builtin_strategic_schema("apps", "StatefulSet").expect("sts");
        assert_eq!(
            sts.list_strategy(&["spec", "template", "spec", "volumes"]),
            ListStrategy::MergeByKey("name".into())
        );
        assert_eq!(
            sts.list_strategy(&["spec", "volumeClaimTemplates"]),
            ListStrategy::Replace
        );

        for (group, kind) in [
            ("", "Namespace"),
            ("", "Secret"),
            ("", "ConfigMap"),
            ("", "ServiceAccount"),
            ("", "Event"),
            ("events.k8s.io", "Event"),
            ("coordination.k8s.io", "Lease"),
            ("rbac.authorization.k8s.io", "Role"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("rbac.authorization.k8s.io", "RoleBinding"),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
            (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration",
            ),
            ("apps", "Deployment"),
            ("apps", "StatefulSet"),
            ("apps", "DaemonSet"),
            ("batch", "Job"),
            ("", "Service"),
            ("", "Pod"),
            ("", "PersistentVolumeClaim"),
            ("networking.k8s.io", "Ingress"),
            ("networking.k8s.io", "NetworkPolicy"),
            ("policy", "PodDisruptionBudget"),
            ("autoscaling", "HorizontalPodAutoscaler"),
        ] {
            let schema =
                builtin_strategic_schema(group, kind).unwrap_or_else(|| panic!("{group}/{kind}"));
            assert_eq!(
                schema.list_strategy(&["metadata", "finalizers"]),
                ListStrategy::MergePrimitives
            );
        }
        // Custom resources have no strategic schema: the server answers 415.
        assert!(builtin_strategic_schema("stable.example.com", "CronTab").is_none());
        assert!(builtin_strategic_schema("apps", "Pod").is_none());
    }

    // ----- strategic merge patch: upstream patch_test.go cases ---------------

    /// The field layout upstream's tests use (mergingList by name,
    /// mergingIntList as a merged primitive list).
    struct UpstreamTestSchema;

    impl StrategicSchema for UpstreamTestSchema {
        fn list_strategy(&self, path: &[&str]) -> ListStrategy {
            match path.last() {
                Some(&"mergingList") => ListStrategy::MergeByKey("name".into()),
                Some(&"mergingIntList") => ListStrategy::MergePrimitives,
                _ => ListStrategy::Replace,
            }
        }
    }

    #[test]
    fn smp_upstream_three_way_results() {
        // (current, three-way patch, result) triples from
        // k8s.io/apimachinery/pkg/util/strategicpatch/patch_test.go.
        let cases = [
            (
                json!({"mergingIntList": [1, 2, 4]}),
                json!({"$setElementOrder/mergingIntList": [1, 2, 3], "mergingIntList": [3]}),
                json!({"mergingIntList": [1, 2, 3, 4]}),
                "merge lists of scalars",
            ),
            (
                json!({"mergingIntList": [1, 2, 3, 4]}),
                json!({"$setElementOrder/mergingIntList": [1, 2], "$deleteFromPrimitiveList/mergingIntList": [3]}),
                json!({"mergingIntList": [1, 2, 4]}),
                "delete items in lists of scalars",
            ),
            (
                json!({"mergingIntList": [1, 2, 3]}),
                json!({"$setElementOrder/mergingIntList": [2, 1], "$deleteFromPrimitiveList/mergingIntList": [3]}),
                json!({"mergingIntList": [2, 1]}),
                "delete an item in a int list and preserve order",
            ),
            (
                json!({"mergingIntList": [1, 2, 3]}),
                json!({"$setElementOrder/mergingIntList": [4, 2, 1], "mergingIntList": [4], "$deleteFromPrimitiveList/mergingIntList": [3]}),
                json!({"mergingIntList": [4, 2, 1]}),
                "add and delete an item in a int list and preserve order",
            ),
            (
                json!({"mergingIntList": [1, 3, 4, 2, 9]}),
                json!({"$setElementOrder/mergingIntList": [4, 2, 3, 1]}),
                json!({"mergingIntList": [4, 2, 3, 1, 9]}),
                "set elements order in a int list with server-only items",
            ),
            (
                json!({"mergingIntList": [1, 2, 9, 3, 4]}),
                json!({"$setElementOrder/mergingIntList": [2, 1, 4, 3]}),
                json!({"mergingIntList": [2, 1, 9, 4, 3]}),
                "set elements order in a int list with server-only items 2",
            ),
            (
                json!({"mergingIntList": [1, 2, 7, 9, 8, 3, 4]}),
                json!({"$setElementOrder/mergingIntList": [2, 1, 4, 3]}),
                json!({"mergingIntList": [2, 1, 7, 9, 8, 4, 3]}),
                "set elements order in a int list with server-only items 3",
            ),
            (
                json!({"mergingList": [{"name": 1}, {"name": 2, "value": "dup1"}, {"name": 3}, {"name": 2, "value": "dup2"}, {"name": 4}]}),
                json!({"$setElementOrder/mergingList": [{"name": 2}, {"name": 1}, {"name": 4}, {"name": 3}, {"name": 2}]}),
                json!({"mergingList": [{"name": 2, "value": "dup1"}, {"name": 2, "value": "dup2"}, {"name": 1}, {"name": 4}, {"name": 3}]}),
                "behavior of set element order for a merging list with duplicate",
            ),
            (
                json!({"mergingIntList": [1, 2, 3, 2, 4]}),
                json!({"$setElementOrder/mergingIntList": [2, 1, 4, 3, 2]}),
                json!({"mergingIntList": [2, 2, 1, 4, 3]}),
                "behavior of set element order for a merging int list with duplicate",
            ),
            (
                json!({"name": "hi", "mergingList": [{"name": "hello2"}]}),
                json!({"$setElementOrder/mergingList": [{"name": "hello"}, {"name": "doesntexist"}], "mergingList": [{"name": "hello"}]}),
                json!({"name": "hi", "mergingList": [{"name": "hello"}, {"name": "hello2"}]}),
                "delete non-existent item from merging list",
            ),
            (
                json!({"retainKeysMap": {"value": "foo"}}),
                json!({"retainKeysMap": {"$retainKeys": ["other"], "other": "bar"}}),
                json!({"retainKeysMap": {"other": "bar"}}),
                "retainKeys map should clear defaulted field",
            ),
            (
                json!({"retainKeysMap": {"name": "type1", "value": "foo"}}),
                json!({"retainKeysMap": {"$retainKeys": ["name", "other"], "name": "type2", "other": "bar"}}),
                json!({"retainKeysMap": {"name": "type2", "other": "bar"}}),
                "retainKeys discriminated union",
            ),
            (
                json!({"retainKeysMap": {"name": "foo", "value": "bar", "other": "a"}}),
                json!({"retainKeysMap": {"$retainKeys": ["name"], "value": null}}),
                json!({"retainKeysMap": {"name": "foo"}}),
                "retainKeys map deletes a field and clears a field",
            ),
            (
                json!({"retainKeysMap": {"name": "foo", "value": "bar", "simpleMap": {"key1": "a", "key3": "c"}}}),
                json!({"retainKeysMap": {"$retainKeys": ["name", "simpleMap", "value"], "simpleMap": {"key2": "b"}}}),
                json!({"retainKeysMap": {"name": "foo", "value": "bar", "simpleMap": {"key1": "a", "key3": "c", "key2": "b"}}}),
                "retainKeys map adds a field in a nested map",
            ),
            (
                json!({"retainKeysMap": {"name": "foo", "mergingIntList": [1, 2, 3]}}),
                json!({"retainKeysMap": {"$retainKeys": ["mergingIntList", "name", "value"], "$setElementOrder/mergingIntList": [1, 2], "value": "bar"}}),
                json!({"retainKeysMap": {"name": "foo", "mergingIntList": [1, 2, 3], "value": "bar"}}),
                "retainKeys map nested merging int list with no change",
            ),
        ];
        for (current, patch, want, why) in cases {
            assert_eq!(
                strategic_merge_patch(&current, &patch, &UpstreamTestSchema),
                Ok(want),
                "{why}"
            );
        }
    }

    #[test]
    fn go_formatting_helpers() {
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(100000.5), "100000.5");
        assert_eq!(go_float(1000000.5), "1.0000005e+06");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(-0.25), "-0.25");
        assert_eq!(
            go_v_map(
                json!({"b": [1, "x", null], "a": {"c": true}})
                    .as_object()
                    .expect("map")
            ),
            "map[a:map[c:true] b:[1 x <nil>]]"
        );
        assert_eq!(decode_pointer_token("a~1b~0c~2"), "a/b~c~2");
        let mut v: Vec<u32> = (0..50).rev().collect();
        go_stable_sort(&mut v, &|a: &u32, b: &u32| a < b);
        assert_eq!(v, (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn deep_nesting_is_handled_without_overflow() {
        // serde_json refuses to parse more than 128 levels; values built in
        // code can be deeper, and must not blow the stack.
        // (Even serde_json's own drop overflows a test thread past a few
        // thousand levels, so stay at a few hundred.)
        let mut deep = json!("leaf");
        for _ in 0..300 {
            deep = json!({"spec": deep});
        }
        let mut deep_list = json!(1);
        for _ in 0..300 {
            deep_list = json!([deep_list]);
        }
        // Lists merged by key inside list elements: the costliest recursion.
        let mut nested_merge = json!({"name": "x"});
        for _ in 0..200 {
            nested_merge = json!({"name": "x", "mergingList": [nested_merge]});
        }
        let schema = builtin_strategic_schema("", "Pod").expect("Pod");
        assert_eq!(
            strategic_merge_patch(&deep, &deep, schema.as_ref()),
            Err(PatchError::bad_request("exceeded max depth"))
        );
        let _ = strategic_merge_patch(
            &json!({"a": deep_list.clone()}),
            &json!({"a": deep_list.clone()}),
            schema.as_ref(),
        );
        assert_eq!(
            strategic_merge_patch(&nested_merge, &nested_merge, &UpstreamTestSchema),
            Err(PatchError::bad_request("exceeded max depth"))
        );
        let _ = merge_patch(&deep, &deep);
        let _ = merge_patch(&json!({}), &deep_list);
        assert_eq!(
            json_patch(
                &deep,
                &json!([{"op": "test", "path": "/spec", "value": deep["spec"]}])
            ),
            Ok(deep.clone())
        );
        let err = strategic_merge_patch(
            &json!({"a": {"$patch": 1}}),
            &json!({"a": {"$patch": deep_list}}),
            schema.as_ref(),
        )
        .expect_err("bad directive");
        assert_eq!(err.status, 500);
    }

    // ----- properties ---------------------------------------------------------

    fn arb_key() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("$patch".to_string()),
            Just("$retainKeys".to_string()),
            Just("$setElementOrder/containers".to_string()),
            Just("$setElementOrder/finalizers".to_string()),
            Just("$deleteFromPrimitiveList/finalizers".to_string()),
            Just("$deleteFromPrimitiveList/".to_string()),
            Just("name".to_string()),
            Just("metadata".to_string()),
            Just("labels".to_string()),
            Just("finalizers".to_string()),
            Just("spec".to_string()),
            Just("containers".to_string()),
            Just("env".to_string()),
            "[a-z~/]{0,3}",
        ]
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1.0e7f64..1.0e7).prop_map(Value::from),
            prop_oneof![
                Just("delete"),
                Just("replace"),
                Just("merge"),
                Just("a"),
                Just("-")
            ]
            .prop_map(Value::from),
            "[a-z0-9~/-]{0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((arb_key(), inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn arb_object() -> impl Strategy<Value = Value> {
        prop::collection::vec((arb_key(), arb_json()), 0..6)
            .prop_map(|kv| Value::Object(kv.into_iter().collect()))
    }

    fn arb_pointer() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                Just("a"),
                Just("0"),
                Just("1"),
                Just("-"),
                Just("-1"),
                Just("~1"),
                Just("~0"),
                Just(""),
                Just("name")
            ],
            0..4,
        )
        .prop_map(|segments| segments.iter().map(|s| format!("/{s}")).collect::<String>())
    }

    fn arb_op() -> impl Strategy<Value = Value> {
        (
            prop_oneof![
                Just("add"),
                Just("remove"),
                Just("replace"),
                Just("move"),
                Just("copy"),
                Just("test"),
                Just("bogus")
            ],
            arb_pointer(),
            proptest::option::of(arb_pointer()),
            proptest::option::of(arb_json()),
        )
            .prop_map(|(op, path, from, value)| {
                let mut m = Map::new();
                m.insert("op".into(), Value::from(op));
                m.insert("path".into(), Value::from(path));
                if let Some(from) = from {
                    m.insert("from".into(), Value::from(from));
                }
                if let Some(value) = value {
                    m.insert("value".into(), value);
                }
                Value::Object(m)
            })
    }

    fn escape_token(key: &str) -> String {
        key.replace('~', "~0").replace('/', "~1")
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn prop_merge_patch_with_empty_object_is_identity(target in arb_object()) {
            prop_assert_eq!(merge_patch(&target, &json!({})), target);
        }

        /// Idempotent except where evanphx/json-patch (the model) is not: a non-object patch value replacing an
        /// object target is kept as sent, but pruned of nulls when it replaces a non-object, so a null inside an
        /// array's objects survives the first application and not the second. Such nulls are taken out first.
        #[test]
        fn prop_merge_patch_is_idempotent(target in arb_json(), patch in arb_json()) {
            fn without_nulls_in_arrays(v: &Value, in_array: bool) -> Value {
                match v {
                    Value::Array(a) => Value::Array(a.iter().map(|x| without_nulls_in_arrays(x, true)).collect()),
                    Value::Object(m) => Value::Object(
                        m.iter()
                            .filter(|(_, x)| !(in_array && x.is_null()))
                            .map(|(k, x)| (k.clone(), without_nulls_in_arrays(x, in_array)))
                            .collect(),
                    ),
                    other => other.clone(),
                }
            }
            let patch = without_nulls_in_arrays(&patch, false);
            let once = merge_patch(&target, &patch);
            prop_assert_eq!(merge_patch(&once, &patch), once);
        }

        #[test]
        fn prop_json_patch_never_panics(target in arb_json(), ops in prop::collection::vec(arb_op(), 0..6)) {
            let _ = json_patch(&target, &Value::Array(ops));
        }

        #[test]
        fn prop_json_patch_never_panics_on_arbitrary_bodies(target in arb_json(), ops in arb_json()) {
            let _ = json_patch(&target, &ops);
        }

        #[test]
        fn prop_json_patch_test_of_existing_value_is_noop(target in arb_object()) {
            for (key, value) in target.as_object().into_iter().flatten() {
                let ops = json!([{"op": "test", "path": format!("/{}", escape_token(key)), "value": value}]);
                prop_assert_eq!(json_patch(&target, &ops), Ok(target.clone()));
            }
        }

        #[test]
        fn prop_json_patch_add_then_remove_restores(target in arb_object(), key in "[a-z]{1,4}", value in arb_json()) {
            prop_assume!(target.get(&key).is_none());
            let path = format!("/{key}");
            let ops = json!([{"op": "add", "path": path, "value": value}, {"op": "remove", "path": path}]);
            prop_assert_eq!(json_patch(&target, &ops), Ok(target.clone()));
        }

        #[test]
        fn prop_smp_never_panics(original in arb_json(), patch in arb_json()) {
            for (group, kind) in [("", "Pod"), ("apps", "Deployment"), ("", "ConfigMap")] {
                if let Some(schema) = builtin_strategic_schema(group, kind) {
                    let _ = strategic_merge_patch(&original, &patch, schema.as_ref());
                }
            }
            let _ = strategic_merge_patch(&original, &patch, &UpstreamTestSchema);
        }

        #[test]
        fn prop_smp_never_panics_on_pod_shaped_input(
            names in prop::collection::vec(prop_oneof![Just("a"), Just("b"), Just("c")], 0..5),
            patch in arb_object(),
        ) {
            let containers: Vec<Value> = names.iter().map(|n| json!({"name": n, "env": [{"name": n}]})).collect();
            let pod = json!({"metadata": {"finalizers": names}, "spec": {"containers": containers}});
            let wrapped = json!({"metadata": patch.clone(), "spec": {"containers": [patch]}});
            let schema = builtin_strategic_schema("", "Pod").expect("Pod");
            let _ = strategic_merge_patch(&pod, &wrapped, schema.as_ref());
        }

        #[test]
        fn prop_smp_empty_patch_is_identity(original in arb_object()) {
            let schema = builtin_strategic_schema("", "Pod").expect("Pod");
            prop_assert_eq!(strategic_merge_patch(&original, &json!({}), schema.as_ref()), Ok(original));
        }

        #[test]
        fn prop_smp_agrees_with_merge_patch_on_plain_maps(
            original in prop::collection::btree_map("[a-z]{1,3}", "[a-z]{0,3}", 0..5),
            patch in prop::collection::btree_map("[a-z]{1,3}", proptest::option::of("[a-z]{0,3}"), 0..5),
        ) {
            // Without lists or directives, SMP on a string map is a JSON merge patch.
            let original = json!({"metadata": {"labels": original}});
            let patch = json!({"metadata": {"labels": patch}});
            let schema = builtin_strategic_schema("", "ConfigMap").expect("ConfigMap");
            prop_assert_eq!(strategic_merge_patch(&original, &patch, schema.as_ref()), Ok(merge_patch(&original, &patch)));
        }
    }
}
