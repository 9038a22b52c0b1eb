//! A traced run as a `trace.dat` file (`heir run --trace-dat OUT.dat`,
//! docs/TRACING.md): what `trace-cmd report` and KernelShark read.
//!
//! The instance of [`crate::tracefs`] records the run in the kernel's ring
//! buffer. After [`Instance::collect`] has read its text `trace` (which
//! does not consume the buffer), [`collect`] also reads each CPU's
//! `per_cpu/cpuN/trace_pipe_raw` — the ring buffer's own pages, consumed
//! — and, from tracefs, what a reader needs to decode them: the page and
//! event headers (`events/header_page`, `events/header_event`), the
//! formats of the `ftrace` events (heir's markers are `print` events) and
//! of the `sched` system's events, `printk_formats`, and from
//! `/proc/kallsyms` the one function the markers' `print` events name. The process
//! names (pid → comm) come from the run's own `sched_switch` records
//! (the names the kernel gave the threads), then, for the other pids the
//! records name, from tracefs' `saved_cmdlines`.
//!
//! [`DatCapture::write`] writes them in trace-cmd's file format version 6
//! (trace-cmd.dat.v6(5)): the magic and `tracing`, the version, the byte
//! order, the size of a `long` and the ring buffer's page size; the two
//! headers; the ftrace formats, the event systems' formats; kallsyms
//! (empty: the events recorded print no kernel addresses); printk formats;
//! cmdlines; the CPU count; no options; `flyrecord`, each CPU's offset and
//! size; then each CPU's pages, page-aligned in the file, as the kernel
//! gave them.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::tracefs::{io as io_err, parse_text, Instance, RecordKind, Recorded, TraceError};

/// The file format version written.
pub const VERSION: u8 = 6;

/// The magic bytes that start a trace.dat file, before `tracing`.
pub const MAGIC: [u8; 3] = [0x17, 0x08, 0x44];

/// The event systems whose formats go into the file besides `ftrace`:
/// those of [`crate::tracefs::EVENTS`] and `sched_process_fork`.
pub const SYSTEMS: [&str; 1] = ["sched"];

/// What a trace.dat needs, read from an instance after its run.
#[derive(Clone, Debug, Default)]
pub struct DatCapture {
    /// The ring buffer's page (sub-buffer) size, bytes.
    pub page_size: u32,
    header_page: Vec<u8>,
    header_event: Vec<u8>,
    ftrace: Vec<Vec<u8>>,
    systems: Vec<(String, Vec<Vec<u8>>)>,
    printk: Vec<u8>,
    kallsyms: Vec<u8>,
    /// pid → comm.
    comms: BTreeMap<i32, String>,
    /// Per CPU (index = CPU number), its pages as read.
    cpus: Vec<Vec<u8>>,
}

/// A tracefs file, read with one large first `read`: some (the headers)
/// answer a later `read` with nothing when the first one was short.
fn read(path: &Path) -> Result<Vec<u8>, TraceError> {
    let mut out = Vec::with_capacity(1 << 16);
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut out))
        .map_err(io_err(path))?;
    Ok(out)
}

/// The `format` files of the events of `dir` (an `events/SYSTEM`
/// directory), by event name; events without a readable one are left out.
fn formats(dir: &Path) -> Result<Vec<Vec<u8>>, TraceError> {
    let mut names: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(io_err(dir))?
        .flatten()
        .map(|e| e.path().join("format"))
        .filter(|p| p.is_file())
        .collect();
    names.sort();
    Ok(names.iter().filter_map(|p| read(p).ok()).collect())
}

/// Reads `trace_pipe_raw` without blocking until it is empty: whole pages
/// (the last one partly filled, as the kernel copies it out).
fn read_raw(path: &Path, page_size: usize) -> Result<Vec<u8>, TraceError> {
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io_err(path))?;
    let mut out = Vec::new();
    let mut page = vec![0u8; page_size];
    loop {
        match f.read(&mut page) {
            Ok(0) => break,
            Ok(n) => {
                out.extend_from_slice(&page[..n]);
                // A short read is padded to a page: the file's CPU data is
                // read page by page.
                out.resize(out.len().next_multiple_of(page_size), 0);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_err(path)(e)),
        }
    }
    Ok(out)
}

