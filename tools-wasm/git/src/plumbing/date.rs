//! Dates as git reads and prints them: the `--date=` modes of `git log` (`default`, `short`,
//! `iso`, `iso-strict`, `rfc`, `raw`, `unix`, `relative`, `format:...` and their `-local`
//! forms), the date placeholders of `--format` (`%ad`, `%ar`, `%ai`, `%aI`, `%as`, `%aD`, ...)
//! and the approximate dates of `--since`/`--until` (`2023-11-14 22:15`, `@1700000000`,
//! `2 weeks ago`, `3.months.ago`, `yesterday`, RFC 2822 and git's own default format).
//!
//! The sandbox's local time zone is UTC, so git's local forms and a date given without a zone
//! are read in UTC. A date that git would read loosely (`last monday`, `today`, a word it
//! does not know) is refused instead of being taken as "now", as git silently does.

/// Seconds of a zone like `+0530` or `-0700` east of UTC.
fn zone_offset(zone: &str) -> i64 {
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let z: i64 = zone.trim_start_matches(['+', '-']).parse().unwrap_or(0);
    sign * ((z / 100) * 3600 + (z % 100) * 60)
}

use sh_coreutils::files::{civil_from_days, days_from_civil};

/// A time in an ident's own zone: (year, month, day, seconds into the day, weekday with
/// 0 = Thursday).
pub(crate) fn civil(secs: i64, zone: &str) -> (i64, i64, i64, i64, i64) {
    let t = secs + zone_offset(zone);
    let days = t.div_euclid(86400);
    let (y, m, d) = civil_from_days(days);
    (y, m, d, t.rem_euclid(86400), days.rem_euclid(7))
}

const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
/// git's default date format: `Thu Apr 7 15:13:13 2005 -0700`, in the ident's own zone.
pub(crate) fn git_date(secs: i64, zone: &str) -> String {
    let (y, m, d, rem, wd) = civil(secs, zone);
    format!(
        "{} {} {} {:02}:{:02}:{:02} {} {zone}",
        DAYS[wd as usize],
        MONTHS[(m - 1) as usize],
        d,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        y
    )
}

/// The `iso` date format: `2005-04-07 15:13:13 -0700`, in the ident's own zone.
pub(crate) fn iso_date(secs: i64, zone: &str) -> String {
    let (y, m, d, rem, _) = civil(secs, zone);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} {zone}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// How `git log --date=` shows a date.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) enum DateMode {
    Default,
    Short,
    Iso,
    IsoStrict,
    Rfc,
    Raw,
    Unix,
    Relative,
    /// `format:...`, strftime-style.
    Format(String),
}

/// A `--date=` value: the mode and whether it shows local time (`local`, `iso-local`, ...).
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct DateStyle {
    pub mode: DateMode,
    pub local: bool,
}

impl Default for DateStyle {
    fn default() -> Self {
        DateStyle {
            mode: DateMode::Default,
            local: false,
        }
    }
}

/// Reads a `--date=` value as git does; an unknown one is fatal (128) with git's message.
pub(crate) fn parse_date_style(v: &str) -> Result<DateStyle, String> {
    if let Some(f) = v.strip_prefix("format-local:") {
        return Ok(DateStyle {
            mode: DateMode::Format(f.to_string()),
            local: true,
        });
    }
    if let Some(f) = v.strip_prefix("format:") {
        return Ok(DateStyle {
            mode: DateMode::Format(f.to_string()),
            local: false,
        });
    }
    let (name, local) = match v.strip_suffix("-local") {
        Some(n) => (n, true),
        None if v == "local" => ("default", true),
        None => (v, false),
    };
    let mode = match name {
        "default" => DateMode::Default,
        "short" => DateMode::Short,
        "iso" | "iso8601" => DateMode::Iso,
        "iso-strict" | "iso8601-strict" => DateMode::IsoStrict,
        "rfc" | "rfc2822" => DateMode::Rfc,
        "raw" => DateMode::Raw,
        "unix" => DateMode::Unix,
        "relative" => DateMode::Relative,
        "human" | "auto" => {
            return Err(format!("fatal: '--date={v}' is not supported in burrow"));
        }
        _ => return Err(format!("fatal: unknown date format {v}")),
    };
    Ok(DateStyle { mode, local })
}

