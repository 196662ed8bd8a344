//go:build !linux

package acquire

// maxRingBytes bounds a simulated replay ring where the host's memory is
// not read: 64 GiB.
func maxRingBytes() int { return 1 << 36 }
