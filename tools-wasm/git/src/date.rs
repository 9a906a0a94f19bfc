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
pub(super) fn civil(secs: i64, zone: &str) -> (i64, i64, i64, i64, i64) {
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
pub(super) fn git_date(secs: i64, zone: &str) -> String {
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
pub(super) fn iso_date(secs: i64, zone: &str) -> String {
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
pub(super) enum DateMode {
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
pub(super) struct DateStyle {
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
pub(super) fn parse_date_style(v: &str) -> Result<DateStyle, String> {
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
pub(super) fn show_date(secs: i64, zone: &str, style: &DateStyle, now: i64) -> String {
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
pub(super) fn relative(time: i64, now: i64) -> String {
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

/// Reads a `--since`/`--until` date as git's approxidate does, at `now`; what burrow cannot
/// read exactly is refused (git would take it as "now").
pub(super) fn approxidate(s: &str, now: i64) -> Result<i64, String> {
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
pub(super) fn read_date(s: &str, now: i64) -> Result<i64, String> {
    match s.strip_prefix('@') {
        Some(rest) => {
            let secs = rest.split_whitespace().next().unwrap_or("");
            secs.parse()
                .map_err(|_| format!("fatal: burrow's git cannot read the date '{s}'"))
        }
        None => approxidate(s, now),
    }
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
}