/// Shows `secs` (with its ident's `zone`) in `style`; `now` is for relative dates.
pub(crate) fn show_date(secs: i64, zone: &str, style: &DateStyle, now: i64) -> String {
    // Local time is UTC in the sandbox; raw, unix and relative do not depend on the zone.
    let zone = if style.local { "+0000" } else { zone };
    match &style.mode {
        DateMode::Default if style.local => {
            let s = git_date(secs, zone);
            s.strip_suffix(" +0000").unwrap_or(&s).to_string()
        }
        DateMode::Default => git_date(secs, zone),
        DateMode::Short => {
            let (y, m, d, _, _) = civil(secs, zone);
            format!("{y:04}-{m:02}-{d:02}")
        }
        DateMode::Iso => iso_date(secs, zone),
        DateMode::IsoStrict => {
            let (y, m, d, rem, _) = civil(secs, zone);
            let z = zone_offset(zone);
            let tz = if z == 0 {
                "Z".to_string()
            } else {
                let sign = if z < 0 { '-' } else { '+' };
                format!("{sign}{:02}:{:02}", z.abs() / 3600, z.abs() % 3600 / 60)
            };
            format!(
                "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}{tz}",
                rem / 3600,
                rem % 3600 / 60,
                rem % 60
            )
        }
        DateMode::Rfc => {
            let (y, m, d, rem, wd) = civil(secs, zone);
            format!(
                "{}, {d} {} {y} {:02}:{:02}:{:02} {zone}",
                DAYS[wd as usize],
                MONTHS[(m - 1) as usize],
                rem / 3600,
                rem % 3600 / 60,
                rem % 60
            )
        }
        DateMode::Raw => {
            let zone = if style.local { "+0000" } else { zone };
            format!("{secs} {zone}")
        }
        DateMode::Unix => secs.to_string(),
        DateMode::Relative => relative(secs, now),
        DateMode::Format(f) => strftime(f, secs, zone),
    }
}

/// git's relative dates (`show_date_relative`): `5 minutes ago`, `3 weeks ago`,
/// `2 years, 1 month ago`.
pub(crate) fn relative(time: i64, now: i64) -> String {
    if now < time {
        return "in the future".to_string();
    }
    let plural = |n: i64, unit: &str| {
        if n == 1 {
            format!("{n} {unit}")
        } else {
            format!("{n} {unit}s")
        }
    };
    let mut diff = now - time;
    if diff < 90 {
        return format!("{} ago", plural(diff, "second"));
    }
    diff = (diff + 30) / 60;
    if diff < 90 {
        return format!("{} ago", plural(diff, "minute"));
    }
    diff = (diff + 30) / 60;
    if diff < 36 {
        return format!("{} ago", plural(diff, "hour"));
    }
    diff = (diff + 12) / 24;
    if diff < 14 {
        return format!("{} ago", plural(diff, "day"));
    }
    if diff < 70 {
        return format!("{} ago", plural((diff + 3) / 7, "week"));
    }
    if diff < 365 {
        return format!("{} ago", plural((diff + 15) / 30, "month"));
    }
    if diff < 1825 {
        let total_months = (diff * 12 * 2 + 365) / (365 * 2);
        let (years, months) = (total_months / 12, total_months % 12);
        if months > 0 {
            return format!("{}, {} ago", plural(years, "year"), plural(months, "month"));
        }
        return format!("{} ago", plural(years, "year"));
    }
    format!("{} ago", plural((diff + 183) / 365, "year"))
}

/// strftime over a date in its ident's `zone`: the `date` utility's conversions on the
/// zone's wall-clock time, with `%z` the zone, `%s` the seconds since the epoch and `%Z`
/// empty, as git's `--date=format:` shows them.
fn strftime(f: &str, secs: i64, zone: &str) -> String {
    let mut fmt = String::new();
    let mut chars = f.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            fmt.push(c);
            continue;
        }
        match chars.next() {
            Some('z') => fmt.push_str(zone),
            Some('s') => fmt.push_str(&secs.to_string()),
            Some('Z') => {}
            Some(k) => {
                fmt.push('%');
                fmt.push(k);
            }
            None => fmt.push('%'),
        }
    }
    sh_utility::time::strftime(secs + zone_offset(zone), &fmt)
}

/// A broken-down time being read, in UTC or in the zone given with it.
struct Tm {
    year: i64,
    /// 1-12.
    month: i64,
    day: i64,
    secs_of_day: i64,
}

impl Tm {
    fn from_secs(t: i64) -> Tm {
        let (y, m, d) = civil_from_days(t.div_euclid(86400));
        Tm {
            year: y,
            month: m,
            day: d,
            secs_of_day: t.rem_euclid(86400),
        }
    }

    fn secs(&self) -> i64 {
        days_from_civil(self.year, self.month, self.day) * 86400 + self.secs_of_day
    }
}

/// One word or number of a date.
#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    /// Digits, with what separated them from the next digits (`2023-11-14`, `22:15:00`).
    Number(String),
    /// `+0530`, `-07:00`.
    Zone(i64),
}

