//go:build !linux

package cpu

import (
	"errors"
	"runtime"
)

// memInfo is implemented for Linux only; vortexgo's supported platforms
// are Linux hosts.
func memInfo() (free, total uint64, err error) {
	return 0, 0, errors.New("cpu.Device.MemInfo: not implemented on " + runtime.GOOS + ", expected linux")
}

// hostLimit is unknown off Linux (0: only backend.MaxBytes bounds sizes).
func hostLimit() uint64 { return 0 }
