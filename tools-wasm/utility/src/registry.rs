// The registry of the shell's built-in utilities: every name, what it does, how its command
// line is read and the options burrow implements. It is the one list that `NAME --help`
// (`utils::options`), the option gate that refuses every other option with GNU's wording
// before the utility runs, the sandbox's `/usr/bin` listing (host/build.rs) and the option
// audit (cli/tests/shell_options.rs, docs/SHELL.md) all read, so they cannot disagree.
//
// This file is self-contained (no `crate::` paths): the host's build script and tests
// `include!` it.
//
// An option list is written as GNU's --help names them, separated by spaces: `-b`,
// `--debug`, `-b/--ignore-leading-blanks`, with `=ARG` for a required argument
// (`-k/--key=KEYDEF`) and `[=ARG]` for an optional one (`-i/--in-place[=SUFFIX]`: attached
// only). A short option may have several long names (`-q/--quiet/--silent`).

/// How the gate reads a utility's command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parse {
    /// GNU getopt_long: options anywhere before `--` (operands are permuted past them), short
    /// ones bundled (`-rn`), long ones abbreviated to any unambiguous prefix.
    Getopt,
    /// The same, but options stop at the first operand (the rest is a command to run: env,
    /// xargs, timeout; or a program: awk).
    Posix,
    /// The utility reads its own command line (an expression language, a program's options,
    /// option letters without a dash): the gate answers only a lone `--help`.
    Own,
    /// A program with its own `--help` (python3, pip, sh): the gate leaves it alone.
    Program,
}

/// How a utility words a usage error (the first line is always GNU getopt's
/// `NAME: invalid option -- 'x'` or `NAME: unrecognized option '--x'`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// coreutils: `Try 'NAME --help' for more information.`
    Gnu,
    /// diffutils and patch: `NAME: Try 'NAME --help' for more information.`
    Prefixed,
    /// grep (egrep and fgrep are grep): a usage line, then the Try line.
    Grep,
    /// gzip (gunzip and zcat are gzip): ``Try `gzip --help' for more information.``
    Gzip,
    /// sed: its usage line and option list.
    Sed,
    /// bc: its usage block.
    Bc,
}

/// How a dash followed by digits is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Digits {
    /// As option letters (`comm -12`, `gzip -9`).
    Letters,
    /// `-NUM` is `-X NUM` (`head -5`, `grep -2`).
    Count(char),
    /// A negative number is an operand (`seq -5 5`, `sleep`).
    Operand,
}

pub struct Utility {
    pub name: &'static str,
    /// The module that implements it (under `tools-wasm/sh/src/utils/`).
    pub family: &'static str,
    /// What follows the name in the usage line.
    pub usage: &'static str,
    pub about: &'static str,
    pub parse: Parse,
    pub digits: Digits,
    /// The options burrow implements (see the module comment for the notation).
    pub options: &'static str,
    /// The exit status of a usage error (1 for most of coreutils; 2 for ls, sort, diff, grep,
    /// cmp; 125 for env and timeout).
    pub usage_status: i32,
    pub style: Style,
    /// Bundled short options reach the utility as written (`-ru`), not one by one.
    pub keeps_clusters: bool,
    /// Where burrow's behaviour differs from GNU's on purpose, for the docs and --help.
    pub notes: &'static str,
}

const fn u(
    name: &'static str,
    family: &'static str,
    usage: &'static str,
    about: &'static str,
    options: &'static str,
) -> Utility {
    Utility {
        name,
        family,
        usage,
        about,
        parse: Parse::Getopt,
        digits: Digits::Letters,
        options,
        usage_status: 1,
        style: Style::Gnu,
        keeps_clusters: false,
        notes: "",
    }
}

impl Utility {
    const fn posix(mut self) -> Self {
        self.parse = Parse::Posix;
        self
    }
    const fn own(mut self) -> Self {
        self.parse = Parse::Own;
        self
    }
    const fn program(mut self) -> Self {
        self.parse = Parse::Program;
        self
    }
    const fn digits(mut self, d: Digits) -> Self {
        self.digits = d;
        self
    }
    const fn status(mut self, s: i32) -> Self {
        self.usage_status = s;
        self
    }
    const fn clusters(mut self) -> Self {
        self.keeps_clusters = true;
        self
    }
    const fn style(mut self, s: Style) -> Self {
        self.style = s;
        self
    }
    const fn notes(mut self, n: &'static str) -> Self {
        self.notes = n;
        self
    }
}