fn tokens(s: &str) -> Vec<Token> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphabetic() {
            let start = i;
            while i < b.len() && b[i].is_ascii_alphabetic() {
                i += 1;
            }
            let w = s[start..i].to_ascii_lowercase();
            // ISO's `T` between a date and a time, and `Z` for UTC.
            if w == "t" && i < b.len() && b[i].is_ascii_digit() {
                continue;
            }
            out.push(Token::Word(w));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len()
                && (b[i].is_ascii_digit()
                    || (matches!(b[i], b'-' | b'/' | b'.' | b':')
                        && i + 1 < b.len()
                        && b[i + 1].is_ascii_digit()))
            {
                i += 1;
            }
            out.push(Token::Number(s[start..i].to_string()));
        } else if (c == b'+' || c == b'-')
            && i + 1 < b.len()
            && b[i + 1].is_ascii_digit()
            && !matches!(out.last(), None | Some(Token::Word(_)))
        {
            let start = i + 1;
            i += 1;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b':') {
                i += 1;
            }
            let digits: String = s[start..i].chars().filter(|c| *c != ':').collect();
            let z: i64 = digits.parse().unwrap_or(0);
            let (h, m) = if digits.len() <= 2 {
                (z, 0)
            } else {
                (z / 100, z % 100)
            };
            let sign = if c == b'-' { -1 } else { 1 };
            out.push(Token::Zone(sign * (h * 3600 + m * 60)));
        } else {
            i += 1;
        }
    }
    out
}

/// The unit of a relative date, as git matches it (`week`, `weeks`, `3.weeks.ago`).
fn unit(word: &str) -> Option<&'static str> {
    const UNITS: [&str; 7] = ["second", "minute", "hour", "day", "week", "month", "year"];
    UNITS
        .into_iter()
        .find(|u| word == *u || word.strip_suffix('s') == Some(u))
}

/// A month's name or its start (at least three letters), as 1-12.
fn month_of(word: &str) -> Option<i64> {
    const NAMES: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    if word.len() < 3 {
        return None;
    }
    NAMES
        .iter()
        .position(|m| m.starts_with(word))
        .map(|i| i as i64 + 1)
}

/// A weekday's name or its start (at least three letters).
fn is_weekday(word: &str) -> bool {
    const NAMES: [&str; 7] = [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ];
    word.len() >= 3 && NAMES.iter().any(|d| d.starts_with(word))
}

/// Whether git's approxidate finds anything in `s` (a number or a word it knows): where it
/// finds nothing, `commit --date` says "invalid date format".
pub(crate) fn approxidate_reads(s: &str) -> bool {
    const WORDS: [&str; 21] = [
        "now",
        "yesterday",
        "today",
        "noon",
        "midnight",
        "tea",
        "am",
        "pm",
        "never",
        "last",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "ago",
    ];
    tokens(s).iter().any(|t| match t {
        Token::Word(w) => {
            WORDS.contains(&w.as_str())
                || unit(w).is_some()
                || month_of(w).is_some()
                || is_weekday(w)
        }
        _ => true,
    })
}

/// Reads a `--since`/`--until` date as git's approxidate does, at `now`; what burrow cannot
/// read exactly is refused (git would take it as "now").
pub(crate) fn approxidate(s: &str, now: i64) -> Result<i64, String> {
    let refuse = || format!("fatal: burrow's git cannot read the date '{s}'");
    let toks = tokens(s);
    if toks.is_empty() {
        return Err(refuse());
    }
    let mut tm = Tm::from_secs(now);
    let mut zone: Option<i64> = None;
    let mut pending: Option<i64> = None;
    let mut touched = false;
    let mut epoch: Option<i64> = None;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Token::Zone(z) => zone = Some(*z),
            Token::Word(w) => match w.as_str() {
                "ago" | "and" | "at" | "on" => {}
                "utc" | "gmt" | "z" => zone = Some(0),
                "now" => touched = true,
                "yesterday" => {
                    tm = Tm::from_secs(tm.secs() - 86400);
                    touched = true;
                }
                "noon" | "midnight" => {
                    // git takes the coming one if it is still ahead today... only in the past:
                    // yesterday's when today's has not come yet.
                    let at = if w == "noon" { 12 * 3600 } else { 0 };
                    if tm.secs_of_day < at {
                        tm = Tm::from_secs(tm.secs() - 86400);
                    }
                    tm.secs_of_day = at;
                    touched = true;
                }
                "am" | "pm" => {
                    let h = tm.secs_of_day / 3600;
                    let rest = tm.secs_of_day % 3600;
                    let h = match (w.as_str(), h) {
                        ("am", 12) => 0,
                        ("pm", h) if h < 12 => h + 12,
                        (_, h) => h,
                    };
                    tm.secs_of_day = h * 3600 + rest;
                }
                w if unit(w).is_some() => {
                    let n = pending.take().unwrap_or(1);
                    match unit(w) {
                        Some("month") => {
                            let m = tm.month - 1 - n;
                            tm.year += m.div_euclid(12);
                            tm.month = m.rem_euclid(12) + 1;
                        }
                        Some("year") => tm.year -= n,
                        Some(u) => {
                            let len = match u {
                                "second" => 1,
                                "minute" => 60,
                                "hour" => 3600,
                                "day" => 86400,
                                _ => 7 * 86400,
                            };
                            tm = Tm::from_secs(tm.secs() - n * len);
                        }
                        None => {}
                    }
                    touched = true;
                }
                w if month_of(w).is_some() => {
                    tm.month = month_of(w).unwrap_or(1);
                    touched = true;
                }
                // A weekday next to a full date (`Tue, 14 Nov 2023`) adds nothing.
                w if is_weekday(w) => {}
                _ => return Err(refuse()),
            },
            Token::Number(n) => {
                let parts: Vec<&str> = n.split(['-', '/', '.', ':']).collect();
                let nums: Vec<i64> = parts.iter().filter_map(|p| p.parse().ok()).collect();
                if nums.len() != parts.len() {
                    return Err(refuse());
                }
                if n.contains(':') {
                    if n.contains(['-', '/', '.']) || nums.len() > 3 {
                        return Err(refuse());
                    }
                    let (h, m, sec) = (
                        nums[0],
                        nums.get(1).copied().unwrap_or(0),
                        nums.get(2).copied().unwrap_or(0),
                    );
                    if h > 24 || m > 59 || sec > 60 {
                        return Err(refuse());
                    }
                    tm.secs_of_day = h * 3600 + m * 60 + sec;
                    touched = true;
                } else if nums.len() == 3 {
                    let sep = if n.contains('-') {
                        '-'
                    } else if n.contains('/') {
                        '/'
                    } else {
                        '.'
                    };
                    let (y, m, d) = if parts[0].len() == 4 {
                        (nums[0], nums[1], nums[2])
                    } else if parts[2].len() == 4 && sep == '/' {
                        (nums[2], nums[0], nums[1])
                    } else if parts[2].len() == 4 {
                        (nums[2], nums[1], nums[0])
                    } else {
                        return Err(refuse());
                    };
                    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
                        return Err(refuse());
                    }
                    tm.year = y;
                    tm.month = m;
                    tm.day = d;
                    touched = true;
                } else if nums.len() == 1 {
                    let v = nums[0];
                    let next_is_unit =
                        matches!(toks.get(i + 1), Some(Token::Word(w)) if unit(w).is_some());
                    if next_is_unit {
                        pending = Some(v);
                    } else if v >= 100_000_000 {
                        epoch = Some(v);
                        touched = true;
                    } else if (1970..=2100).contains(&v) && parts[0].len() == 4 {
                        tm.year = v;
                        touched = true;
                    } else if (1..=31).contains(&v) {
                        tm.day = v;
                        touched = true;
                    } else {
                        return Err(refuse());
                    }
                } else {
                    return Err(refuse());
                }
            }
        }
        i += 1;
    }
    if pending.is_some() || !touched {
        return Err(refuse());
    }
    if let Some(e) = epoch {
        return Ok(e);
    }
    Ok(tm.secs() - zone.unwrap_or(0))
}

