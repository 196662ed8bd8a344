//go:build linux

package cpu

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// memInfo reports MemAvailable from /proc/meminfo as the free estimate (it
// counts reclaimable page cache, unlike sysinfo's freeram) and sysinfo's
// total RAM. Kernels older than 3.14 lack MemAvailable; then freeram plus
// buffers is the estimate.
func memInfo() (free, total uint64, err error) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, 0, fmt.Errorf("cpu.Device.MemInfo: sysinfo: %w", err)
	}
	unit := uint64(si.Unit)
	if unit == 0 {
		unit = 1
	}
	total = uint64(si.Totalram) * unit
	free = (uint64(si.Freeram) + uint64(si.Bufferram)) * unit
	if avail, ok := memAvailable(); ok {
		free = avail
	}
	return free, total, nil
}

func memAvailable() (uint64, bool) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) >= 2 && string(fields[0]) == "MemAvailable:" {
			kb, err := strconv.ParseUint(string(fields[1]), 10, 64)
			if err != nil {
				return 0, false
			}
			return kb * 1024, true
		}
	}
	return 0, false
}

// hostLimit is the host's RAM plus swap in bytes (0 if unknown): no single
// allocation can be backed beyond it. Some VMs report less RAM at start than
// they grow to; swap and the RAM they report then still bound what a
// mapping can be backed by at that moment.
func hostLimit() uint64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0
	}
	unit := uint64(si.Unit)
	if unit == 0 {
		unit = 1
	}
	return (uint64(si.Totalram) + uint64(si.Totalswap)) * unit
}
