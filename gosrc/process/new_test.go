package process

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
)

// TestNewOn: a processor on a device it cannot run on is refused naming
// the device, and a bad configuration is a ValueError (backend.ErrInvalid)
// whatever the constructor's error was.
func TestNewOn(t *testing.T) {
	_, err := NewCUDAProcessorOn(cpu.Default(), smallConfig(16, 4))
	require.ErrorIs(t, err, backend.ErrInvalid)
	require.ErrorContains(t, err, "CUDAProcessor on device \"cpu\", expected a CUDA device")
	bad := smallConfig(16, 4)
	bad.Slots = 0
	_, err = NewCPUProcessorOn(cpu.Default(), bad)
	require.ErrorIs(t, err, backend.ErrInvalid)
	require.ErrorContains(t, err, "Slots=0")
	_, err = NewCopyProcessorOn(cpu.Default(), bad)
	require.ErrorIs(t, err, backend.ErrInvalid)
	_, err = NewNullProcessorOn(cpu.Default(), smallConfig(0, 4))
	require.ErrorIs(t, err, backend.ErrInvalid)
	p, err := NewCPUProcessorOn(cpu.Default(), smallConfig(16, 4))
	require.NoError(t, err)
	require.NoError(t, p.Close())
}
