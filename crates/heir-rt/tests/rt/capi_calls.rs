//! The C API's calls from Rust, without real-time priorities: the
//! membership pairs (tid 0 = the caller), the gang named on every gang
//! call, the timed push, the attributes, the static initialisers, and the
//! previous release's names, which still work.

use std::ptr;

use heir::capi::*;

/// The queue's item `n`: an opaque `void *` holding a number.
fn as_item(n: usize) -> *mut libc::c_void {
    n as *mut libc::c_void
}

fn zeroed<T>() -> T {
    // SAFETY: the handle structs are pointers and integers; all-zero is
    // their "not initialised" state.
    unsafe { std::mem::zeroed() }
}

fn after_ms(ms: i64) -> libc::timespec {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a local the call fills.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    let ns = t.tv_nsec + (ms % 1000) * 1_000_000;
    libc::timespec {
        tv_sec: t.tv_sec + ms / 1000 + ns / 1_000_000_000,
        tv_nsec: ns % 1_000_000_000,
    }
}

#[test]
fn queue_timedpush_times_out_on_a_full_queue_and_roles_come_in_pairs() {
    let mut q: heir_queue_t = zeroed();
    // SAFETY: `q` is a live handle struct; the items are plain integers.
    unsafe {
        assert_eq!(heir_queue_init(&mut q, 1), 0);
        assert_eq!(heir_queue_push(&mut q, as_item(1)), 0);
        let t0 = std::time::Instant::now();
        let soon = after_ms(20);
        assert_eq!(
            heir_queue_timedpush(&mut q, as_item(2), &soon),
            libc::ETIMEDOUT
        );
        assert!(t0.elapsed() >= std::time::Duration::from_millis(19));
        assert_eq!(
            heir_queue_timedpush(&mut q, as_item(2), ptr::null()),
            libc::EINVAL
        );
        let mut item = ptr::null_mut();
        assert_eq!(heir_queue_pop(&mut q, &mut item), 0);
        assert_eq!(item as usize, 1, "the timed-out push queued nothing");
        let later = after_ms(1000);
        assert_eq!(heir_queue_timedpush(&mut q, as_item(3), &later), 0);
        assert_eq!(heir_queue_timedpop(&mut q, &mut item, &later), 0);
        assert_eq!(item as usize, 3);

        assert_eq!(heir_queue_add_producer(&mut q, 0), 0);
        assert_eq!(heir_queue_add_producer(&mut q, heir_gettid()), libc::EEXIST);
        assert_eq!(heir_queue_remove_producer(&mut q, 0), 0);
        assert_eq!(heir_queue_remove_producer(&mut q, 0), libc::ENOENT);
        assert_eq!(heir_queue_add_consumer(&mut q, heir_gettid()), 0);
        assert_eq!(heir_queue_remove_consumer(&mut q, 0), 0);
        assert_eq!(heir_queue_remove_consumer(&mut q, 0), libc::ENOENT);
        assert_eq!(heir_queue_destroy(&mut q), 0);
        assert_eq!(heir_queue_push(&mut q, as_item(1)), libc::EINVAL);
    }
}