/// Reads a `--since`-style value that may start with `@` (seconds since the epoch).
pub(crate) fn read_date(s: &str, now: i64) -> Result<i64, String> {
    match s.strip_prefix('@') {
        Some(rest) => {
            let secs = rest.split_whitespace().next().unwrap_or("");
            secs.parse()
                .map_err(|_| format!("fatal: burrow's git cannot read the date '{s}'"))
        }
        None => approxidate(s, now),
    }
}

/// An ident's date as git reads `GIT_AUTHOR_DATE`, `GIT_COMMITTER_DATE` and `commit --date`
/// (`parse_date` in git's date.c): `SECONDS ZONE` (`1700000000 +0100`), or None where git
/// says "invalid date format". `now` is for the dates git refuses as too far in the future.
pub(crate) fn parse_ident_date(s: &str, now: i64) -> Option<String> {
    let (secs, offset) = parse_date_basic(s.as_bytes(), now)?;
    let sign = if offset < 0 { '-' } else { '+' };
    let o = offset.abs();
    Some(format!("{secs} {sign}{:02}{:02}", o / 60, o % 60))
}

/// git's `struct tm` while a date is read: -1 for a field not seen yet. `year` counts from
/// 1900 and `mon` from 0, as in C.
#[derive(Clone, Copy)]
struct CTm {
    year: i64,
    mon: i64,
    mday: i64,
    hour: i64,
    min: i64,
    sec: i64,
}

impl CTm {
    fn unset() -> CTm {
        CTm {
            year: -1,
            mon: -1,
            mday: -1,
            hour: -1,
            min: -1,
            sec: -1,
        }
    }

    /// git's `nodate`: nothing of the date or time seen yet.
    fn nodate(&self) -> bool {
        [
            self.year, self.mon, self.mday, self.hour, self.min, self.sec,
        ]
        .iter()
        .all(|v| *v < 0)
    }

    fn date_known(&self) -> bool {
        self.year != -1 && self.mon != -1 && self.mday != -1
    }

