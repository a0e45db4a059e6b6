//! The budget of one evaluation, kept per thread: a deadline, a cancel
//! flag, an allocation budget and a floor under the stack, checked at
//! every step of the interpreter and at every allocation of a value.
//!
//! Running out stops the evaluation at once by unwinding its thread
//! ([`std::panic::resume_unwind`], which runs no panic hook): jq is a full
//! language (`def f: f; f`, `def f: 1 + f; f`) and jaq's interpreter has no
//! other exit. The unwinding ends in [`run_guarded`], on the evaluation's
//! own thread, which turns it into a [`Stop`].

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Why an evaluation was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The deadline passed.
    Timeout,
    /// The caller gave up (its own timeout, or a dropped future).
    Cancelled,
    /// The values built exceeded the allocation budget.
    Memory,
    /// Recursion came too close to the end of the thread's stack.
    Depth,
}

/// How many steps pass between two looks at the clock and the cancel flag.
const CLOCK_EVERY: u32 = 128;

/// The budget of the evaluation running on this thread.
struct Guard {
    armed: Cell<bool>,
    deadline: Cell<Option<Instant>>,
    ticks: Cell<u32>,
    alloc_left: Cell<usize>,
    stack_floor: Cell<usize>,
    cancel: RefCell<Option<Arc<AtomicBool>>>,
}

thread_local! {
    static GUARD: Guard = const {
        Guard {
            armed: Cell::new(false),
            deadline: Cell::new(None),
            ticks: Cell::new(0),
            alloc_left: Cell::new(usize::MAX),
            stack_floor: Cell::new(0),
            cancel: RefCell::new(None),
        }
    };
}

/// The limits one evaluation runs under.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    pub deadline: Instant,
    pub alloc_bytes: usize,
    /// Bytes of stack the evaluation may use below the point where it starts.
    pub stack_bytes: usize,
    pub cancel: Arc<AtomicBool>,
}

/// An address near the top of the current stack frame.
#[inline(always)]
fn stack_pointer() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

/// Runs `f` under `budget` on this thread; a stop anywhere inside becomes
/// `Err`. A real panic (a bug) is passed on unchanged.
pub(crate) fn run_guarded<T>(budget: Budget, f: impl FnOnce() -> T) -> Result<T, Stop> {
    GUARD.with(|g| {
        g.armed.set(true);
        g.deadline.set(Some(budget.deadline));
        g.ticks.set(0);
        g.alloc_left.set(budget.alloc_bytes);
        g.stack_floor
            .set(stack_pointer().saturating_sub(budget.stack_bytes));
        *g.cancel.borrow_mut() = Some(budget.cancel);
    });
    let result = catch_unwind(AssertUnwindSafe(f));
    GUARD.with(|g| {
        g.armed.set(false);
        g.cancel.borrow_mut().take();
    });
    match result {
        Ok(v) => Ok(v),
        Err(payload) => match payload.downcast::<Stop>() {
            Ok(stop) => Err(*stop),
            Err(other) => std::panic::resume_unwind(other),
        },
    }
}

/// Stops the evaluation running on this thread.
pub(crate) fn stop(reason: Stop) -> ! {
    std::panic::resume_unwind(Box::new(reason))
}

/// One step of evaluation: checks the stack at every step, the clock and
/// the cancel flag every [`CLOCK_EVERY`] steps.
#[inline]
pub(crate) fn tick() {
    GUARD.with(|g| {
        if !g.armed.get() {
            return;
        }
        if stack_pointer() < g.stack_floor.get() {
            stop(Stop::Depth);
        }
        let t = g.ticks.get().wrapping_add(1);
        g.ticks.set(t);
        if t % CLOCK_EVERY == 0 {
            check_clock(g);
        }
    })
}

#[cold]
fn check_clock(g: &Guard) {
    if g.deadline.get().is_some_and(|d| Instant::now() >= d) {
        stop(Stop::Timeout);
    }
    let cancelled = g
        .cancel
        .borrow()
        .as_ref()
        .is_some_and(|c| c.load(Ordering::Relaxed));
    if cancelled {
        stop(Stop::Cancelled);
    }
}

/// Charges `bytes` of new values to the allocation budget; stops the
/// evaluation, before the allocation, when it would exceed it.
#[inline]
pub(crate) fn charge(bytes: usize) {
    GUARD.with(|g| {
        if !g.armed.get() {
            return;
        }
        match g.alloc_left.get().checked_sub(bytes) {
            Some(left) => g.alloc_left.set(left),
            None => stop(Stop::Memory),
        }
    })
}

/// What is left of the allocation budget (everything when no evaluation
/// runs on this thread).
pub(crate) fn alloc_left() -> usize {
    GUARD.with(|g| {
        if g.armed.get() {
            g.alloc_left.get()
        } else {
            usize::MAX
        }
    })
}

/// Bytes charged for an array or object of `len` elements.
pub(crate) fn container_cost(len: usize) -> usize {
    CONTAINER_BYTES.saturating_add(len.saturating_mul(SLOT_BYTES))
}

/// Bytes charged for a string of `len` bytes.
pub(crate) fn string_cost(len: usize) -> usize {
    STRING_BYTES.saturating_add(len)
}

/// What a new array or object costs besides its slots. Deliberately more
/// than the allocator's real overhead: it also pays for the stack that
/// dropping, comparing or printing one more level of nesting takes, so the
/// allocation budget bounds the depth of values too (see `extract`'s docs).
const CONTAINER_BYTES: usize = 256;
/// One array slot or object entry.
pub(crate) const SLOT_BYTES: usize = 32;
/// What a new string costs besides its bytes.
const STRING_BYTES: usize = 32;