#[test]
fn gang_calls_name_their_gang() {
    let (mut g1, mut g2): (heir_gang_t, heir_gang_t) = (zeroed(), zeroed());
    let mut cw: u32 = 0;
    // SAFETY: live handle structs; `cw` outlives the membership (removed
    // below).
    unsafe {
        assert_eq!(heir_gang_init(&mut g1, ptr::null()), 0);
        let attr = heir_gang_attr_t { gpm: 0 };
        assert_eq!(heir_gang_init(&mut g2, &attr), 0);
        assert_eq!(heir_gang_add_member(&mut g1, 0, &mut cw), 0);
        let mut member = -1;
        assert_eq!(heir_gang_has_member(&mut g1, 0, &mut member), 0);
        assert_eq!(member, 1);
        assert_eq!(heir_gang_has_member(&mut g2, heir_gettid(), &mut member), 0);
        assert_eq!(member, 0);
        assert_eq!(
            heir_gang_has_member(&mut g1, 0, ptr::null_mut()),
            libc::EINVAL
        );
        // The other gang: not a member there.
        assert_eq!(heir_gang_remove_member(&mut g2, 0), libc::ENOENT);
        let mut counted = -1;
        assert_eq!(heir_gang_notify(&mut g2, &mut counted), libc::ENOENT);
        assert_eq!(counted, -1, "untouched on error");
        assert_eq!(heir_gang_notify(&mut g1, &mut counted), 0);
        assert_eq!(counted, 0, "no run counted it");

        // The control word: 0 or an errno, the word before in *before.
        let mut before = 0;
        assert_eq!(heir_gang_activate(&mut cw, 0b101, &mut before), 0);
        assert_eq!(before & HEIR_GANG_MASK_BITS, 0);
        assert_ne!(before & (1 << 29), 0, "HEIR_GANG_MEMBER");
        assert_eq!(heir_gang_deactivate(&mut cw, 0b1, &mut before), 0);
        assert_eq!(before & HEIR_GANG_MASK_BITS, 0b101);
        assert_eq!(
            heir_gang_activate(ptr::null_mut(), 1, &mut before),
            libc::EINVAL
        );
        let odd = (&mut cw as *mut u32 as usize + 1) as *mut u32;
        assert_eq!(heir_gang_activate(odd, 1, ptr::null_mut()), libc::EINVAL);

        // The previous release's names.
        let mut id = 0;
        let mut id1 = 0;
        assert_eq!(heir_gang_id(&mut g1, &mut id1), 0);
        assert_eq!(heir_gang_get(0, &mut id), 0);
        assert_eq!(id, id1);
        assert_eq!(
            heir_gang_set_active(&mut cw, 0b10) & HEIR_GANG_MASK_BITS,
            0b100
        );
        assert_eq!(
            heir_gang_set_passive(&mut cw, 0b110) & HEIR_GANG_MASK_BITS,
            0b110
        );

        assert_eq!(heir_gang_remove_member(&mut g1, 0), 0);
        assert_eq!(heir_gang_has_member(&mut g1, 0, &mut member), 0);
        assert_eq!(member, 0);
        assert_eq!(heir_gang_remove_member(&mut g1, 0), libc::ENOENT);
        assert_eq!(heir_gang_notify(&mut g1, ptr::null_mut()), libc::ENOENT);
        // Deprecated create/insert/remove/close still work.
        let mut g3: heir_gang_t = zeroed();
        assert_eq!(heir_gang_create(&mut g3, ptr::null()), 0);
        assert_eq!(heir_gang_insert(&mut g3, 0, &mut cw), 0);
        assert_eq!(heir_gang_remove(0), 0);
        assert_eq!(heir_gang_close(&mut g3), 0);
        assert_eq!(heir_gang_destroy(&mut g1), 0);
        assert_eq!(heir_gang_destroy(&mut g2), 0);
        assert_eq!(heir_gang_destroy(&mut g2), libc::EINVAL);
    }
}

/// The membership bits of a control word (`HEIR_GANG_MASK`).
const HEIR_GANG_MASK_BITS: u32 = 0x0FFF_FFFF;