/// The page size a `header_page` format implies: its `data` field's
/// offset plus size.
fn page_from_header(header: &str) -> Option<u32> {
    let line = header.lines().find(|l| l.contains(" data;"))?;
    let value = |key: &str| -> Option<u32> {
        let rest = &line[line.find(key)? + key.len()..];
        rest[..rest.find(';')?].trim().parse().ok()
    };
    Some(value("offset:")? + value("size:")?)
}

/// From `/proc/kallsyms`, the function whose address heir's markers
/// (`print` events) carry, `tracing_mark_write`, and the text symbol
/// after it (where it ends): a reader names the marker's `ip` by them.
/// Nothing when the addresses are hidden (`kptr_restrict`: all zero).
fn marker_symbols(kallsyms: &str) -> Vec<u8> {
    fn text(l: &str) -> Option<(u64, &str)> {
        let mut f = l.split_whitespace();
        let addr = u64::from_str_radix(f.next()?, 16).ok()?;
        let kind = f.next()?;
        let name = f.next()?;
        (addr != 0 && matches!(kind, "t" | "T") && f.next().is_none()).then_some((addr, name))
    }
    let lines: Vec<&str> = kallsyms.lines().collect();
    let Some((at, _)) = lines
        .iter()
        .filter_map(|l| text(l))
        .find(|(_, n)| *n == "tracing_mark_write")
    else {
        return Vec::new();
    };
    let next = lines
        .iter()
        .filter_map(|l| text(l))
        .filter(|(a, _)| *a > at)
        .min_by_key(|(a, _)| *a);
    let mut out = format!("{at:016x} t tracing_mark_write\n");
    if let Some((a, n)) = next {
        out.push_str(&format!("{a:016x} t {n}\n"));
    }
    out.into_bytes()
}

/// The `tracefs` root of an instance's directory (`…/instances/NAME`).
fn root_of(dir: &Path) -> Option<&Path> {
    dir.parent()?.parent()
}

/// [`Instance::collect`], and with `dat` what a trace.dat needs
/// ([`DatCapture`]): read after the text `trace`, which stays as it was.
///
/// # Errors
/// A tracefs file that cannot be read.
pub fn collect(
    inst: &mut Instance,
    dat: bool,
) -> Result<(Recorded, Option<DatCapture>), TraceError> {
    let rec = inst.collect()?;
    if !dat {
        return Ok((rec, None));
    }
    let capture = DatCapture::read(inst.dir(), &rec.text)?;
    Ok((rec, Some(capture)))
}

impl DatCapture {
    /// Reads the instance at `dir` (tracing off, its `trace` already read
    /// as `text`): its pages, the formats, the names.
    ///
    /// # Errors
    /// A tracefs file that cannot be read.
    pub fn read(dir: &Path, text: &str) -> Result<DatCapture, TraceError> {
        let events = dir.join("events");
        let header_page = read(&events.join("header_page"))?;
        // The instance's sub-buffer (a page, unless resized); a kernel
        // without `buffer_subbuf_size_kb` (before 6.8) says it in the page
        // header's `data` field, else 4 KiB.
        let page_size = fs::read_to_string(dir.join("buffer_subbuf_size_kb"))
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
            .map(|kb| kb * 1024)
            .or_else(|| page_from_header(&String::from_utf8_lossy(&header_page)))
            .unwrap_or(4096);
        let mut c = DatCapture {
            page_size,
            header_page,
            header_event: read(&events.join("header_event"))?,
            ftrace: formats(&events.join("ftrace"))?,
            ..DatCapture::default()
        };
        for s in SYSTEMS {
            c.systems.push((s.to_string(), formats(&events.join(s))?));
        }
        let per_cpu = dir.join("per_cpu");
        for cpu in crate::tracefs::instance_cpus(&per_cpu)? {
            let i = cpu as usize;
            if c.cpus.len() <= i {
                c.cpus.resize(i + 1, Vec::new());
            }
            c.cpus[i] = read_raw(
                &per_cpu.join(format!("cpu{cpu}")).join("trace_pipe_raw"),
                page_size as usize,
            )?;
        }
        // The kernel's names of the threads, as its `sched_switch`
        // records show them (the last one: `exec` renames); the pids the
        // records name.
        let mut seen = std::collections::BTreeSet::new();
        for r in parse_text(text).records {
            seen.insert(r.pid);
            match r.kind {
                RecordKind::Switch {
                    prev_pid,
                    prev_comm,
                    next_pid,
                    next_comm,
                    ..
                } => {
                    c.comms.insert(prev_pid, prev_comm);
                    c.comms.insert(next_pid, next_comm);
                }
                RecordKind::Wakeup { pid, .. }
                | RecordKind::PiSetprio { pid, .. }
                | RecordKind::Migrate { pid, .. } => {
                    seen.insert(pid);
                }
                RecordKind::Marker(_) => {}
            }
        }
        if let Some(root) = root_of(dir) {
            c.printk = read(&root.join("printk_formats")).unwrap_or_default();
            c.kallsyms = marker_symbols(&fs::read_to_string("/proc/kallsyms").unwrap_or_default());
            let saved = fs::read_to_string(root.join("saved_cmdlines")).unwrap_or_default();
            for line in saved.lines() {
                if let Some((pid, comm)) = line.split_once(' ') {
                    match pid.parse() {
                        Ok(pid) if seen.contains(&pid) => {
                            c.comms.entry(pid).or_insert_with(|| comm.to_string());
                        }
                        _ => {}
                    }
                }
            }
        }
        Ok(c)
    }

