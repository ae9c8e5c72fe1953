//! The C ABI of libhelm_c (signatures from the 0.2.2 wheel's `_native.py` table)
//! and the calling conventions around it: out-strings allocated by the library and freed exactly once with
//! `helm_free_string`, an `int32` status with an optional error string, `uint64` handles. All `unsafe` of the
//! crate is here or in the one-line closures that name a function.

use std::ffi::c_char;
use std::path::Path;

use crate::{ErrorCode, HelmError, Result, take_string};

type Str = *const c_char;
type Out = *mut *mut c_char;
type Handle = u64;
/// install and upgrade: (config, context, chart, chart reference, release, values, options, out, err).
pub(crate) type ActionFn =
    unsafe extern "C" fn(Handle, Handle, Handle, Str, Str, Str, Str, Out, Out) -> i32;
/// uninstall, status, history and test: (config, release, options, out, err).
pub(crate) type NamedFn = unsafe extern "C" fn(Handle, Str, Str, Out, Out) -> i32;

/// The library's functions this wrapper uses, resolved once at load.
pub(crate) struct Functions {
    pub c_version: unsafe extern "C" fn() -> *mut c_char,
    pub sdk_version: unsafe extern "C" fn() -> *mut c_char,
    pub free_string: unsafe extern "C" fn(*mut c_char),
    pub open_handles_count: unsafe extern "C" fn() -> i64,
    pub chart_create: unsafe extern "C" fn(Str, Str, Out, Out) -> i32,
    pub chart_load: unsafe extern "C" fn(Str, *mut Handle, Out) -> i32,
    pub chart_load_archive: unsafe extern "C" fn(*const u8, u64, *mut Handle, Out) -> i32,
    pub chart_metadata: unsafe extern "C" fn(Handle, Out, Out) -> i32,
    pub chart_free: unsafe extern "C" fn(Handle, Out) -> i32,
    pub chart_save: unsafe extern "C" fn(Handle, Str, Out, Out) -> i32,
    pub render: unsafe extern "C" fn(Handle, Str, Str, Out, Out) -> i32,
    pub config_new: unsafe extern "C" fn(Str, *mut Handle, Out) -> i32,
    pub config_free: unsafe extern "C" fn(Handle, Out) -> i32,
    pub context_new: unsafe extern "C" fn(*mut Handle, Out) -> i32,
    pub context_cancel: unsafe extern "C" fn(Handle, Out) -> i32,
    pub context_free: unsafe extern "C" fn(Handle, Out) -> i32,
    pub install: ActionFn,
    pub upgrade: ActionFn,
    pub uninstall: NamedFn,
    pub status: NamedFn,
    pub history: NamedFn,
    pub test_run: NamedFn,
    pub rollback: unsafe extern "C" fn(Handle, Str, Str, Out) -> i32,
    pub list: unsafe extern "C" fn(Handle, Str, Out, Out) -> i32,
    pub repo_index_generate: unsafe extern "C" fn(Str, Str, Out, Out) -> i32,
    pub push: unsafe extern "C" fn(Handle, Str, Str, Str, Out, Out) -> i32,
    /// (registry client or 0, chart reference, options, out, err).
    pub show: unsafe extern "C" fn(Handle, Str, Str, Out, Out) -> i32,
    pub registry_client_new: unsafe extern "C" fn(Str, *mut Handle, Out) -> i32,
    pub registry_client_free: unsafe extern "C" fn(Handle, Out) -> i32,
    /// (client, host, username, password, options, err).
    pub registry_login: unsafe extern "C" fn(Handle, Str, Str, Str, Str, Out) -> i32,
    pub config_set_registry_client: unsafe extern "C" fn(Handle, Handle, Out) -> i32,
    /// (chart directory, values, out, err): `helm lint`.
    pub lint_run: unsafe extern "C" fn(Str, Str, Out, Out) -> i32,
}

/// libhelm_c, loaded for the life of the process.
pub struct Library {
    f: Functions,
}

