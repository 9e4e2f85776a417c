//! Where the command line prints. `println!` panics when stdout is a pipe whose reader has
//! gone (`hypersaga audit tail | head -1`), and `eprintln!` likewise on stderr; every line the
//! CLI prints goes through here instead.
//!
//! A closed stdout becomes [`OutputError::Closed`], which the binary ends on quietly with
//! [`crate::exit::CLOSED_PIPE`] (141, what a shell reports for a tool that SIGPIPE stopped,
//! as `yes | head -1` does). Messages for people on stderr are best effort: if nobody reads
//! them, there is no one left to tell.

use std::fmt;
use std::io::{self, Write};
use std::os::fd::AsFd;

/// Why a line could not be printed on stdout.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The reader of stdout went away (a closed pipe): nothing more can be shown.
    #[error("the standard output was closed by its reader")]
    Closed,
    /// Anything else (a full disk, a revoked file).
    #[error("cannot write to the standard output")]
    Io(#[source] io::Error),
}

impl From<io::Error> for OutputError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Self::Closed
        } else {
            Self::Io(e)
        }
    }
}

/// Writes to stdout and flushes, so that a reader that left is noticed at this line, not at
/// exit, and a follower (`watch`, `audit tail`) piped into another tool shows each line as
/// it comes.
pub fn write_out(args: fmt::Arguments<'_>) -> Result<(), OutputError> {
    write_to(&mut io::stdout().lock(), args)
}

/// [`write_out`] to any writer (the tests use a closed one).
pub fn write_to(w: &mut impl Write, args: fmt::Arguments<'_>) -> Result<(), OutputError> {
    w.write_fmt(args)?;
    w.flush()?;
    Ok(())
}

/// Writes to stderr, ignoring failure: see the module's doc.
pub fn write_err(args: fmt::Arguments<'_>) {
    let mut e = io::stderr().lock();
    let _ = e.write_fmt(args);
    let _ = e.flush();
}

/// Whether `e` (or what caused it) is stdout closed by its reader.
pub fn is_closed(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| matches!(c.downcast_ref::<OutputError>(), Some(OutputError::Closed)))
}

/// Resolves once stdout is a pipe whose reader has gone, even while nothing is printed: a
/// follower that waits for the next event (`audit tail | head -1`) ends then, as `tail -f`
/// does, rather than at its next line, which may be hours away. Never resolves when stdout is
/// not something the OS can watch (a file, `/dev/null`) or cannot close under us.
pub async fn stdout_closed() {
    let (tx, rx) = tokio::sync::oneshot::channel();
    // poll(2) blocks: a thread of its own, which ends with the process (a blocking task of
    // the runtime would hold its shutdown up).
    let watch = std::thread::Builder::new()
        .name("stdout-watch".into())
        .spawn(move || {
            let stdout = io::stdout();
            if hung_up(stdout.as_fd()) {
                let _ = tx.send(());
            }
        });
    if watch.is_err() || rx.await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Blocks until the write end `fd` reports its reader gone (`POLLERR` on a pipe, `POLLHUP`
/// on a socket or a terminal); `false` when it cannot be watched. Asking for no event at all,
/// a file or `/dev/null` never reports one, so the call then blocks for good without a spin.
fn hung_up(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let mut fds = [PollFd::new(fd, PollFlags::empty())];
    loop {
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {
                let seen = fds[0].revents().unwrap_or(PollFlags::empty());
                if seen.intersects(PollFlags::POLLERR | PollFlags::POLLHUP) {
                    return true;
                }
                if seen.contains(PollFlags::POLLNVAL) {
                    return false;
                }
            }
            Err(nix::errno::Errno::EINTR) => {}
            Err(_) => return false,
        }
    }
}

/// `println!` that returns [`OutputError`] instead of panicking.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::console::write_out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::console::write_out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` that returns [`OutputError`] instead of panicking.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::console::write_out(format_args!($($arg)*))
    };
}

/// `eprintln!` that never panics.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::console::write_err(format_args!("{}\n", format_args!($($arg)*)))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose reader has gone.
    struct ClosedPipe;

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_is_an_error_the_binary_recognises_not_a_panic() {
        let e = write_to(&mut ClosedPipe, format_args!("line\n")).unwrap_err();
        assert!(matches!(e, OutputError::Closed), "{e:?}");
        let e = anyhow::Error::new(e).context("printing the cluster");
        assert!(is_closed(&e));
        assert!(!is_closed(&anyhow::anyhow!("something else")));
        let full = io::Error::from(io::ErrorKind::StorageFull);
        assert!(matches!(OutputError::from(full), OutputError::Io(_)));
    }

    #[test]
    fn a_pipe_whose_reader_left_is_noticed_while_idle() {
        // stdout of the test process is not ours to close: a pipe of its own.
        let (reader, writer) = io::pipe().expect("pipe");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(hung_up(writer.as_fd())));
        let wait = std::time::Duration::from_millis(100);
        assert!(rx.recv_timeout(wait).is_err(), "an open pipe is not closed");
        drop(reader);
        let noticed = rx.recv_timeout(std::time::Duration::from_secs(5));
        assert_eq!(noticed, Ok(true));
    }
}