    /// Names `pid` `comm` where the kernel's records did not (a thread
    /// that never ran).
    pub fn name(&mut self, pid: i32, comm: &str) {
        // The kernel's comm: 15 bytes at most.
        let mut end = comm.len().min(15);
        while !comm.is_char_boundary(end) {
            end -= 1;
        }
        self.comms
            .entry(pid)
            .or_insert_with(|| comm[..end].to_string());
    }

    /// The bytes of ring-buffer pages read, per CPU.
    pub fn cpu_bytes(&self) -> Vec<usize> {
        self.cpus.iter().map(Vec::len).collect()
    }

    /// The pages read, all CPUs.
    pub fn pages(&self) -> usize {
        self.cpus
            .iter()
            .map(|c| c.len() / (self.page_size.max(1) as usize))
            .sum()
    }

    /// Writes the trace.dat (see the module docs).
    ///
    /// # Errors
    /// Writing fails.
    pub fn write<W: Write>(&self, mut w: W) -> io::Result<()> {
        let head = self.header();
        w.write_all(&head)?;
        for data in &self.cpus {
            w.write_all(data)?;
        }
        w.flush()
    }

    /// Writes the trace.dat at `path`.
    ///
    /// # Errors
    /// The file cannot be created or written.
    pub fn write_file(&self, path: &Path) -> io::Result<()> {
        self.write(io::BufWriter::new(File::create(path)?))
    }