/// One option of an option list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opt {
    pub short: Option<char>,
    pub long: Vec<&'static str>,
    pub arg: Arg,
    /// The argument's name in --help (`KEYDEF`).
    pub metavar: &'static str,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    None,
    Required,
    /// Attached only: `-iSUFFIX`, `--in-place=SUFFIX`.
    Optional,
}

impl Utility {
    /// The options of the list, parsed.
    pub fn opts(&self) -> Vec<Opt> {
        self.options.split_whitespace().map(parse_opt).collect()
    }
}

fn parse_opt(item: &'static str) -> Opt {
    let (names, arg, metavar) = if let Some(i) = item.find("[=") {
        (
            &item[..i],
            Arg::Optional,
            item[i + 2..].trim_end_matches(']'),
        )
    } else if let Some(i) = item.find('=') {
        (&item[..i], Arg::Required, &item[i + 1..])
    } else {
        (item, Arg::None, "")
    };
    let mut short = None;
    let mut long = Vec::new();
    for n in names.split('/') {
        if let Some(l) = n.strip_prefix("--") {
            long.push(l);
        } else if let Some(s) = n.strip_prefix('-') {
            short = s.chars().next();
        }
    }
    Opt {
        short,
        long,
        arg,
        metavar,
    }
}

/// The utility named `name`, if it is one.
pub fn find(name: &str) -> Option<&'static Utility> {
    UTILITIES.iter().find(|u| u.name == name)
}

const FILES: &str = "[OPTION]... [FILE]...";
/// gzip's options (gunzip and zcat are gzip -d and gzip -cd).
const GZIP_OPTIONS: &str = "-1/--fast -2 -3 -4 -5 -6 -7 -8 -9/--best -c/--stdout/--to-stdout -d/--decompress/--uncompress -f/--force -k/--keep -n/--no-name -N/--name -q/--quiet";
/// sha256sum's and md5sum's.
const DIGEST_OPTIONS: &str = "-b/--binary -c/--check --quiet --status --tag -t/--text";
/// grep's options (egrep and fgrep are grep with -E and -F).
const GREP_OPTIONS: &str = "-A/--after-context=NUM -B/--before-context=NUM -c/--count -C/--context=NUM --color[=WHEN] --colour[=WHEN] -e/--regexp=PATTERNS -E/--extended-regexp --exclude=GLOB --exclude-dir=GLOB -f/--file=FILE -F/--fixed-strings -h/--no-filename -H/--with-filename -i/--ignore-case -I --include=GLOB -l/--files-with-matches -L/--files-without-match -m/--max-count=NUM -n/--line-number -o/--only-matching -P/--perl-regexp -q/--quiet/--silent -r/--recursive -R/--dereference-recursive -s/--no-messages -v/--invert-match -w/--word-regexp -x/--line-regexp -Z/--null";

