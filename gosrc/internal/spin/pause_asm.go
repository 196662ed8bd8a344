//go:build amd64 || arm64

package spin

// pause executes n spin-loop hints (PAUSE, YIELD); n > 0.
//
//go:noescape
func pause(n uint32)