    /// Everything before the first CPU's pages, padding included.
    fn header(&self) -> Vec<u8> {
        let mut h = Vec::new();
        h.extend_from_slice(&MAGIC);
        h.extend_from_slice(b"tracing");
        h.extend_from_slice(&[b'0' + VERSION, 0]);
        h.push(u8::from(cfg!(target_endian = "big")));
        h.push(std::mem::size_of::<libc::c_long>() as u8);
        h.extend_from_slice(&self.page_size.to_ne_bytes());
        for (name, data) in [
            (&b"header_page\0"[..], &self.header_page),
            (&b"header_event\0"[..], &self.header_event),
        ] {
            h.extend_from_slice(name);
            h.extend_from_slice(&(data.len() as u64).to_ne_bytes());
            h.extend_from_slice(data);
        }
        h.extend_from_slice(&(self.ftrace.len() as u32).to_ne_bytes());
        for f in &self.ftrace {
            h.extend_from_slice(&(f.len() as u64).to_ne_bytes());
            h.extend_from_slice(f);
        }
        h.extend_from_slice(&(self.systems.len() as u32).to_ne_bytes());
        for (name, events) in &self.systems {
            h.extend_from_slice(name.as_bytes());
            h.push(0);
            h.extend_from_slice(&(events.len() as u32).to_ne_bytes());
            for f in events {
                h.extend_from_slice(&(f.len() as u64).to_ne_bytes());
                h.extend_from_slice(f);
            }
        }
        h.extend_from_slice(&(self.kallsyms.len() as u32).to_ne_bytes());
        h.extend_from_slice(&self.kallsyms);
        h.extend_from_slice(&(self.printk.len() as u32).to_ne_bytes());
        h.extend_from_slice(&self.printk);
        let mut cmdlines = String::new();
        for (pid, comm) in &self.comms {
            cmdlines.push_str(&format!("{pid} {comm}\n"));
        }
        h.extend_from_slice(&(cmdlines.len() as u64).to_ne_bytes());
        h.extend_from_slice(cmdlines.as_bytes());
        h.extend_from_slice(&(self.cpus.len() as u32).to_ne_bytes());
        // No options: the list ends at once.
        h.extend_from_slice(b"options  \0");
        h.extend_from_slice(&0u16.to_ne_bytes());
        h.extend_from_slice(b"flyrecord\0");
        // Each CPU's offset and size, then padding to a page boundary.
        let page = u64::from(self.page_size.max(1));
        let table = h.len() as u64 + 16 * self.cpus.len() as u64;
        let mut offset = table.next_multiple_of(page);
        for data in &self.cpus {
            h.extend_from_slice(&offset.to_ne_bytes());
            h.extend_from_slice(&(data.len() as u64).to_ne_bytes());
            offset += (data.len() as u64).next_multiple_of(page);
        }
        h.resize(table.next_multiple_of(page) as usize, 0);
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_trace_cmds_v6_and_the_pages_page_aligned() {
        let c = DatCapture {
            page_size: 4096,
            header_page: b"hp".to_vec(),
            header_event: b"he!".to_vec(),
            ftrace: vec![b"print".to_vec()],
            systems: vec![("sched".into(), vec![b"sw".to_vec(), b"wk".to_vec()])],
            printk: Vec::new(),
            kallsyms: b"ffffffff81000000 t tracing_mark_write\n".to_vec(),
            comms: BTreeMap::from([(7, "Producer".to_string())]),
            cpus: vec![vec![1; 4096], Vec::new(), vec![2; 8192]],
        };
        let mut out = Vec::new();
        c.write(&mut out).unwrap();
        assert_eq!(&out[..10], b"\x17\x08\x44tracing");
        assert_eq!(&out[10..12], b"6\0");
        assert_eq!(out[13], std::mem::size_of::<libc::c_long>() as u8);
        assert_eq!(u32::from_ne_bytes(out[14..18].try_into().unwrap()), 4096);
        assert_eq!(&out[18..30], b"header_page\0");
        let find = |s: &[u8]| out.windows(s.len()).position(|w| w == s).unwrap();
        assert!(find(b"sched\0") > find(b"print"));
        assert!(find(b"7 Producer\n") > 0);
        let fly = find(b"flyrecord\0") + 10;
        let u64_at = |i: usize| u64::from_ne_bytes(out[i..i + 8].try_into().unwrap());
        let ncpus = u32::from_ne_bytes(out[fly - 22 - 4..fly - 22].try_into().unwrap());
        assert_eq!(ncpus, 3);
        assert_eq!(&out[fly - 22..fly - 10], b"options  \0\0\0");
        let (o0, s0) = (u64_at(fly), u64_at(fly + 8));
        let (o1, s1) = (u64_at(fly + 16), u64_at(fly + 24));
        let (o2, s2) = (u64_at(fly + 32), u64_at(fly + 40));
        assert_eq!((o0 % 4096, s0, s1, s2), (0, 4096, 0, 8192));
        assert_eq!((o1, o2), (o0 + 4096, o0 + 4096));
        assert_eq!(out.len() as u64, o2 + s2);
        assert!(out[o0 as usize..(o0 + s0) as usize].iter().all(|&b| b == 1));
        assert!(out[o2 as usize..].iter().all(|&b| b == 2));
    }

    #[test]
    fn the_markers_symbol_and_the_next_one() {
        let k = "ffffffff81000300 T other\n\
                 ffffffff81000100 t tracing_mark_write\n\
                 ffffffff81000200 t after\n\
                 ffffffff81000150 d data_not_text\n\
                 ffffffff81000180 t in_module\t[m]\n";
        assert_eq!(
            String::from_utf8(marker_symbols(k)).unwrap(),
            "ffffffff81000100 t tracing_mark_write\nffffffff81000200 t after\n"
        );
        assert!(marker_symbols("0000000000000000 t tracing_mark_write\n").is_empty());
    }

    #[test]
    fn the_page_size_from_the_page_header() {
        let h = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
                 \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
                 \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
                 \tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
        assert_eq!(page_from_header(h), Some(4096));
        assert_eq!(page_from_header("nothing"), None);
    }

    #[test]
    fn a_name_is_cut_as_the_kernel_cuts_comm() {
        let mut c = DatCapture::default();
        c.name(3, "AVeryLongThreadName");
        c.name(3, "other");
        assert_eq!(c.comms[&3], "AVeryLongThread");
    }
}
