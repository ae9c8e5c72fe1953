//! A line diff by longest common subsequence, as `diff` prints a change: old lines first.

/// Diffs longer than this many lines are cut, saying how many were left out.
const MAX_DIFF_LINES: usize = 200;

/// The lines of `new` not in `old` (`+ `) and of `old` not in `new` (`- `), in order, by their longest common
/// subsequence; unchanged lines are left out.
pub fn diff(old: &[String], new: &[String]) -> Vec<String> {
    let (n, m) = (old.len(), new.len());
    if n.saturating_mul(m) > 4_000_000 {
        return vec![format!("- ({n} lines)"), format!("+ ({m} lines)")];
    }
    // lcs[i][j]: the longest common subsequence of old[i..] and new[j..].
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if old[i] == new[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n || j < m {
        if i < n && j < m && old[i] == new[j] {
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            // Old lines first, as diff prints a change.
            out.push(format!("- {}", old[i]));
            i += 1;
        } else {
            out.push(format!("+ {}", new[j]));
            j += 1;
        }
    }
    if out.len() > MAX_DIFF_LINES {
        let left = out.len() - MAX_DIFF_LINES;
        out.truncate(MAX_DIFF_LINES);
        out.push(format!("… {left} more lines"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn diffs_show_only_what_changed() {
        let old = l(&["a: 1", "b: 2", "c: 3"]);
        let new = l(&["a: 1", "b: 5", "c: 3", "d: 4"]);
        assert_eq!(diff(&old, &new), ["- b: 2", "+ b: 5", "+ d: 4"]);
        assert!(diff(&old, &old).is_empty());
    }
}
