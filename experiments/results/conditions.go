package results

// Conditions are what the harness saw on the machine around one run, the
// facts that explain a run slower than its repetitions (issue 14: ranges
// explained, not called noise): how loaded the machine was, how much CPU
// went to processes other than the system under test and its driver, and,
// for a consumer, whether its log was in the page cache.
type Conditions struct {
	// LoadAverage is /proc/loadavg's 1-minute figure when the run began.
	LoadAverage float64 `json:"load_average"`
	// DirtyBytes is the page cache's data not yet on the disk when the run
	// began (/proc/meminfo Dirty + Writeback): what earlier runs left for
	// the disk to write while this one ran. 0 when not read.
	DirtyBytes int64 `json:"dirty_bytes,omitempty"`
	// WallSeconds is how long the driver process ran, start-up included.
	WallSeconds float64 `json:"wall_seconds,omitempty"`
	// BusyCPUSeconds is the CPU time every core of the machine spent busy
	// (not idle, not waiting for I/O) while the driver ran (/proc/stat).
	BusyCPUSeconds float64 `json:"busy_cpu_seconds,omitempty"`
	// ClientCPUSeconds is the driver process's user and system time.
	ClientCPUSeconds float64 `json:"client_cpu_seconds,omitempty"`
	// CacheDrop is how the page cache was emptied before a cold run:
	// "drop_caches" (the whole machine's, as root) or "fadvise" (the log's
	// files only); empty for a run that read from the cache as it was.
	CacheDrop string `json:"cache_drop,omitempty"`
	// CacheResident is the share of the log (0 to 1) that was in the page
	// cache when a consumer run began (mincore); nil when not measured.
	CacheResident *float64 `json:"cache_resident,omitempty"`
}

// OtherCPU is the CPU the rest of the machine took while the run's driver
// ran, in cores (CPU-seconds per second): busy time minus the system under
// test's (brokerCPU) and the driver's. 0 when not measured.
func (c *Conditions) OtherCPU(brokerCPU float64) float64 {
	if c == nil || c.WallSeconds <= 0 || c.BusyCPUSeconds <= 0 {
		return 0
	}
	return max(0, (c.BusyCPUSeconds-brokerCPU-c.ClientCPUSeconds)/c.WallSeconds)
}