    /// git's `tm_to_time_t`: only 1970-2099, no normalisation (the day is not checked).
    fn to_time(self) -> Option<i64> {
        const MDAYS: [i64; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
        let year = self.year - 70;
        if !(0..=129).contains(&year) || !(0..=11).contains(&self.mon) {
            return None;
        }
        let mut day = self.mday;
        if self.mon < 2 || (year + 2) % 4 != 0 {
            day -= 1;
        }
        if self.hour < 0 || self.min < 0 || self.sec < 0 {
            return None;
        }
        let t = (year * 365 + (year + 1) / 4 + MDAYS[self.mon as usize] + day) * 86400
            + self.hour * 3600
            + self.min * 60
            + self.sec;
        (t != -1).then_some(t)
    }

    fn from_time(t: i64) -> CTm {
        let (y, m, d) = civil_from_days(t.div_euclid(86400));
        let rem = t.rem_euclid(86400);
        CTm {
            year: y - 1900,
            mon: m - 1,
            mday: d,
            hour: rem / 3600,
            min: rem % 3600 / 60,
            sec: rem % 60,
        }
    }

    /// git's `set_time`: a leap second and hour 24 are accepted.
    fn set_time(&mut self, hour: i64, min: i64, sec: i64) -> bool {
        if (0..=24).contains(&hour) && (0..60).contains(&min) && (0..=60).contains(&sec) {
            (self.hour, self.min, self.sec) = (hour, min, sec);
            return true;
        }
        false
    }

    /// git's `set_date`: with `now`, a date more than ten days ahead is refused and a
    /// missing year (-1) is this year's. Without it git writes the month and day at once,
    /// so they stay even when the year is then refused.
    fn set_date(&mut self, year: i64, month: i64, day: i64, now: Option<i64>) -> bool {
        if !(1..13).contains(&month) || !(1..32).contains(&day) {
            return false;
        }
        let mut r = *self;
        r.mon = month - 1;
        r.mday = day;
        if now.is_none() {
            (self.mon, self.mday) = (r.mon, r.mday);
        }
        r.year = match (year, now) {
            (-1, Some(n)) => CTm::from_time(n).year,
            (-1, None) => return false,
            (1970..2100, _) => year - 1900,
            (71..100, _) => year,
            (..38, _) => year + 100,
            _ => return false,
        };
        if let Some(n) = now
            && r.to_time().is_some_and(|t| n + 10 * 86400 < t)
        {
            return false;
        }
        self.mon = r.mon;
        self.mday = r.mday;
        if year != -1 {
            self.year = r.year;
        }
        true
    }
}

/// C's `strtoul`/`strtol` at `i`: leading blanks, a sign, digits. The value (saturated) and
/// where it ends; no digits leave `i` where it was.
fn strtonum(b: &[u8], i: usize) -> (i64, usize) {
    let mut j = i;
    while j < b.len() && matches!(b[j], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        j += 1;
    }
    let neg = j < b.len() && b[j] == b'-';
    if j < b.len() && matches!(b[j], b'+' | b'-') {
        j += 1;
    }
    let start = j;
    let mut v: i64 = 0;
    while j < b.len() && b[j].is_ascii_digit() {
        v = v.saturating_mul(10).saturating_add(i64::from(b[j] - b'0'));
        j += 1;
    }
    if j == start {
        return (0, i);
    }
    (if neg { -v } else { v }, j)
}

fn digit_at(b: &[u8], i: usize) -> bool {
    b.get(i).is_some_and(u8::is_ascii_digit)
}

/// git's `match_string`: how many leading characters of `b` match `name` (any case), or 0
/// when a letter or digit differs.
fn match_string(b: &[u8], name: &str) -> usize {
    let n = name.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = n.get(i).copied().unwrap_or(0);
        if b[i].eq_ignore_ascii_case(&c) {
            i += 1;
            continue;
        }
        if !b[i].is_ascii_alphanumeric() {
            break;
        }
        return 0;
    }
    i
}

/// The zone names git knows, with their hours east of UTC and whether they are summer time
/// (which git adds an hour for).
const ZONE_NAMES: &[(&str, i64, i64)] = &[
    ("IDLW", -12, 0),
    ("NT", -11, 0),
    ("CAT", -10, 0),
    ("HST", -10, 0),
    ("HDT", -10, 1),
    ("YST", -9, 0),
    ("YDT", -9, 1),
    ("PST", -8, 0),
    ("PDT", -8, 1),
    ("MST", -7, 0),
    ("MDT", -7, 1),
    ("CST", -6, 0),
    ("CDT", -6, 1),
    ("EST", -5, 0),
    ("EDT", -5, 1),
    ("AST", -3, 0),
    ("ADT", -3, 1),
    ("WAT", -1, 0),
    ("GMT", 0, 0),
    ("UTC", 0, 0),
    ("Z", 0, 0),
    ("WET", 0, 0),
    ("BST", 0, 1),
    ("CET", 1, 0),
    ("MET", 1, 0),
    ("MEWT", 1, 0),
    ("MEST", 1, 1),
    ("CEST", 1, 1),
    ("MESZ", 1, 1),
    ("FWT", 1, 0),
    ("FST", 1, 1),
    ("EET", 2, 0),
    ("EEST", 2, 1),
    ("WAST", 7, 0),
    ("WADT", 7, 1),
    ("CCT", 8, 0),
    ("JST", 9, 0),
    ("EAST", 10, 0),
    ("EADT", 10, 1),
    ("GST", 10, 0),
    ("NZT", 12, 0),
    ("NZST", 12, 0),
    ("NZDT", 12, 1),
    ("IDLE", 12, 0),
];

