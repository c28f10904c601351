//! How much memory this process may use: the machine's physical memory, or less where a
//! control group (v1 or v2, the process's own or any group above it) sets a lower limit. Read
//! once, at the first ask, from `/proc` and `/sys/fs/cgroup`; sizes given as a percentage of
//! memory (`hot-cache-size 25%`) are taken of this.

use std::path::Path;
use std::sync::OnceLock;

/// The memory available to the process in bytes, or `None` when neither `/proc/meminfo` nor a
/// control group says (not Linux): a percentage then falls back to its caller's default.
pub fn limit() -> Option<u64> {
    static LIMIT: OnceLock<Option<u64>> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let physical = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|text| mem_total(&text));
        let groups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let grouped = group_limits(&groups, Path::new("/sys/fs/cgroup"));
        [physical, grouped].into_iter().flatten().min()
    })
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// The lowest memory limit of the process's control groups (`/proc/self/cgroup`'s text) and
/// their ancestors under `root`: v2's `memory.max` (unified hierarchy, `0::/path`) and v1's
/// `memory.limit_in_bytes` (the `memory` controller's line). "max" and v1's huge "no limit"
/// values are no limit.
fn group_limits(cgroup: &str, root: &Path) -> Option<u64> {
    let mut lowest: Option<u64> = None;
    for line in cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (dir, file) = if controllers.is_empty() {
            (root.to_path_buf(), "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            (root.join("memory"), "memory.limit_in_bytes")
        } else {
            continue;
        };
        // The group and each group above it, up to the hierarchy's root.
        let mut at = Some(Path::new(path.trim_start_matches('/')));
        while let Some(rel) = at {
            let limit = std::fs::read_to_string(dir.join(rel).join(file))
                .ok()
                .and_then(|text| text.trim().parse::<u64>().ok())
                // v1 reports "no limit" as the largest page-aligned i64.
                .filter(|&n| n < (1 << 62));
            if let Some(n) = limit {
                lowest = Some(lowest.map_or(n, |l| l.min(n)));
            }
            at = rel.parent();
        }
    }
    lowest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_total_is_read_in_bytes() {
        let text = "MemTotal:       24000000 kB\nMemFree:         100 kB\n";
        assert_eq!(mem_total(text), Some(24_000_000 * 1024));
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
    }

    #[test]
    fn the_lowest_limit_of_a_group_and_its_ancestors_counts_and_max_is_none() {
        let root = tempfile::tempdir().unwrap();
        let v2 = root.path();
        std::fs::create_dir_all(v2.join("outer/inner")).unwrap();
        std::fs::write(v2.join("outer/memory.max"), "1073741824\n").unwrap();
        std::fs::write(v2.join("outer/inner/memory.max"), "max\n").unwrap();
        assert_eq!(group_limits("0::/outer/inner\n", v2), Some(1 << 30));
        std::fs::write(v2.join("outer/memory.max"), "max\n").unwrap();
        assert_eq!(group_limits("0::/outer/inner\n", v2), None);

        let v1 = v2.join("memory/job");
        std::fs::create_dir_all(&v1).unwrap();
        std::fs::write(v1.join("memory.limit_in_bytes"), "268435456\n").unwrap();
        std::fs::write(
            v2.join("memory/memory.limit_in_bytes"),
            "9223372036854771712\n",
        )
        .unwrap();
        assert_eq!(
            group_limits("4:cpu,cpuacct:/job\n3:memory:/job\n", v2),
            Some(256 << 20)
        );
        // A line of another controller alone says nothing.
        assert_eq!(group_limits("4:cpu:/job\n", v2), None);
    }
}
