//! This process's resident memory, from `/proc/self/status` (Linux; 0
//! elsewhere).

/// A `kB` field of `/proc/self/status`, in bytes (0 when absent).
fn status_bytes(key: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| {
            v.trim()
                .trim_end_matches(" kB")
                .trim()
                .parse::<usize>()
                .ok()
        })
        .map_or(0, |kb| kb * 1024)
}

/// Peak resident memory since the last reset (`VmHWM`), in bytes.
pub(crate) fn peak_rss() -> usize {
    status_bytes("VmHWM:")
}

/// Current resident memory (`VmRSS`), in bytes.
pub(crate) fn current_rss() -> usize {
    status_bytes("VmRSS:")
}

/// Current resident memory (`VmRSS`) after resetting the peak to it.
pub(crate) fn reset_peak_rss() -> usize {
    // Writing 5 to clear_refs resets VmHWM to the current RSS (Linux 4.0+).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    peak_rss()
}