/// git's `match_alpha`: a month, a weekday, a zone name, AM/PM or ISO 8601's `T`; anything
/// else is skipped. How many bytes were read.
fn match_alpha(b: &[u8], tm: &mut CTm, offset: &mut i64) -> usize {
    const WEEKDAYS: [&str; 7] = [
        "Sundays",
        "Mondays",
        "Tuesdays",
        "Wednesdays",
        "Thursdays",
        "Fridays",
        "Saturdays",
    ];
    for (i, m) in sh_utility::time::LONG_MON.iter().enumerate() {
        let n = match_string(b, m);
        if n >= 3 {
            tm.mon = i as i64;
            return n;
        }
    }
    for w in WEEKDAYS {
        let n = match_string(b, w);
        if n >= 3 {
            return n;
        }
    }
    for (name, off, dst) in ZONE_NAMES {
        let n = match_string(b, name);
        if n >= 3 || n == name.len() {
            if *offset == -1 {
                *offset = 60 * (off + dst);
            }
            return n;
        }
    }
    if match_string(b, "PM") == 2 {
        tm.hour = tm.hour % 12 + 12;
        return 2;
    }
    if match_string(b, "AM") == 2 {
        tm.hour %= 12;
        return 2;
    }
    // ISO 8601's `yyyymmddTHHMMSS`, with less precision.
    if b[0] == b'T' && digit_at(b, 1) && tm.hour == -1 {
        tm.min = 0;
        tm.sec = 0;
        return 1;
    }
    1 + b[1..]
        .iter()
        .take_while(|c| c.is_ascii_alphabetic())
        .count()
}

/// git's `match_multi_number`: `num` then `c` (`:`, `-`, `/`, `.`) and one or two numbers
/// more, a time or a date in one of the orders git tries. 0 when it is neither.
fn match_multi_number(num: i64, c: u8, b: &[u8], end: usize, tm: &mut CTm, now: i64) -> usize {
    let (num2, mut end) = strtonum(b, end + 1);
    let mut num3 = -1;
    if b.get(end) == Some(&c) && digit_at(b, end + 1) {
        (num3, end) = strtonum(b, end + 1);
    }
    if c == b':' {
        if !tm.set_time(num, num2, num3.max(0)) {
            return 0;
        }
        // A fraction of a second after a full date is read and dropped.
        if b.get(end) == Some(&b'.') && digit_at(b, end + 1) && tm.date_known() {
            end = strtonum(b, end + 1).1;
        }
        return end;
    }
    let future = Some(now);
    let ok = (num > 70
        && (tm.set_date(num, num2, num3, None) || tm.set_date(num, num3, num2, None)))
        || (c != b'.' && tm.set_date(num3, num, num2, future))
        || tm.set_date(num3, num2, num, future)
        || (c == b'.' && tm.set_date(num3, num, num2, future));
    if ok { end } else { 0 }
}

/// git's `match_digit`: seconds since the epoch, a time, a date, a year, a day, a month or
/// a zone (`0200`), told apart by their digits and what came before.
fn match_digit(b: &[u8], tm: &mut CTm, offset: &mut i64, gmt: &mut bool, now: i64) -> usize {
    let (num, mut end) = strtonum(b, 0);
    // More than 8 digits: seconds since 1970 (8 could be YYYYMMDD).
    if num >= 100_000_000 && tm.nodate() && num < 67_767_976_233_532_799 {
        *tm = CTm::from_time(num);
        *gmt = true;
        return end;
    }
    if let Some(&c) = b.get(end)
        && matches!(c, b':' | b'.' | b'/' | b'-')
        && digit_at(b, end + 1)
    {
        let m = match_multi_number(num, c, b, end, tm, now);
        if m > 0 {
            return m;
        }
    }
    let n = b.iter().take_while(|c| c.is_ascii_digit()).count();
    // ISO 8601's compact forms: YYYYmmDD and HHMMSS.
    if n == 8 || n == 6 {
        let (n1, n2, n3) = (num / 10000, num % 10000 / 100, num % 100);
        if n == 8 {
            tm.set_date(n1, n2, n3, None);
        } else if tm.set_time(n1, n2, n3) && b.get(end) == Some(&b'.') && digit_at(b, end + 1) {
            end = strtonum(b, end + 1).1;
        }
        return end;
    }
    // After a `T`: HHMM or HH.
    if tm.hour == -1 && tm.min == 0 && tm.sec == 0 {
        let (h, m) = if n == 4 {
            (num / 100, num % 100)
        } else {
            (num, 0)
        };
        if (n == 4 || n == 2) && !tm.nodate() && tm.set_time(h, m, 0) {
            return n;
        }
        tm.min = -1;
        tm.sec = -1;
    }
    if n == 4 {
        if num <= 1400 && *offset == -1 {
            *offset = num / 100 * 60 + num % 100;
        } else if num > 1900 && num < 2100 {
            tm.year = num - 1900;
        }
        return n;
    }
    if n > 2 {
        return n;
    }
    // A day before a month or a year: `01 Apr 05` is April 1st, 2005.
    if num > 0 && num < 32 && tm.mday < 0 {
        tm.mday = num;
        return n;
    }
    if n == 2 && tm.year < 0 {
        if num < 10 && tm.mday >= 0 {
            tm.year = num + 100;
            return n;
        }
        if num >= 70 {
            tm.year = num;
            return n;
        }
    }
    if num > 0 && num < 13 && tm.mon < 0 {
        tm.mon = num - 1;
    }
    n
}