#[test]
fn barrier_members_are_added_by_tid() {
    let mut b: heir_barrier_t = zeroed();
    let (tx, rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let other = std::thread::spawn(move || {
        tx.send(heir_gettid()).unwrap();
        done_rx.recv().unwrap();
    });
    let tid = rx.recv().unwrap();
    // SAFETY: a live handle struct.
    unsafe {
        assert_eq!(heir_barrier_init(&mut b, 1), 0);
        assert_eq!(heir_barrier_add_member(&mut b, tid, 1), 0);
        assert_eq!(heir_barrier_add_member(&mut b, tid, 1), libc::EEXIST);
        assert_eq!(heir_barrier_remove_member(&mut b, tid), 0);
        assert_eq!(heir_barrier_remove_member(&mut b, tid), libc::ENOENT);
        // The caller, by the old names.
        assert_eq!(heir_barrier_join(&mut b, 0), 0);
        assert_eq!(heir_barrier_leave(&mut b), 0);
        assert_eq!(heir_barrier_destroy(&mut b), 0);
    }
    done_tx.send(()).unwrap();
    other.join().unwrap();
}

#[test]
fn an_rpc_server_adds_itself_only() {
    let mut ep: heir_rpc_t = zeroed();
    // SAFETY: a live handle struct.
    unsafe {
        assert_eq!(heir_rpc_init(&mut ep), 0);
        assert_eq!(
            heir_rpc_add_server(&mut ep, 1, 0),
            libc::EINVAL,
            "init's tid"
        );
        assert_eq!(heir_rpc_add_server(&mut ep, 0, 0), 0);
        assert_eq!(heir_rpc_add_server(&mut ep, heir_gettid(), 0), libc::EBUSY);
        assert_eq!(heir_rpc_remove_server(&mut ep, 1), libc::EINVAL);
        assert_eq!(heir_rpc_remove_server(&mut ep, 0), 0);
        assert_eq!(heir_rpc_remove_server(&mut ep, 0), libc::EPERM);
        assert_eq!(heir_rpc_server_join(&mut ep, 0), 0);
        assert_eq!(heir_rpc_server_leave(&mut ep), 0);
        assert_eq!(heir_rpc_destroy(&mut ep), 0);
    }
}

#[test]
fn attributes_and_static_initialisers() {
    // SAFETY: live handle structs and locals.
    unsafe {
        let mut m: heir_mutex_t = zeroed();
        let shared = heir_mutex_attr_t {
            pshared: HEIR_PROCESS_SHARED,
        };
        assert_eq!(heir_mutex_init(&mut m, &shared), libc::ENOTSUP);
        let odd = heir_mutex_attr_t { pshared: 5 };
        assert_eq!(heir_mutex_init(&mut m, &odd), libc::EINVAL);
        assert_eq!(heir_mutex_lock(&mut m), libc::EINVAL, "never initialised");

        let mut c: heir_cond_t = zeroed();
        let bad = heir_cond_attr_t {
            pshared: HEIR_PROCESS_PRIVATE,
            lend: 7,
        };
        assert_eq!(heir_cond_init(&mut c, &bad), libc::EINVAL);
        assert_eq!(heir_cond_init_boost(&mut c, 7), libc::EINVAL);
        assert_eq!(heir_cond_init_boost(&mut c, HEIR_BOOST_USER), 0);
        assert_eq!(heir_cond_helpers_add(&mut c, 0), 0);
        assert_eq!(heir_cond_helpers_del(&mut c, 0), 0);
        assert_eq!(heir_cond_destroy(&mut c), 0);

        // Statically initialised: usable without init, destroyable used or
        // not, EINVAL after.
        let mut sm = heir_mutex_t::initializer();
        let mut sc = heir_cond_t::initializer();
        assert_eq!(heir_mutex_lock(&mut sm), 0);
        let soon = after_ms(10);
        assert_eq!(
            heir_cond_timedwait(&mut sc, &mut sm, &soon),
            libc::ETIMEDOUT
        );
        assert_eq!(heir_mutex_trylock(&mut sm), libc::EBUSY);
        assert_eq!(heir_mutex_destroy(&mut sm), libc::EBUSY);
        assert_eq!(heir_mutex_unlock(&mut sm), 0);
        assert_eq!(heir_mutex_destroy(&mut sm), 0);
        assert_eq!(heir_mutex_lock(&mut sm), libc::EINVAL);
        let mut unused = heir_cond_t::initializer();
        assert_eq!(heir_cond_destroy(&mut unused), 0);
        assert_eq!(heir_cond_signal(&mut unused), libc::EINVAL);
        assert_eq!(heir_cond_destroy(&mut sc), 0);
        let mut bad_ceiling = heir_ceiling_mutex_t::initializer(100);
        assert_eq!(heir_ceiling_mutex_lock(&mut bad_ceiling), libc::EINVAL);
        assert_eq!(heir_ceiling_mutex_destroy(&mut bad_ceiling), 0);

        // The old thread names.
        assert_eq!(heir_thread_join(), 0);
        assert_eq!(heir_thread_leave(), 0);
    }
}
