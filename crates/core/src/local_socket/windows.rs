//! Who may use the app's named pipe on Windows. A pipe name is global to the machine, so
//! another account could create ours first and hear every `lifeline connect` bridge. Three
//! defences, each enough to stop that:
//!
//! - the name carries the current user's SID, so two accounts never look for the same pipe;
//! - the pipe is made with a protected DACL whose one entry is the current user (`D:P(A;;GA;;;SID)`),
//!   so no other account can open it or add an instance to it;
//! - a client asks the pipe which process serves it (`GetNamedPipeServerProcessId`) and reads
//!   that process's token user before it sends a byte: a pipe served by anyone else is refused.

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::ptr::null_mut;
use std::sync::OnceLock;
use windows_sys::Win32::Foundation::{HANDLE, LocalFree};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW, SDDL_REVISION_1,
};
use windows_sys::Win32::Security::{
    GetTokenInformation, PSECURITY_DESCRIPTOR, SECURITY_ATTRIBUTES, TOKEN_QUERY, TOKEN_USER,
    TokenUser,
};
use windows_sys::Win32::System::Pipes::GetNamedPipeServerProcessId;
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, OpenProcess, OpenProcessToken, PROCESS_QUERY_LIMITED_INFORMATION,
};

/// The current user's SID (`S-1-5-21-…`), read once from this process's token.
pub fn current_user() -> io::Result<&'static str> {
    static USER: OnceLock<Result<String, String>> = OnceLock::new();
    USER.get_or_init(|| {
        // SAFETY: the pseudo handle of the current process needs no closing and is always valid.
        token_user(unsafe { GetCurrentProcess() }).map_err(|e| e.to_string())
    })
    .as_deref()
    .map_err(|e| io::Error::other(format!("cannot read this process's user ({e})")))
}