pub const UTILITIES: &[Utility] = &[
    // ----- coreutils: files and text -----
    u("cat", "coreutils", FILES, "Concatenate FILE(s) to standard output.",
        "-A/--show-all -b/--number-nonblank -e -E/--show-ends -n/--number -s/--squeeze-blank -t -T/--show-tabs -u -v/--show-nonprinting"),
    u("head", "coreutils", FILES, "Print the first 10 lines of each FILE to standard output.",
        "-c/--bytes=NUM -n/--lines=NUM -q/--quiet/--silent -v/--verbose")
        .digits(Digits::Count('n')),
    u("tail", "coreutils", FILES, "Print the last 10 lines of each FILE to standard output.",
        "-c/--bytes=NUM -f/--follow -n/--lines=NUM -q/--quiet/--silent -v/--verbose")
        .digits(Digits::Count('n'))
        .notes("-f prints the file and returns: nothing else writes to it while a call runs."),
    u("wc", "coreutils", FILES, "Print newline, word, and byte counts for each FILE.",
        "-c/--bytes -m/--chars -l/--lines -L/--max-line-length -w/--words"),
    u("ls", "coreutils", FILES, "List information about the FILEs (the current directory by default).",
        "-1 -a/--all -A/--almost-all --color[=WHEN] -d/--directory -F/--classify -h/--human-readable -l -p -r/--reverse -R/--recursive -S -t")
        .status(2)
        .notes("Output is never coloured: --color=always is refused."),
    u("sort", "sort", FILES, "Write sorted concatenation of all FILE(s) to standard output.",
        "-b/--ignore-leading-blanks -c/--check -C -d/--dictionary-order -f/--ignore-case -g/--general-numeric-sort -h/--human-numeric-sort -i/--ignore-nonprinting -k/--key=KEYDEF -m/--merge -M/--month-sort -n/--numeric-sort -o/--output=FILE --parallel=N -r/--reverse -s/--stable -S/--buffer-size=SIZE -t/--field-separator=SEP -T/--temporary-directory=DIR -u/--unique -V/--version-sort -z/--zero-terminated")
        .status(2)
        .notes("--parallel, -S and -T change how GNU sort works, not what it prints: accepted."),
    u("uniq", "coreutils", "[OPTION]... [INPUT [OUTPUT]]", "Filter adjacent matching lines from INPUT, writing to standard output.",
        "-c/--count -d/--repeated -f/--skip-fields=N -i/--ignore-case -s/--skip-chars=N -u/--unique -w/--check-chars=N"),
    u("cut", "text", "OPTION... [FILE]...", "Print selected parts of lines from each FILE to standard output.",
        "-b/--bytes=LIST -c/--characters=LIST -d/--delimiter=DELIM -f/--fields=LIST --complement -s/--only-delimited --output-delimiter=STRING"),
    u("tr", "text", "[OPTION]... STRING1 [STRING2]", "Translate, squeeze, and/or delete characters from standard input.",
        "-c/--complement -C -d/--delete -s/--squeeze-repeats -t/--truncate-set1"),
    u("nl", "coreutils", FILES, "Write each FILE to standard output, with line numbers added.",
        "-b/--body-numbering=STYLE -i/--line-increment=NUMBER -n/--number-format=FORMAT -s/--number-separator=STRING -v/--starting-line-number=NUMBER -w/--number-width=NUMBER"),
    u("tac", "coreutils", FILES, "Write each FILE to standard output, last line first.", ""),
    u("rev", "coreutils", "[options] [file ...]", "Reverse lines characterwise.", ""),
    u("mkdir", "coreutils", "[OPTION]... DIRECTORY...", "Create the DIRECTORY(ies), if they do not already exist.",
        "-m/--mode=MODE -p/--parents -v/--verbose")
        .notes("-m is accepted: the store keeps no permission bits."),
    u("rmdir", "coreutils", "[OPTION]... DIRECTORY...", "Remove the DIRECTORY(ies), if they are empty.",
        "-p/--parents"),
    u("rm", "coreutils", "[OPTION]... [FILE]...", "Remove (unlink) the FILE(s).",
        "-d/--dir -f/--force -i -r/--recursive -R -v/--verbose"),
    u("cp", "coreutils", "[OPTION]... SOURCE... DEST", "Copy SOURCE to DEST, or multiple SOURCE(s) to DIRECTORY.",
        "-a/--archive -f/--force -i/--interactive -n/--no-clobber -p -r/--recursive -R -t/--target-directory=DIRECTORY -T/--no-target-directory -u/--update -v/--verbose"),
    u("mv", "coreutils", "[OPTION]... SOURCE... DEST", "Rename SOURCE to DEST, or move SOURCE(s) to DIRECTORY.",
        "-f/--force -i/--interactive -n/--no-clobber -t/--target-directory=DIRECTORY -T/--no-target-directory -u/--update -v/--verbose"),
    u("ln", "coreutils", "[OPTION]... TARGET LINK_NAME", "Create a link to TARGET with the name LINK_NAME.",
        "-f/--force -n/--no-dereference -s/--symbolic -v/--verbose"),
    u("touch", "files", "[OPTION]... FILE...", "Update the access and modification times of each FILE to the current time.",
        "-a -c/--no-create -d/--date=STRING -f -m -r/--reference=FILE -t=STAMP"),
    u("basename", "coreutils", "NAME [SUFFIX] | OPTION... NAME...", "Print NAME with any leading directory components removed.",
        "-a/--multiple -s/--suffix=SUFFIX -z/--zero"),
    u("dirname", "coreutils", "[OPTION] NAME...", "Output each NAME with its last non-slash component and trailing slashes removed.",
        "-z/--zero"),
    u("realpath", "files", "[OPTION]... FILE...", "Print the resolved absolute file name.",
        "-e/--canonicalize-existing -m/--canonicalize-missing -P/--physical -q/--quiet --relative-base=DIR --relative-to=DIR -s/--strip/--no-symlinks -z/--zero"),
    u("readlink", "files", "[OPTION]... FILE...", "Print value of a symbolic link or canonical file name.",
        "-e/--canonicalize-existing -f/--canonicalize -m/--canonicalize-missing -n/--no-newline -q/--quiet -s/--silent -v/--verbose -z/--zero"),
    u("stat", "files", "[OPTION]... FILE...", "Display file status.",
        "-c/--format=FORMAT -L/--dereference --printf=FORMAT"),
    u("chmod", "text", "[OPTION]... MODE[,MODE]... FILE...", "Change the mode of each FILE to MODE.",
        "-f/--silent/--quiet -R/--recursive").own()
        .notes("The store keeps no permission bits: chmod checks that each FILE exists and changes nothing."),
    u("du", "disk", FILES, "Summarize device usage of the set of FILEs, recursively for directories.",
        "-0/--null -a/--all --apparent-size -b/--bytes -B/--block-size=SIZE -c/--total -d/--max-depth=N -D/--dereference-args -h/--human-readable -H -k -l/--count-links -L/--dereference -m -P/--no-dereference -s/--summarize -S/--separate-dirs --si -t/--threshold=SIZE -x/--one-file-system")
        .notes("Sizes are what ext4 would allocate (4 KiB blocks): the store keeps bytes."),
    u("seq", "coreutils", "[OPTION]... LAST | [OPTION]... FIRST [INCREMENT] LAST", "Print numbers from FIRST to LAST, in steps of INCREMENT.",
        "-f/--format=FORMAT -s/--separator=STRING -w/--equal-width")
        .digits(Digits::Operand),
    u("tee", "coreutils", FILES, "Copy standard input to each FILE, and also to standard output.",
        "-a/--append -i/--ignore-interrupts"),
    u("date", "files", "[OPTION]... [+FORMAT]", "Display the current time in the given FORMAT.",
        "-d/--date=STRING -I/--iso-8601[=FMT] -r/--reference=FILE -R/--rfc-email -u/--utc/--universal"),
    u("sleep", "coreutils", "NUMBER[SUFFIX]...", "Pause for NUMBER seconds (suffixes s, m, h, d).", "")
        .digits(Digits::Operand),
    u("yes", "coreutils", "[STRING]...", "Repeatedly output a line with all specified STRING(s), or 'y'.", ""),
    u("xargs", "text", "[OPTION]... COMMAND [INITIAL-ARGS]...", "Run COMMAND with arguments INITIAL-ARGS and more arguments read from input.",
        "-0/--null -d/--delimiter=CHARACTER -I=R -L=MAX-LINES -n/--max-args=MAX-ARGS -P/--max-procs=MAX-PROCS -r/--no-run-if-empty -t/--verbose")
        .posix()
        .notes("-P runs the commands one at a time (their output is the same, in order)."),
    u("find", "find", "[starting-point...] [expression]", "Search for files in a directory hierarchy.", "").own(),
    u("base64", "extra", "[OPTION]... [FILE]", "Base64 encode or decode FILE, or standard input, to standard output.",
        "-d/--decode -i/--ignore-garbage -w/--wrap=COLS"),
    u("sha256sum", "extra", FILES, "Print or check SHA256 (256-bit) checksums.",
        DIGEST_OPTIONS),
    u("md5sum", "extra", FILES, "Print or check MD5 (128-bit) checksums.",
        DIGEST_OPTIONS),
    u("diff", "extra", "[OPTION]... FILES", "Compare FILES line by line.",
        "-q/--brief -r/--recursive -u -U=NUM --unified[=NUM]").status(2)
        .clusters()
        .style(Style::Prefixed),
    u("cmp", "misc", "[OPTION]... FILE1 [FILE2]", "Compare two files byte by byte.",
        "-s/--quiet/--silent").status(2)
        .style(Style::Prefixed),
    u("comm", "misc", "[OPTION]... FILE1 FILE2", "Compare sorted files FILE1 and FILE2 line by line.",
        "-1 -2 -3"),
    u("paste", "misc", FILES, "Write lines consisting of the sequentially corresponding lines from each FILE.",
        "-d/--delimiters=LIST -s/--serial"),
    u("column", "misc", "[options] [<file>...]", "Columnate lists.",
        "-o/--output-separator=STRING -s/--separator=STRING -t/--table"),
    u("od", "od", FILES, "Write an unambiguous representation, octal bytes by default, of FILE to standard output.",
        "-a -A/--address-radix=RADIX -b -c -d -i -j/--skip-bytes=BYTES -l -N/--read-bytes=BYTES -o -s -t/--format=TYPE -v/--output-duplicates -w/--width[=BYTES] -x"),
    u("expr", "misc", "EXPRESSION", "Print the value of EXPRESSION to standard output.", "").own(),
    u("timeout", "misc", "[OPTION] DURATION COMMAND [ARG]...", "Start COMMAND, and kill it if still running after DURATION.",
        "--foreground -k/--kill-after=DURATION --preserve-status -s/--signal=SIGNAL -v/--verbose")
        .posix()
        .status(125),
    u("mktemp", "misc", "[OPTION]... [TEMPLATE]", "Create a temporary file or directory, safely, and print its name.",
        "-d/--directory -p/--tmpdir=DIR -u/--dry-run"),
    u("tree", "misc", "[-adL level] [-I pattern] [directory ...]", "List contents of directories in a tree-like format.",
        "-a -d -I=PATTERN -L=LEVEL"),
    // ----- the sandbox's identity -----
    u("uname", "misc", "[OPTION]...", "Print certain system information.",
        "-a/--all -m/--machine -n/--nodename -o/--operating-system -r/--kernel-release -s/--kernel-name -v/--kernel-version"),
    u("whoami", "misc", "[OPTION]...", "Print the user name associated with the current effective user ID.", ""),
    u("id", "misc", "[OPTION]... [USER]...", "Print user and group information.",
        "-g/--group -G/--groups -n/--name -u/--user"),
    u("hostname", "misc", "", "Show the system's host name.", ""),
    u("nproc", "misc", "[OPTION]...", "Print the number of processing units available to the current process.",
        "--all"),
    u("ps", "misc", "[options]", "Report a snapshot of the current processes (ps, ps -e, ps -ef, ps aux).", "").own(),
    u("locale", "misc", "[OPTION]...", "Get locale-specific information (locale, locale -a).", "").own(),
    u("env", "builtins", "[OPTION]... [-] [NAME=VALUE]... [COMMAND [ARG]...]", "Set each NAME to VALUE in the environment and run COMMAND.",
        "-i/--ignore-environment -u/--unset=NAME")
        .posix()
        .status(125),
    u("printenv", "builtins", "[OPTION]... [VARIABLE]...", "Print the values of the specified environment VARIABLE(s).", "")
        .status(2),
    u("which", "builtins", "[-a] COMMAND...", "Show the full path of COMMAND(s).", "").own(),
    // ----- text tools with their own languages -----
    u("grep", "text", "[OPTION]... PATTERNS [FILE]...", "Search for PATTERNS in each FILE.",
        GREP_OPTIONS)
        .digits(Digits::Count('C'))
        .status(2)
        .notes("Output is never coloured: --color=always is refused.")
        .style(Style::Grep),
    u("egrep", "text", "[OPTION]... PATTERNS [FILE]...", "grep -E.",
        GREP_OPTIONS)
        .digits(Digits::Count('C'))
        .status(2)
        .style(Style::Grep),
    u("fgrep", "text", "[OPTION]... PATTERNS [FILE]...", "grep -F.",
        GREP_OPTIONS)
        .digits(Digits::Count('C'))
        .status(2)
        .style(Style::Grep),
    u("sed", "text", "[OPTION]... {script-only-if-no-other-script} [input-file]...", "Stream editor for filtering and transforming text.",
        "-e/--expression=script -E/--regexp-extended -i/--in-place[=SUFFIX] -n/--quiet/--silent -r")
        .style(Style::Sed),
    u("awk", "awk", "[-F fs] [-v var=value] [-f progfile | 'prog'] [file ...]", "Pattern scanning and text processing language (POSIX awk).",
        "-F=fs -f=progfile -v=var=value")
        .posix()
        .status(2),
    u("rg", "extra", "[OPTIONS] PATTERN [PATH ...]", "Recursively search the current directory for lines matching a pattern (ripgrep).", "").own(),
    u("jq", "jq", "[OPTIONS] FILTER [FILES...]", "Command-line JSON processor (jaq).", "").own(),
    u("bc", "bc", "[options] [file ...]", "An arbitrary precision calculator language.", "-l/--mathlib -q/--quiet")
        .style(Style::Bc),
    u("patch", "patch", "[OPTION]... [ORIGFILE [PATCHFILE]]", "Apply a diff file to an original.", "-b/--backup --backup-if-mismatch --dry-run -d/--directory=DIR -E/--remove-empty-files -f/--force -F/--fuzz=LINES -i/--input=PATCHFILE -N/--forward --no-backup-if-mismatch -o/--output=FILE -p/--strip=NUM -R/--reverse -s/--quiet/--silent -t/--batch -u/--unified")
        .style(Style::Prefixed)
        .status(2),
    // ----- archives -----
    u("tar", "archive", "[OPTION...] [FILE]...", "Create (-c), list (-t) or extract (-x) tar archives, gzipped with -z.",
        "-c/--create -C/--directory=DIR -f/--file=ARCHIVE -o -p -t/--list -v/--verbose -x/--extract -z/--gzip/--gunzip").own()
        .status(64),
    u("gzip", "archive", FILES, "Compress or uncompress FILEs.", GZIP_OPTIONS)
        .style(Style::Gzip),
    u("gunzip", "archive", FILES, "Uncompress FILEs.", GZIP_OPTIONS)
        .style(Style::Gzip),
    u("zcat", "archive", FILES, "Uncompress FILEs to standard output.", GZIP_OPTIONS)
        .style(Style::Gzip),
    // ----- the network and the toolchain -----
    u("curl", "curl", "[options...] <url>", "Transfer a URL (through the session's network policy).", "").own(),
    u("git", "git", "[-C <path>] <command> [<args>]", "The content tracker: clone over HTTP(S) through the session's network policy, status, log, rev-parse, branch, remote, ls-files, config (other commands say they are not supported).", "").own(),
    u("wget", "curl", "[OPTION]... [URL]...", "The non-interactive network downloader (through the session's network policy).", "").own(),
    u("python3", "toolchain", "[option] ... [-c cmd | -m mod | file | -] [arg] ...", "CPython 3.12 for WASI (`burrow toolchain install python`).", "").program(),
    u("python", "toolchain", "[option] ... [-c cmd | -m mod | file | -] [arg] ...", "python3.", "").program(),
    u("python3.12", "toolchain", "[option] ... [-c cmd | -m mod | file | -] [arg] ...", "python3.", "").program(),
    u("pip", "pip", "<command> [options]", "Install Python packages from the package index into the session.", "").program(),
    u("pip3", "pip", "<command> [options]", "pip.", "").program(),
    u("pip3.12", "pip", "<command> [options]", "pip.", "").program(),
    u("sh", "coreutils", "[-c COMMAND [NAME [ARG]...] | FILE [ARG]...]", "A new bash-compatible shell.", "").program(),
    u("bash", "coreutils", "[-c COMMAND [NAME [ARG]...] | FILE [ARG]...]", "A new bash-compatible shell.", "").program(),
];
