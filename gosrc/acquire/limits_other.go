//go:build !linux

package acquire

// maxRingBytes bounds a simulated replay ring where the host's memory is
// not read: 64 GiB.
func maxRingBytes() int { return 1 << 36 }

// maxPinnedFileBytes: where the host's memory is not read, no file is
// pinned by default (PinAlways still pins).
func maxPinnedFileBytes() int64 { return 0 }
