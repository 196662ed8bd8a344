//go:build linux

package acquire

import "golang.org/x/sys/unix"

// maxRingBytes bounds a simulated replay ring: half the host's RAM (the
// ring is synthesised into Go memory, pinned copies double it), or 1 TiB
// when the total cannot be read.
func maxRingBytes() int {
	const fallback = 1 << 40
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil || si.Totalram == 0 {
		return fallback
	}
	unit := uint64(si.Unit)
	if unit == 0 {
		unit = 1
	}
	total := uint64(si.Totalram) * unit
	if total/2 > fallback {
		return fallback
	}
	return int(total / 2)
}

// maxPinnedFileBytes bounds the file a FileAcquisition pins in place by
// default (FileConfig.Pin PinAuto): a quarter of the host's RAM, so that a
// replay never locks the memory the rest of the host needs.
func maxPinnedFileBytes() int64 { return int64(maxRingBytes()) / 2 }