/// git's `match_tz`: `+hhmm`, `+hh`, `+hh:mm`; a zone out of range is read and ignored.
fn match_tz(b: &[u8], offset: &mut i64) -> usize {
    let (mut hour, mut end) = strtonum(b, 1);
    let n = end - 1;
    let mut min = 0;
    if n == 4 {
        min = hour % 100;
        hour /= 100;
    } else if n != 2 {
        min = 99;
    } else if b.get(end) == Some(&b':') {
        let (m, e) = strtonum(b, end + 1);
        end = e;
        min = if end - 1 != 5 { 99 } else { m };
    }
    if (0..60).contains(&min) && (0..24).contains(&hour) {
        let o = hour * 60 + min;
        *offset = if b[0] == b'-' { -o } else { o };
    }
    end
}

/// git's `match_object_header_date` after an `@`: exactly `SECONDS +hhmm`.
fn object_header_date(b: &[u8]) -> Option<(i64, i64)> {
    if !digit_at(b, 0) {
        return None;
    }
    let (stamp, end) = strtonum(b, 0);
    if b.get(end) != Some(&b' ') || !matches!(b.get(end + 1), Some(b'+' | b'-')) {
        return None;
    }
    let (ofs, e) = strtonum(b, end + 2);
    if !matches!(b.get(e), None | Some(b'\n')) || e != end + 6 {
        return None;
    }
    let ofs = ofs / 100 * 60 + ofs % 100;
    Some((stamp, if b[end + 1] == b'-' { -ofs } else { ofs }))
}