impl Library {
    /// Loads the library and resolves its functions. The library is never unloaded: the Go runtime it starts
    /// has threads that cannot be stopped, so unloading would pull code from under them.
    pub fn open(path: &Path) -> Result<Library> {
        let load_error = |reason: String| HelmError::Load {
            path: path.display().to_string(),
            reason,
        };
        // SAFETY: loading runs the library's initialisers (the Go runtime's start), which is what using it means.
        let lib =
            unsafe { libloading::Library::new(path) }.map_err(|e| load_error(e.to_string()))?;
        let lib: &'static libloading::Library = Box::leak(Box::new(lib));
        macro_rules! symbol {
            ($name:literal) => {{
                // SAFETY: the symbol's type is the signature the library exports under this name (`_native.py`);
                // the library lives for the rest of the process, so the copied function pointer stays valid.
                let s = unsafe { lib.get($name) }.map_err(|e| {
                    load_error(format!("{}: {e}", String::from_utf8_lossy($name)))
                })?;
                *s
            }};
        }
        let f = Functions {
            c_version: symbol!(b"helm_c_version"),
            sdk_version: symbol!(b"helm_sdk_version"),
            free_string: symbol!(b"helm_free_string"),
            open_handles_count: symbol!(b"helm_open_handles_count"),
            chart_create: symbol!(b"helm_chart_create"),
            chart_load: symbol!(b"helm_chart_load"),
            chart_load_archive: symbol!(b"helm_chart_load_archive"),
            chart_metadata: symbol!(b"helm_chart_metadata"),
            chart_free: symbol!(b"helm_chart_free"),
            chart_save: symbol!(b"helm_chart_save"),
            render: symbol!(b"helm_render"),
            config_new: symbol!(b"helm_config_new"),
            config_free: symbol!(b"helm_config_free"),
            context_new: symbol!(b"helm_context_new"),
            context_cancel: symbol!(b"helm_context_cancel"),
            context_free: symbol!(b"helm_context_free"),
            install: symbol!(b"helm_install"),
            upgrade: symbol!(b"helm_upgrade"),
            uninstall: symbol!(b"helm_uninstall"),
            status: symbol!(b"helm_status"),
            history: symbol!(b"helm_history"),
            test_run: symbol!(b"helm_test_run"),
            rollback: symbol!(b"helm_rollback"),
            list: symbol!(b"helm_list"),
            repo_index_generate: symbol!(b"helm_repo_index_generate"),
            push: symbol!(b"helm_push"),
            show: symbol!(b"helm_show"),
            registry_client_new: symbol!(b"helm_registry_client_new"),
            registry_client_free: symbol!(b"helm_registry_client_free"),
            registry_login: symbol!(b"helm_registry_login"),
            config_set_registry_client: symbol!(b"helm_config_set_registry_client"),
            lint_run: symbol!(b"helm_lint_run"),
        };
        Ok(Library { f })
    }

    /// Copies and frees a string the library allocated.
    fn take(&self, ptr: *mut c_char) -> String {
        let s = take_string(ptr);
        if !ptr.is_null() {
            // SAFETY: `ptr` came from the library and is freed exactly once, here.
            unsafe { (self.f.free_string)(ptr) };
        }
        s
    }

    pub fn c_version(&self) -> String {
        // SAFETY: no arguments; the result is a library string, taken once.
        let p = unsafe { (self.f.c_version)() };
        self.take(p)
    }

    pub fn sdk_version(&self) -> String {
        // SAFETY: as for `c_version`.
        let p = unsafe { (self.f.sdk_version)() };
        self.take(p)
    }

    pub fn open_handles_count(&self) -> i64 {
        // SAFETY: no arguments, no pointers.
        unsafe { (self.f.open_handles_count)() }
    }

    fn status_result(&self, call: &'static str, code: i32, err: *mut c_char) -> Result<()> {
        let message = self.take(err);
        if code == 0 {
            return Ok(());
        }
        Err(HelmError::Call {
            call,
            code: ErrorCode::from_code(code),
            message,
        })
    }

    /// A call with a string result: `f(functions, &mut out, &mut err) -> status`.
    pub(crate) fn call_out(
        &self,
        call: &'static str,
        f: impl FnOnce(&Functions, Out, Out) -> i32,
    ) -> Result<String> {
        let mut out: *mut c_char = std::ptr::null_mut();
        let mut err: *mut c_char = std::ptr::null_mut();
        let code = f(&self.f, &mut out, &mut err);
        let text = self.take(out);
        self.status_result(call, code, err)?;
        Ok(text)
    }

    /// A call that makes a handle.
    pub(crate) fn call_handle(
        &self,
        call: &'static str,
        f: impl FnOnce(&Functions, *mut Handle, Out) -> i32,
    ) -> Result<u64> {
        let mut handle: Handle = 0;
        let mut err: *mut c_char = std::ptr::null_mut();
        let code = f(&self.f, &mut handle, &mut err);
        self.status_result(call, code, err)?;
        Ok(handle)
    }

    /// A call with only a status.
    pub(crate) fn call_status(
        &self,
        call: &'static str,
        f: impl FnOnce(&Functions, Out) -> i32,
    ) -> Result<()> {
        let mut err: *mut c_char = std::ptr::null_mut();
        let code = f(&self.f, &mut err);
        self.status_result(call, code, err)
    }

    /// Frees a handle; a handle already gone (`InvalidHandle`) is harmless, as the library documents.
    pub(crate) fn free(
        &self,
        call: &'static str,
        handle: u64,
        select: impl FnOnce(&Functions) -> unsafe extern "C" fn(Handle, Out) -> i32,
    ) {
        let free = select(&self.f);
        // SAFETY: a handle this crate made and owns; freeing twice is reported, not undefined.
        let _ = self.call_status(call, |_, err| unsafe { free(handle, err) });
    }
}
