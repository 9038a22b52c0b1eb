//! The chain walk's own form of an effective urgency ([`Eff`]): the
//! public [`Effective`] packed into three machine words, so that storing,
//! copying and comparing one along a chain of hundreds of tasks costs a few
//! instructions (the public enums are copied and compared variant by
//! variant). Converted back at the edges: [`crate::Changes`], queries,
//! the invariant checker.

use crate::{Effective, ObjId, Source, TaskId, Urgency};

/// An [`Urgency`] as a key whose derived order (class, then value) is the
/// urgency's order: greater is more urgent. A bijection: [`Key::urgency`]
/// gives back the value it was made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Key {
    /// 0 `Other`, 1 `Fixed`, 2 `Deadline` (compared first). A whole word:
    /// a key without padding is copied as two words.
    class: u64,
    /// Within the class, greater is more urgent: `127 - nice`, the
    /// priority, `u64::MAX - abs_ns`.
    value: u64,
}

impl Key {
    #[inline]
    pub fn of(u: Urgency) -> Key {
        match u {
            Urgency::Other { nice } => Key {
                class: 0,
                value: (127 - i64::from(nice)) as u64,
            },
            Urgency::Fixed { prio } => Key {
                class: 1,
                value: u64::from(prio),
            },
            Urgency::Deadline { abs_ns } => Key {
                class: 2,
                value: u64::MAX - abs_ns,
            },
        }
    }

    #[inline]
    pub fn urgency(self) -> Urgency {
        match self.class {
            0 => Urgency::Other {
                nice: (127 - self.value as i64) as i8,
            },
            1 => Urgency::Fixed {
                prio: self.value as u8,
            },
            _ => Urgency::Deadline {
                abs_ns: u64::MAX - self.value,
            },
        }
    }
}

/// A [`Source`] in one word: the object's slot in the high half
/// (`u32::MAX` for a task's base: no arena slot has that index), the
/// task's slot in the low half. Generations are not kept: a source names
/// live tasks and objects only (the invariants check it), whose
/// generations the arenas hold ([`Src::source`] reads them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Src(u64);

impl Src {
    const TASK: u64 = (u32::MAX as u64) << 32;

    #[inline]
    pub fn task(t: TaskId) -> Src {
        Src(Src::TASK | u64::from(t.0))
    }

    #[inline]
    pub fn floor(object: ObjId, task: TaskId) -> Src {
        Src((u64::from(object.0) << 32) | u64::from(task.0))
    }

    /// The source, with the generations of the slots it names.
    #[inline]
    pub fn source(self, task_gen: impl Fn(u32) -> u32, obj_gen: impl Fn(u32) -> u32) -> Source {
        let slot = self.0 as u32;
        let task = TaskId(slot, task_gen(slot));
        match (self.0 >> 32) as u32 {
            u32::MAX => Source::Task(task),
            o => Source::Floor {
                object: ObjId(o, obj_gen(o)),
                task,
            },
        }
    }

    #[cfg(test)]
    pub fn of(s: Source) -> Src {
        match s {
            Source::Task(t) => Src::task(t),
            Source::Floor { object, task } => Src::floor(object, task),
        }
    }
}

/// An [`Effective`] as the walk keeps it (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Eff {
    pub key: Key,
    pub src: Src,
}

impl Eff {
    /// A task's own base: `Effective { urgency: base, source: Task(t) }`.
    #[inline]
    pub fn own(t: TaskId, base: Urgency) -> Eff {
        Eff {
            key: Key::of(base),
            src: Src::task(t),
        }
    }

    /// The public form, with the generations of the slots its source
    /// names (see [`Src::source`]).
    #[inline]
    pub fn public(self, task_gen: impl Fn(u32) -> u32, obj_gen: impl Fn(u32) -> u32) -> Effective {
        Effective {
            urgency: self.key.urgency(),
            source: self.src.source(task_gen, obj_gen),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_like_urgencies_and_convert_back() {
        let mut us: Vec<Urgency> = Vec::new();
        for nice in [i8::MIN, -20, -1, 0, 1, 19, i8::MAX] {
            us.push(Urgency::other(nice));
        }
        for prio in [0, 1, 50, 99, u8::MAX] {
            us.push(Urgency::fixed(prio));
        }
        for abs in [0, 1, 1_000, u64::MAX - 1, u64::MAX] {
            us.push(Urgency::deadline(abs));
        }
        for &a in &us {
            assert_eq!(Key::of(a).urgency(), a);
            for &b in &us {
                assert_eq!(Key::of(a).cmp(&Key::of(b)), a.cmp(&b), "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn sources_convert_back() {
        for s in [
            Source::Task(TaskId(0, 0)),
            Source::Task(TaskId(u32::MAX, 3)),
            Source::Floor {
                object: ObjId(0, 5),
                task: TaskId(7, 3),
            },
            Source::Floor {
                object: ObjId(u32::MAX - 1, 5),
                task: TaskId(u32::MAX, 3),
            },
        ] {
            // The generations come from the arenas: 3 for tasks, 5 for
            // objects here.
            let gens = |t: TaskId| if t.0 == 0 { 0 } else { 3 };
            let back = Src::of(s).source(|t| gens(TaskId(t, 0)), |_| 5);
            assert_eq!(back, s);
        }
    }
}
