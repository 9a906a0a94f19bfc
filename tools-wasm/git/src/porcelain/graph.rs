//! `git log --graph`: the drawing of history to the left of each commit, produced line by
//! line with the same layout rules as git's (columns of branch lines, `*` for the commit,
//! `|\` after a merge, `|/` and `_` while lines collapse, octopus dashes), so the text an
//! agent reads matches what git prints. Colours are not drawn: burrow's output is never a
//! terminal.
//!
//! The walk feeds commits in topological order ([`Graph::update`]); the printer asks for the
//! lines before a commit ([`Graph::show_commit`]), a prefix for each further line of its text
//! ([`Graph::show_oneline`]) and what is left after it ([`Graph::show_commit_msg`]).

use crate::plumbing::object::Oid;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// Every line is in its column: `| | `.
    Padding,
    /// The previous commit's drawing was cut short: `...`.
    Skip,
    /// Room being made around an octopus merge.
    PreCommit,
    /// The line with the commit's `*`.
    Commit,
    /// The line after a merge's `*`, one edge per parent.
    PostMerge,
    /// Lines moving left into their new columns.
    Collapsing,
}

/// The drawing's state between commits.
pub(crate) struct Graph {
    commit: Option<Oid>,
    /// The current commit's parents that are drawn (those the log shows).
    parents: Vec<Oid>,
    /// Width of this commit's lines (all padded to it).
    width: usize,
    expansion_row: usize,
    state: State,
    prev_state: State,
    /// The column of the current commit (the number of columns when it had none).
    commit_index: usize,
    prev_commit_index: usize,
    /// 0 when a merge's first parent is in a column to its left, 1 otherwise; -1 while
    /// undecided.
    merge_layout: i32,
    /// Columns this commit adds to the right (-1 when its edge joins the last column).
    edges_added: i32,
    prev_edges_added: i32,
    /// The commit each column leads to, before and after the current commit.
    columns: Vec<Oid>,
    new_columns: Vec<Oid>,
    /// For each character position, the column its line is heading for (-1: empty).
    mapping: Vec<i32>,
    old_mapping: Vec<i32>,
    mapping_size: usize,
}

const MERGE_CHARS: [char; 3] = ['/', '|', '\\'];

impl Graph {
    pub(crate) fn new() -> Graph {
        Graph {
            commit: None,
            parents: Vec::new(),
            width: 0,
            expansion_row: 0,
            state: State::Padding,
            prev_state: State::Padding,
            commit_index: 0,
            prev_commit_index: 0,
            merge_layout: 0,
            edges_added: 0,
            prev_edges_added: 0,
            columns: Vec::new(),
            new_columns: Vec::new(),
            mapping: Vec::new(),
            old_mapping: Vec::new(),
            mapping_size: 0,
        }
    }

    fn set_state(&mut self, s: State) {
        self.prev_state = self.state;
        self.state = s;
    }

