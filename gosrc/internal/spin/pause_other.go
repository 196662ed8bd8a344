//go:build !amd64 && !arm64

package spin

// pause is a no-op where no spin-loop hint is written for the architecture.
func pause(n uint32) {}