/// The string SID of the user whose token `process` runs with.
fn token_user(process: HANDLE) -> io::Result<String> {
    let mut token: HANDLE = null_mut();
    // SAFETY: `token` is written only on success, and then owned below.
    if unsafe { OpenProcessToken(process, TOKEN_QUERY, &mut token) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a token handle just opened, closed once when this drops.
    let token = unsafe { OwnedHandle::from_raw_handle(token) };
    let mut len = 0u32;
    // SAFETY: a size query: no buffer, `len` receives the size needed.
    unsafe { GetTokenInformation(token.as_raw_handle(), TokenUser, null_mut(), 0, &mut len) };
    if len == 0 {
        return Err(io::Error::last_os_error());
    }
    // u64s, so the buffer is aligned for the TOKEN_USER (pointers) written into it.
    let mut buf = vec![0u64; (len as usize).div_ceil(8)];
    // SAFETY: the buffer holds `len` bytes, as the size query asked.
    let ok = unsafe {
        GetTokenInformation(
            token.as_raw_handle(),
            TokenUser,
            buf.as_mut_ptr().cast(),
            len,
            &mut len,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: GetTokenInformation(TokenUser) filled the aligned buffer with a TOKEN_USER whose
    // SID points into the same buffer, which lives until the end of this function.
    let sid = unsafe { (*buf.as_ptr().cast::<TOKEN_USER>()).User.Sid };
    let mut text: *mut u16 = null_mut();
    // SAFETY: `sid` is valid (above); `text` is allocated by the call and freed below.
    if unsafe { ConvertSidToStringSidW(sid, &mut text) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a NUL-terminated wide string from ConvertSidToStringSidW.
    let shown = unsafe {
        let n = (0..).take_while(|&i| *text.add(i) != 0).count();
        String::from_utf16_lossy(std::slice::from_raw_parts(text, n))
    };
    // SAFETY: allocated by ConvertSidToStringSidW with LocalAlloc.
    unsafe { LocalFree(text.cast()) };
    Ok(shown)
}

/// A security descriptor that lets only `user` in, for every instance of the pipe.
pub struct OnlyUser {
    descriptor: PSECURITY_DESCRIPTOR,
}

// SAFETY: the descriptor is immutable once made and only read by CreateNamedPipeW.
unsafe impl Send for OnlyUser {}
unsafe impl Sync for OnlyUser {}

impl OnlyUser {
    /// The SDDL of the pipe's DACL: protected (no inherited entries), one entry granting
    /// `user` everything, and nothing for anyone else.
    pub fn sddl(user: &str) -> String {
        format!("D:P(A;;GA;;;{user})")
    }

    pub fn new(user: &str) -> io::Result<OnlyUser> {
        let sddl: Vec<u16> = Self::sddl(user).encode_utf16().chain([0]).collect();
        let mut descriptor: PSECURITY_DESCRIPTOR = null_mut();
        // SAFETY: a NUL-terminated SDDL; the descriptor is allocated by the call and freed in Drop.
        let ok = unsafe {
            ConvertStringSecurityDescriptorToSecurityDescriptorW(
                sddl.as_ptr(),
                SDDL_REVISION_1,
                &mut descriptor,
                null_mut(),
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(OnlyUser { descriptor })
    }

    /// The attributes to create a pipe instance with; valid while `self` lives.
    pub fn attributes(&self) -> SECURITY_ATTRIBUTES {
        SECURITY_ATTRIBUTES {
            nLength: std::mem::size_of::<SECURITY_ATTRIBUTES>() as u32,
            lpSecurityDescriptor: self.descriptor,
            bInheritHandle: 0,
        }
    }
}

impl Drop for OnlyUser {
    fn drop(&mut self) {
        // SAFETY: allocated by ConvertStringSecurityDescriptorToSecurityDescriptorW.
        unsafe { LocalFree(self.descriptor) };
    }
}

/// The user of the process that serves the pipe `pipe` (a client's handle).
pub fn server_user(pipe: HANDLE) -> io::Result<String> {
    let mut pid = 0u32;
    // SAFETY: `pid` receives the server's process id.
    if unsafe { GetNamedPipeServerProcessId(pipe, &mut pid) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a query-only handle to that process, owned below.
    let process = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if process.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: just opened; closed once when this drops.
    let process = unsafe { OwnedHandle::from_raw_handle(process) };
    token_user(process.as_raw_handle())
}

/// Refuses a pipe unless the process serving it runs as `expected`: before a client sends
/// anything, so a pipe made by another account under our name hears nothing.
pub fn check_server(pipe: HANDLE, expected: &str) -> io::Result<()> {
    match server_user(pipe) {
        Ok(user) if user == expected => Ok(()),
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the app's named pipe is served by another user's process: refusing to use it \
             (another account may be impersonating Lifeline; quit the other session's app)",
        )),
        Err(e) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("cannot tell which user serves the app's named pipe ({e}): refusing to use it"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Security::Authorization::{
        ConvertSecurityDescriptorToStringSecurityDescriptorW, GetSecurityInfo, SE_KERNEL_OBJECT,
    };
    use windows_sys::Win32::Security::DACL_SECURITY_INFORMATION;

    /// The DACL of a kernel object, as SDDL.
    fn dacl_of(handle: HANDLE) -> String {
        let mut descriptor: PSECURITY_DESCRIPTOR = null_mut();
        // SAFETY: out-pointers only; the descriptor is freed below.
        let status = unsafe {
            GetSecurityInfo(
                handle,
                SE_KERNEL_OBJECT,
                DACL_SECURITY_INFORMATION,
                null_mut(),
                null_mut(),
                null_mut(),
                null_mut(),
                &mut descriptor,
            )
        };
        assert_eq!(status, 0, "GetSecurityInfo failed");
        let mut text: *mut u16 = null_mut();
        // SAFETY: `descriptor` is valid; `text` is allocated by the call and freed below.
        let ok = unsafe {
            ConvertSecurityDescriptorToStringSecurityDescriptorW(
                descriptor,
                SDDL_REVISION_1,
                DACL_SECURITY_INFORMATION,
                &mut text,
                null_mut(),
            )
        };
        assert_ne!(ok, 0, "the descriptor has no SDDL form");
        // SAFETY: a NUL-terminated wide string; both allocations came from LocalAlloc.
        unsafe {
            let n = (0..).take_while(|&i| *text.add(i) != 0).count();
            let sddl = String::from_utf16_lossy(std::slice::from_raw_parts(text, n));
            LocalFree(text.cast());
            LocalFree(descriptor);
            sddl
        }
    }

    #[test]
    fn the_user_is_a_sid() {
        let user = current_user().unwrap();
        assert!(user.starts_with("S-1-"), "{user}");
        assert_eq!(OnlyUser::sddl(user), format!("D:P(A;;GA;;;{user})"));
    }

    #[tokio::test]
    async fn the_pipe_lets_in_only_its_user_and_its_clients_check_who_serves_it() {
        let dir = tempfile::tempdir().unwrap();
        let listener = super::super::Listener::bind(dir.path()).unwrap();
        let user = current_user().unwrap();
        // One entry, for this user, and no inherited ones.
        let dacl = dacl_of(listener.next.as_raw_handle());
        assert!(dacl.starts_with("D:P("), "{dacl}");
        assert_eq!(dacl.matches('(').count(), 1, "{dacl}");
        assert!(dacl.ends_with(&format!(";;;{user})")), "{dacl}");

        let name = super::super::pipe_name(user, dir.path());
        let client = tokio::net::windows::named_pipe::ClientOptions::new()
            .open(&name)
            .unwrap();
        assert_eq!(server_user(client.as_raw_handle()).unwrap(), user);
        check_server(client.as_raw_handle(), user).expect("our own server is accepted");
        // As another account would see this pipe: the server is not its user.
        let refused = check_server(client.as_raw_handle(), "S-1-5-18").unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::PermissionDenied);
        assert!(refused.to_string().contains("another user"), "{refused}");
    }

    #[tokio::test]
    async fn a_pipe_someone_else_made_first_is_never_joined() {
        let dir = tempfile::tempdir().unwrap();
        let name = super::super::pipe_name(current_user().unwrap(), dir.path());
        let _squatter = tokio::net::windows::named_pipe::ServerOptions::new()
            .create(&name)
            .unwrap();
        assert!(super::super::Listener::bind(dir.path()).is_err());
    }
}
