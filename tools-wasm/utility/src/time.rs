//! Dates without a time-zone database (the sandbox's clock is UTC): days to and from civil
//! dates, and `strftime`.

/// Seconds since the epoch now.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Seconds and nanoseconds since the epoch now.
pub fn now_ns() -> (i64, u32) {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| (d.as_secs() as i64, d.subsec_nanos()))
        .unwrap_or((0, 0))
}

/// [`strftime`] of a time with nanoseconds: `%N` is the nanoseconds (nine digits) and `%3N`
/// (any width 1-9) their first digits, as GNU date prints them.
pub fn strftime_ns(secs: i64, nanos: u32, fmt: &str) -> String {
    let digits = format!("{nanos:09}");
    let mut pre = String::with_capacity(fmt.len());
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            pre.push(c);
            continue;
        }
        let mut width = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            width.push(*d);
            chars.next();
        }
        match chars.peek() {
            Some('N') => {
                chars.next();
                let n = width.parse::<usize>().unwrap_or(9).clamp(1, 9);
                pre.push_str(&digits[..n]);
            }
            Some('%') if width.is_empty() => {
                chars.next();
                pre.push_str("%%");
            }
            _ => {
                pre.push('%');
                pre.push_str(&width);
            }
        }
    }
    strftime(secs, &pre)
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month, day) of a day count since 1970-01-01 (the inverse of `days_from_civil`).
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Expands the `%X` directives of `fmt` with `each`, which returns false for a directive it
/// does not know (kept as written); `%%` is `%`.
pub fn percent_format(fmt: &str, mut each: impl FnMut(char, &mut String) -> bool) -> String {
    let mut out = String::new();
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some(d) => {
                if !each(d, &mut out) {
                    out.push('%');
                    out.push(d);
                }
            }
            None => out.push('%'),
        }
    }
    out
}

/// The months' full names, January first (strftime's `%B`; git's date parser reads them).
pub const LONG_MON: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// A small strftime for `date +FORMAT` (UTC).
pub fn strftime(secs: i64, fmt: &str) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let wday = (days + 4).rem_euclid(7) as usize;
    const MON: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    const DAY: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const LONG_DAY: [&str; 7] = [
        "Sunday",
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
    ];
    let (hour, minute) = (rem / 3600, rem % 3600 / 60);
    // Day of the year: days since January 1st of `year`, plus one.
    let jan1 = days_from_civil(year, 1, 1);
    let yday = days - jan1 + 1;
    let hour12 = if hour % 12 == 0 { 12 } else { hour % 12 };
    percent_format(fmt, |d, out| {
        match d {
            'Y' => out.push_str(&year.to_string()),
            'm' => out.push_str(&format!("{month:02}")),
            'd' => out.push_str(&format!("{day:02}")),
            'e' => out.push_str(&format!("{day:>2}")),
            'H' => out.push_str(&format!("{:02}", rem / 3600)),
            'M' => out.push_str(&format!("{:02}", rem % 3600 / 60)),
            'S' => out.push_str(&format!("{:02}", rem % 60)),
            's' => out.push_str(&secs.to_string()),
            'b' | 'h' => out.push_str(MON[(month - 1) as usize]),
            'a' => out.push_str(DAY[wday]),
            'F' => out.push_str(&format!("{year}-{month:02}-{day:02}")),
            'T' => out.push_str(&format!(
                "{:02}:{:02}:{:02}",
                rem / 3600,
                rem % 3600 / 60,
                rem % 60
            )),
            'Z' => out.push_str("UTC"),
            'j' => out.push_str(&format!("{yday:03}")),
            'y' => out.push_str(&format!("{:02}", year.rem_euclid(100))),
            'C' => out.push_str(&format!("{:02}", year.div_euclid(100))),
            'A' => out.push_str(LONG_DAY[wday]),
            'B' => out.push_str(LONG_MON[(month - 1) as usize]),
            'D' => out.push_str(&format!("{month:02}/{day:02}/{:02}", year.rem_euclid(100))),
            'R' => out.push_str(&format!("{hour:02}:{minute:02}")),
            'u' => out.push_str(&(if wday == 0 { 7 } else { wday }).to_string()),
            'w' => out.push_str(&wday.to_string()),
            'N' => out.push_str("000000000"),
            'z' => out.push_str("+0000"),
            'p' => out.push_str(if hour < 12 { "AM" } else { "PM" }),
            'I' => out.push_str(&format!("{hour12:02}")),
            'k' => out.push_str(&format!("{hour:>2}")),
            'l' => out.push_str(&format!("{hour12:>2}")),
            'n' => out.push('\n'),
            't' => out.push('\t'),
            _ => return false,
        }
        true
    })
}
