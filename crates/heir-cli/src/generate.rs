//! `heir completions SHELL` and `heir man DIR`: shell completions and man
//! pages generated from the same clap definition as `--help`, so they can
//! never disagree with the options. The Debian package
//! (`scripts/build-deb.sh`) installs both; a user who builds from source
//! can install them by hand (README, "Installing").
//!
//! `heir man DIR` writes `heir.1` (the command and its list of
//! subcommands) and one `heir-SUBCOMMAND.1` per subcommand, in roff, and
//! prints the paths it wrote. It writes each page to a temporary file in
//! `DIR` first and renames it, so an error leaves no half-written page.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Command;
use clap_complete::Shell;

use crate::CliResult;

/// `heir completions` arguments.
#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to write completions for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// `heir man` arguments.
#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// The directory to write the pages into (created if missing), e.g.
    /// `/usr/local/share/man/man1`.
    pub dir: PathBuf,
}

/// Writes the completion script for `args.shell` on stdout.
pub fn completions(args: CompletionsArgs, mut cmd: Command) -> CliResult {
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut cmd, "heir", &mut out);
    out.flush().context("writing the completions to stdout")?;
    Ok(())
}

/// Writes `heir.1` and one `heir-SUBCOMMAND.1` per subcommand into
/// `args.dir`.
pub fn man(args: ManArgs, cmd: Command) -> CliResult {
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("creating {}", args.dir.display()))?;
    let cmd = cmd.bin_name("heir");
    let mut written = vec![write_page(&args.dir, "heir", cmd.clone())?];
    for sub in cmd.get_subcommands() {
        if sub.is_hide_set() {
            continue;
        }
        let name = format!("heir-{}", sub.get_name());
        // The page's title and synopsis name the command as typed.
        let page = sub
            .clone()
            .name(name.clone())
            .bin_name(format!("heir {}", sub.get_name()))
            .version(env!("CARGO_PKG_VERSION"));
        written.push(write_page(&args.dir, &name, page)?);
    }
    for path in written {
        println!("{}", path.display());
    }
    Ok(())
}

/// Renders one page to `DIR/NAME.1` through a temporary file.
fn write_page(dir: &Path, name: &str, cmd: Command) -> anyhow::Result<PathBuf> {
    let mut roff = Vec::new();
    clap_mangen::Man::new(cmd)
        .section("1")
        .manual("heir manual")
        .source(format!("heir {}", env!("CARGO_PKG_VERSION")))
        .render(&mut roff)
        .with_context(|| format!("rendering the man page {name}.1"))?;
    let path = dir.join(format!("{name}.1"));
    let tmp = dir.join(format!(".{name}.1.tmp"));
    std::fs::write(&tmp, &roff).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}
