package testmem

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/hostmem"
)

// grow recurses deep enough to make the goroutine's stack grow (and move).
func grow(n int) int {
	var pad [256]byte
	pad[n%256] = byte(n)
	if n == 0 {
		return int(pad[0])
	}
	return grow(n-1) + int(pad[n%256])
}

// TestSliceStaysPut: the address stays that of the slice through a stack
// growth, and writes through it are seen in the slice.
func TestSliceStaysPut(t *testing.T) {
	for _, n := range []int{1, 7, 4096} {
		s, p := Slice[int64](t, n)
		require.Len(t, s, n)
		done := make(chan struct{})
		var err error
		go func() { // a fresh goroutine: a small stack that grow moves
			defer close(done)
			grow(2000)
			var view []int64
			if view, err = hostmem.Span[int64](int(p), n); err == nil { // as the bindings read an address
				view[n-1] = 42
			}
		}()
		<-done
		require.NoError(t, err)
		require.Equal(t, int64(42), s[n-1])
		require.Equal(t, p, uintptr(unsafe.Pointer(&s[0])))
	}
}