    fn map(&self, i: i64) -> i32 {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.mapping.get(i).copied())
            .unwrap_or(-1)
    }

    fn set_map(&mut self, i: i64, v: i32) {
        if let Ok(i) = usize::try_from(i) {
            if i >= self.mapping.len() {
                self.mapping.resize(i + 1, -1);
            }
            self.mapping[i] = v;
        }
    }

    /// The columns, and the commit after them when none of them leads to it (a commit
    /// without children shown yet).
    fn slots(&self, commit: Oid) -> Vec<Oid> {
        let mut slots = self.columns.clone();
        if !slots.contains(&commit) {
            slots.push(commit);
        }
        slots
    }

    fn num_parents(&self) -> i32 {
        self.parents.len() as i32
    }

    /// The next commit to draw, with its parents that the log shows (only the first with
    /// `--first-parent`).
    pub(crate) fn update(&mut self, commit: Oid, parents: Vec<Oid>) {
        self.commit = Some(commit);
        self.parents = parents;
        self.prev_commit_index = self.commit_index;
        self.update_columns(commit);
        self.expansion_row = 0;
        // No line was printed in the state set here, so the previous state stays.
        self.state = if self.state != State::Padding {
            State::Skip
        } else if self.needs_pre_commit_line() {
            State::PreCommit
        } else {
            State::Commit
        };
    }

    fn update_columns(&mut self, commit: Oid) {
        self.columns = std::mem::take(&mut self.new_columns);
        let max_new = self.columns.len() + self.parents.len();
        self.mapping_size = 2 * max_new;
        if self.mapping.len() < self.mapping_size {
            self.mapping.resize(self.mapping_size, -1);
        }
        if self.old_mapping.len() < self.mapping_size {
            self.old_mapping.resize(self.mapping_size, -1);
        }
        self.mapping[..self.mapping_size].fill(-1);
        self.width = 0;
        self.prev_edges_added = self.edges_added;
        self.edges_added = 0;
        for (i, col) in self.slots(commit).into_iter().enumerate() {
            if col == commit {
                self.commit_index = i;
                self.merge_layout = -1;
                for p in self.parents.clone() {
                    self.insert_into_new_columns(p, i as i32);
                }
                if self.parents.is_empty() {
                    self.width += 2;
                }
            } else {
                self.insert_into_new_columns(col, -1);
            }
        }
        while self.mapping_size > 1 && self.mapping[self.mapping_size - 1] < 0 {
            self.mapping_size -= 1;
        }
    }

    fn insert_into_new_columns(&mut self, commit: Oid, idx: i32) {
        let i = match self.new_columns.iter().position(|c| *c == commit) {
            Some(i) => i,
            None => {
                self.new_columns.push(commit);
                self.new_columns.len() - 1
            }
        } as i32;
        let mapping_idx: i64;
        if self.num_parents() > 1 && idx > -1 && self.merge_layout == -1 {
            // A merge's first parent: its layout depends on whether that parent is already
            // in a column to the left.
            let dist = idx - i;
            let shift = if dist > 1 { 2 * dist - 3 } else { 1 };
            self.merge_layout = if dist > 0 { 0 } else { 1 };
            self.edges_added = self.num_parents() + self.merge_layout - 2;
            mapping_idx = self.width as i64 + i64::from((self.merge_layout - 1) * shift);
            self.width += 2 * self.merge_layout as usize;
        } else if self.edges_added > 0 && self.width >= 2 && i == self.map(self.width as i64 - 2) {
            // The new edge joins the last column at once.
            mapping_idx = self.width as i64 - 2;
            self.edges_added = -1;
        } else {
            mapping_idx = self.width as i64;
            self.width += 2;
        }
        self.set_map(mapping_idx, i);
    }

    fn num_dashed_parents(&self) -> i32 {
        self.num_parents() + self.merge_layout - 3
    }

    fn needs_pre_commit_line(&self) -> bool {
        self.num_parents() >= 3
            && self.commit_index + 1 < self.columns.len()
            && (self.expansion_row as i32) < self.num_dashed_parents() * 2
    }

    fn mapping_correct(&self) -> bool {
        (0..self.mapping_size).all(|i| {
            let t = self.mapping[i];
            t < 0 || t as usize == i / 2
        })
    }

    fn pad(&self, line: &mut String) {
        let w = line.chars().count();
        if w < self.width {
            line.extend(std::iter::repeat_n(' ', self.width - w));
        }
    }

    fn padding_row(&self, line: &mut String) {
        for _ in &self.new_columns {
            line.push_str("| ");
        }
    }

    fn skip_row(&mut self, line: &mut String) {
        line.push_str("...");
        if self.needs_pre_commit_line() {
            self.set_state(State::PreCommit);
        } else {
            self.set_state(State::Commit);
        }
    }

    fn pre_commit_row(&mut self, line: &mut String) {
        let mut seen_this = false;
        for (i, col) in self.columns.iter().enumerate() {
            if Some(*col) == self.commit {
                seen_this = true;
                line.push('|');
                line.extend(std::iter::repeat_n(' ', self.expansion_row));
            } else if seen_this && self.expansion_row == 0 {
                if self.prev_state == State::PostMerge && self.prev_commit_index < i {
                    line.push('\\');
                } else {
                    line.push('|');
                }
            } else if seen_this {
                line.push('\\');
            } else {
                line.push('|');
            }
            line.push(' ');
        }
        self.expansion_row += 1;
        if !self.needs_pre_commit_line() {
            self.set_state(State::Commit);
        }
    }

    fn commit_row(&mut self, line: &mut String) {
        let Some(commit) = self.commit else { return };
        let mut seen_this = false;
        for (i, col) in self.slots(commit).into_iter().enumerate() {
            if col == commit {
                seen_this = true;
                line.push('*');
                if self.num_parents() > 2 {
                    let dashed = self.num_dashed_parents();
                    for k in 0..dashed {
                        line.push('-');
                        line.push(if k == dashed - 1 { '.' } else { '-' });
                    }
                }
            } else if seen_this && self.edges_added > 1 {
                line.push('\\');
            } else if seen_this && self.edges_added == 1 {
                if self.prev_state == State::PostMerge
                    && self.prev_edges_added > 0
                    && self.prev_commit_index < i
                {
                    line.push('\\');
                } else {
                    line.push('|');
                }
            } else if self.prev_state == State::Collapsing
                && self.old_mapping.get(2 * i + 1).copied() == Some(i as i32)
                && self.map(2 * i as i64) < i as i32
            {
                line.push('/');
            } else {
                line.push('|');
            }
            line.push(' ');
        }
        if self.num_parents() > 1 {
            self.set_state(State::PostMerge);
        } else if self.mapping_correct() {
            self.set_state(State::Padding);
        } else {
            self.set_state(State::Collapsing);
        }
    }

    fn post_merge_row(&mut self, line: &mut String) {
        let Some(commit) = self.commit else { return };
        let first_parent = self.parents.first().copied();
        let mut seen_this = false;
        let mut parent_seen = false;
        for (i, col) in self.slots(commit).into_iter().enumerate() {
            if col == commit {
                seen_this = true;
                let mut idx = self.merge_layout.clamp(0, 2) as usize;
                let n = self.parents.len();
                for j in 0..n {
                    line.push(MERGE_CHARS[idx]);
                    if idx == 2 {
                        if self.edges_added > 0 || j + 1 < n {
                            line.push(' ');
                        }
                    } else {
                        idx += 1;
                    }
                }
                if self.edges_added == 0 {
                    line.push(' ');
                }
            } else if seen_this {
                line.push(if self.edges_added > 0 { '\\' } else { '|' });
                line.push(' ');
            } else {
                line.push('|');
                if self.merge_layout != 0 || i as i64 != self.commit_index as i64 - 1 {
                    line.push(if parent_seen { '_' } else { ' ' });
                }
            }
            if Some(col) == first_parent {
                parent_seen = true;
            }
        }
        if self.mapping_correct() {
            self.set_state(State::Padding);
        } else {
            self.set_state(State::Collapsing);
        }
    }

    fn collapsing_row(&mut self, line: &mut String) {
        std::mem::swap(&mut self.mapping, &mut self.old_mapping);
        let size = self.mapping_size;
        if self.mapping.len() < size {
            self.mapping.resize(size, -1);
        }
        self.mapping[..size].fill(-1);
        let mut horizontal_edge: i64 = -1;
        let mut horizontal_target: i32 = -1;
        for i in 0..size as i64 {
            let target = self.old_mapping.get(i as usize).copied().unwrap_or(-1);
            if target < 0 {
                continue;
            }
            // Lines only ever move left.
            if i64::from(target) * 2 == i {
                self.set_map(i, target);
            } else if self.map(i - 1) < 0 {
                self.set_map(i - 1, target);
                if horizontal_edge == -1 {
                    horizontal_edge = i;
                    horizontal_target = target;
                    let mut j = i64::from(target) * 2 + 3;
                    while j < i - 2 {
                        self.set_map(j, target);
                        j += 2;
                    }
                }
            } else if self.map(i - 1) == target {
                // Joins the line to its left, which has the same parent.
            } else {
                // Crosses the line to its left.
                self.set_map(i - 2, target);
                if horizontal_edge == -1 {
                    horizontal_target = target;
                    horizontal_edge = i - 1;
                    let mut j = i64::from(target) * 2 + 3;
                    while j < i - 2 {
                        self.set_map(j, target);
                        j += 2;
                    }
                }
            }
        }
        if self.old_mapping.len() < size {
            self.old_mapping.resize(size, -1);
        }
        self.old_mapping[..size].copy_from_slice(&self.mapping[..size]);
        if size > 0 && self.mapping[size - 1] < 0 {
            self.mapping_size -= 1;
        }
        let mut used_horizontal = false;
        for i in 0..self.mapping_size as i64 {
            let target = self.map(i);
            if target < 0 {
                line.push(' ');
            } else if i64::from(target) * 2 == i {
                line.push('|');
            } else if target == horizontal_target && i != horizontal_edge - 1 {
                // Only the first segment of a horizontal run continues to the next line.
                if i != i64::from(target) * 2 + 3 {
                    self.set_map(i, -1);
                }
                used_horizontal = true;
                line.push('_');
            } else {
                if used_horizontal && i < horizontal_edge {
                    self.set_map(i, -1);
                }
                line.push('/');
            }
        }
        if self.mapping_correct() {
            self.set_state(State::Padding);
        }
    }

    /// The next line of the drawing, and whether it was the commit's line.
    fn next_line(&mut self) -> (String, bool) {
        let mut line = String::new();
        if self.commit.is_none() {
            return (line, false);
        }
        let mut shown = false;
        match self.state {
            State::Padding => self.padding_row(&mut line),
            State::Skip => self.skip_row(&mut line),
            State::PreCommit => self.pre_commit_row(&mut line),
            State::Commit => {
                self.commit_row(&mut line);
                shown = true;
            }
            State::PostMerge => self.post_merge_row(&mut line),
            State::Collapsing => self.collapsing_row(&mut line),
        }
        self.pad(&mut line);
        (line, shown)
    }

    /// A line that continues every branch line without reaching the commit's line.
    fn padding_line(&mut self) -> String {
        if self.state != State::Commit {
            return self.next_line().0;
        }
        let mut line = String::new();
        for col in &self.columns {
            line.push('|');
            if Some(*col) == self.commit && self.parents.len() > 2 {
                line.extend(std::iter::repeat_n(' ', (self.parents.len() - 2) * 2));
            } else {
                line.push(' ');
            }
        }
        self.pad(&mut line);
        self.prev_state = State::Padding;
        line
    }

    fn finished(&self) -> bool {
        self.state == State::Padding
    }

    /// The lines up to and including the commit's line (without its newline: the commit's
    /// first line of text follows it).
    pub(crate) fn show_commit(&mut self, out: &mut String) {
        let mut shown = false;
        if self.finished() {
            out.push_str(&self.padding_line());
            shown = true;
        }
        while !shown && !self.finished() {
            let (line, s) = self.next_line();
            out.push_str(&line);
            if !s {
                out.push('\n');
            }
            shown = s;
        }
    }

    /// The drawing's next line, as the prefix of a line of text.
    pub(crate) fn show_oneline(&mut self, out: &mut String) {
        out.push_str(&self.next_line().0);
    }

    /// A padding line, as the prefix of a separator line.
    pub(crate) fn show_padding(&mut self, out: &mut String) {
        out.push_str(&self.padding_line());
    }

    fn show_remainder(&mut self, out: &mut String) {
        if self.finished() {
            return;
        }
        loop {
            out.push_str(&self.next_line().0);
            if self.finished() {
                break;
            }
            out.push('\n');
        }
    }

    /// A commit's text after its first line's prefix: each further line gets the drawing's
    /// next line in front, and what is left of the drawing follows.
    pub(crate) fn show_commit_msg(&mut self, out: &mut String, text: &str) {
        let mut rest = text;
        while !rest.is_empty() {
            let (piece, next) = match rest.find('\n') {
                Some(n) => rest.split_at(n + 1),
                None => (rest, ""),
            };
            out.push_str(piece);
            if !next.is_empty() {
                self.show_oneline(out);
            }
            rest = next;
        }
        let terminated = text.ends_with('\n');
        if !self.finished() {
            if !terminated {
                out.push('\n');
            }
            self.show_remainder(out);
            if terminated {
                out.push('\n');
            }
        }
    }
}