/// git's `parse_date_basic`: seconds since the epoch and the zone in minutes east of UTC.
/// Words it does not know are skipped; a date without a zone is local time, UTC here.
fn parse_date_basic(b: &[u8], now: i64) -> Option<(i64, i64)> {
    // 2099-12-31T23:59:59Z.
    const MAX: i64 = ((2100 - 1970) * 365 + 32) * 86400 - 1;
    if let Some(rest) = b.strip_prefix(b"@")
        && let Some(d) = object_header_date(rest)
    {
        return Some(d);
    }
    let mut tm = CTm::unset();
    let mut offset = -1;
    let mut gmt = false;
    let mut i = 0;
    while i < b.len() && b[i] != b'\n' && b[i] != 0 {
        let rest = &b[i..];
        let c = rest[0];
        let m = if c.is_ascii_alphabetic() {
            match_alpha(rest, &mut tm, &mut offset)
        } else if c.is_ascii_digit() {
            match_digit(rest, &mut tm, &mut offset, &mut gmt, now)
        } else if (c == b'-' || c == b'+') && digit_at(rest, 1) {
            match_tz(rest, &mut offset)
        } else {
            0
        };
        i += m.max(1);
    }
    let mut t = tm.to_time()?;
    if offset == -1 {
        offset = 0;
    }
    if !gmt {
        if (offset > 0 && offset * 60 > t) || (offset < 0 && -offset * 60 > MAX - t) {
            return None;
        }
        t -= offset * 60;
    }
    Some((t, offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2026-12-04 16:00:00 UTC.
    const NOW: i64 = 1_796_400_000;

    #[test]
    fn dates_as_git_prints_them() {
        assert_eq!(
            git_date(1112911993, "-0700"),
            "Thu Apr 7 15:13:13 2005 -0700"
        );
        assert_eq!(git_date(0, "+0000"), "Thu Jan 1 00:00:00 1970 +0000");
        let style = |v: &str| parse_date_style(v).unwrap_or_default();
        let t = 1_700_000_100;
        assert_eq!(show_date(t, "-0700", &style("short"), NOW), "2023-11-14");
        assert_eq!(
            show_date(t, "+0530", &style("iso-strict"), NOW),
            "2023-11-15T03:45:00+05:30"
        );
        assert_eq!(
            show_date(t, "+0000", &style("iso-strict"), NOW),
            "2023-11-14T22:15:00Z"
        );
        assert_eq!(
            show_date(t, "-0700", &style("rfc"), NOW),
            "Tue, 14 Nov 2023 15:15:00 -0700"
        );
        assert_eq!(
            show_date(t, "-0700", &style("local"), NOW),
            "Tue Nov 14 22:15:00 2023"
        );
        assert_eq!(
            show_date(t, "-0700", &style("format:%Y-%m-%d %H:%M %a %j"), NOW),
            "2023-11-14 15:15 Tue 318"
        );
        assert_eq!(relative(t, NOW), "3 years, 1 month ago");
        assert_eq!(relative(NOW - 30, NOW), "30 seconds ago");
        assert_eq!(relative(NOW - 3600, NOW), "60 minutes ago");
        assert_eq!(relative(NOW - 86400 * 20, NOW), "3 weeks ago");
        assert_eq!(relative(NOW - 86400 * 400, NOW), "1 year, 1 month ago");
        assert!(parse_date_style("foo").is_err());
    }

    #[test]
    fn approximate_dates() {
        let t = |s: &str| read_date(s, NOW);
        assert_eq!(t("2023-11-14 22:15"), Ok(1_700_000_100));
        assert_eq!(t("2023-11-14T22:15:00Z"), Ok(1_700_000_100));
        assert_eq!(t("2023-11-14 15:15:00 -0700"), Ok(1_700_000_100));
        assert_eq!(t("Tue, 14 Nov 2023 15:15:00 -0700"), Ok(1_700_000_100));
        assert_eq!(t("Tue Nov 14 15:15:00 2023 -0700"), Ok(1_700_000_100));
        assert_eq!(t("2023/11/14 22:15"), Ok(1_700_000_100));
        assert_eq!(t("14.11.2023 22:15"), Ok(1_700_000_100));
        assert_eq!(t("1700000100"), Ok(1_700_000_100));
        assert_eq!(t("@1700000100"), Ok(1_700_000_100));
        assert_eq!(t("2 weeks ago"), Ok(NOW - 14 * 86400));
        assert_eq!(t("3.days.ago"), Ok(NOW - 3 * 86400));
        assert_eq!(t("yesterday"), Ok(NOW - 86400));
        assert_eq!(t("1 year ago"), Ok(NOW - 365 * 86400));
        assert_eq!(t("1 month ago"), Ok(NOW - 30 * 86400));
        assert!(t("last monday").is_err());
        assert!(t("today").is_err());
        assert!(t("").is_err());
        assert!(t("3 parsecs ago").is_err());
    }

    #[test]
    fn ident_dates_as_git_reads_them() {
        // Each as Debian's git 2.47 takes it in GIT_AUTHOR_DATE (`git var GIT_AUTHOR_IDENT`).
        let cases = [
            ("2025-02-03T04:05:06+0000", Some("1738555506 +0000")),
            ("@1700000000 +0000", Some("1700000000 +0000")),
            ("@1700000000", Some("1700000000 +0000")),
            ("1700000000 +0000", Some("1700000000 +0000")),
            ("1700000000", Some("1700000000 +0000")),
            ("1700000000 -0130", Some("1700000000 -0130")),
            ("Thu, 07 Apr 2005 22:13:13 +0200", Some("1112904793 +0200")),
            ("2005-04-07T22:13:13", Some("1112911993 +0000")),
            ("2005-04-07 22:13:13", Some("1112911993 +0000")),
            ("2005-04-07T22:13:13+0200", Some("1112904793 +0200")),
            ("2005-04-07T22:13:13+02:00", Some("1112904793 +0200")),
            ("2005-04-07T22:13:13Z", Some("1112911993 +0000")),
            ("2005-04-07 22:13:13 -07:00", Some("1112937193 -0700")),
            ("2005-04-07T22:13:13.123Z", Some("1112911993 +0000")),
            ("Thu Apr 7 22:13:13 2005 -0700", Some("1112937193 -0700")),
            ("2005-04-07", None),
            ("22:13:13", None),
            ("04/07/2005 10:00", Some("1112868000 +0000")),
            ("07.04.2005 10:00", Some("1112868000 +0000")),
            ("20050407T221313", Some("1112911993 +0000")),
            ("20050407T2213", Some("1112911980 +0000")),
            ("Apr 7 2005 10pm", None),
            ("7 Apr 2005 10:00 PST", Some("1112896800 -0800")),
            ("2005.04.07 10:00 CEST", Some("1112860800 +0200")),
            ("yesterday", None),
            ("foo", None),
            ("@0 +0000", Some("0 +0000")),
            ("0 +0000", None),
            ("1969-12-31 23:00", None),
            ("2100-01-01 00:00", None),
            ("2005-04-07 22:13:13 +2500", Some("1112911993 +0000")),
            ("2005-04-07 22:13:13 +05", Some("1112893993 +0500")),
            ("Apr 2005 10:00", Some("1112176800 +0000")),
            ("2005-13-07 10:00", Some("1121248800 +0000")),
            ("2005-07-13 10:00", Some("1121248800 +0000")),
            ("2023-11-14 22:15:00 +0530 foo", Some("1699980300 +0530")),
            ("99-04-07 10:00", Some("923479200 +0000")),
            ("10:00 2005-04-07", Some("1112868000 +0000")),
        ];
        for (input, want) in cases {
            assert_eq!(parse_ident_date(input, NOW).as_deref(), want, "{input}");
        }
    }
}
