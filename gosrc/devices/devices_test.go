package devices

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
)

// fakeCUDA stands in for the driver: n devices, or initErr.
type fakeCUDA struct {
	initErr error
	n       int
	broken  map[int]bool // ordinals whose Device call fails
}

// fakeDevice is a CUDA device as far as selection cares.
type fakeDevice struct {
	backend.Device
	ordinal int
}

func (d fakeDevice) Kind() backend.Kind { return backend.CUDA }
func (d fakeDevice) Ordinal() int       { return d.ordinal }

func (f fakeCUDA) Init() error { return f.initErr }
func (f fakeCUDA) DeviceCount() (int, error) {
	if f.initErr != nil {
		return 0, f.initErr
	}
	return f.n, nil
}
func (f fakeCUDA) Device(i int) (backend.Device, error) {
	if f.initErr != nil {
		return nil, f.initErr
	}
	if i < 0 || i >= f.n {
		return nil, fmt.Errorf("cuda.GetDevice: ordinal=%d, expected 0 <= ordinal < %d", i, f.n)
	}
	if f.broken[i] {
		return nil, errors.New("context creation failed")
	}
	return fakeDevice{ordinal: i}, nil
}

func withProvider(t *testing.T, p cudaAPI) {
	t.Helper()
	old := provider
	provider = p
	t.Cleanup(func() { provider = old })
}

var noDriver = fmt.Errorf("%w: libcuda.so.1: cannot open shared object file", cuda.ErrNoDriver)

func TestGet(t *testing.T) {
	twoGPUs := fakeCUDA{n: 2}
	tests := []struct {
		name     string
		cuda     fakeCUDA
		spec     string
		wantKind backend.Kind
		wantOrd  int
		wantErr  string
	}{
		{name: "auto with gpu", cuda: twoGPUs, spec: "auto", wantKind: backend.CUDA},
		{name: "empty with gpu", cuda: twoGPUs, spec: "", wantKind: backend.CUDA},
		{name: "auto without driver", cuda: fakeCUDA{initErr: noDriver}, spec: "auto", wantKind: backend.CPU},
		{name: "auto with driver but no device", cuda: fakeCUDA{n: 0}, spec: " AUTO ", wantKind: backend.CPU},
		{name: "auto with broken device 0", cuda: fakeCUDA{n: 1, broken: map[int]bool{0: true}}, spec: "auto", wantKind: backend.CPU},
		{name: "cpu with gpu", cuda: twoGPUs, spec: "cpu", wantKind: backend.CPU},
		{name: "cpu:0", cuda: twoGPUs, spec: "CPU:0", wantKind: backend.CPU},
		{name: "cuda", cuda: twoGPUs, spec: "cuda", wantKind: backend.CUDA},
		{name: "cuda:1", cuda: twoGPUs, spec: "cuda:1", wantKind: backend.CUDA, wantOrd: 1},
		{name: "cuda out of range", cuda: twoGPUs, spec: "cuda:2", wantErr: `devices.Get: device="cuda:2": cuda.GetDevice: ordinal=2, expected 0 <= ordinal < 2`},
		{name: "cuda without driver", cuda: fakeCUDA{initErr: noDriver}, spec: "cuda", wantErr: `devices.Get: device="cuda": no CUDA driver: libcuda.so.1: cannot open shared object file (use "cpu" or "auto" to run without a GPU)`},
		{name: "gpu", cuda: twoGPUs, spec: "gpu", wantErr: `devices.Get: device="gpu", expected "auto", "", "cpu", "cuda" or "cuda:N" (N >= 0)`},
		{name: "cuda:", cuda: twoGPUs, spec: "cuda:", wantErr: `device="cuda:", expected`},
		{name: "cuda:-1", cuda: twoGPUs, spec: "cuda:-1", wantErr: `device="cuda:-1", expected`},
		{name: "cuda:+1", cuda: twoGPUs, spec: "cuda:+1", wantErr: `device="cuda:+1", expected`},
		{name: "cuda1", cuda: twoGPUs, spec: "cuda1", wantErr: `device="cuda1", expected`},
		{name: "cuda:x", cuda: twoGPUs, spec: "cuda:x", wantErr: `device="cuda:x", expected`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withProvider(t, tc.cuda)
			d, err := Get(tc.spec)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.Nil(t, d)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantKind, d.Kind())
			require.Equal(t, tc.wantOrd, d.Ordinal())
			if tc.wantKind == backend.CPU {
				require.Same(t, cpu.Default(), d)
			}
		})
	}
}

func TestGetWithoutDriverWrapsErrNoDriver(t *testing.T) {
	withProvider(t, fakeCUDA{initErr: noDriver})
	_, err := Get("cuda:0")
	require.ErrorIs(t, err, cuda.ErrNoDriver)
}

func TestAllAndAvailable(t *testing.T) {
	tests := []struct {
		name      string
		cuda      fakeCUDA
		wantKinds []backend.Kind
		wantAvail bool
	}{
		{"no driver", fakeCUDA{initErr: noDriver}, []backend.Kind{backend.CPU}, false},
		{"no devices", fakeCUDA{}, []backend.Kind{backend.CPU}, false},
		{"two gpus", fakeCUDA{n: 2}, []backend.Kind{backend.CUDA, backend.CUDA, backend.CPU}, true},
		{"broken gpu skipped", fakeCUDA{n: 2, broken: map[int]bool{0: true}}, []backend.Kind{backend.CUDA, backend.CPU}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withProvider(t, tc.cuda)
			require.Equal(t, tc.wantAvail, CUDAAvailable())
			var kinds []backend.Kind
			for _, d := range All() {
				kinds = append(kinds, d.Kind())
			}
			require.Equal(t, tc.wantKinds, kinds)
		})
	}
}

// TestRealDriver runs against whatever this machine has: on a host without
// a driver it checks the fallback, with one it checks device 0.
func TestRealDriver(t *testing.T) {
	d, err := Get("auto")
	require.NoError(t, err)
	all := All()
	require.Equal(t, backend.CPU, all[len(all)-1].Kind())
	if !cuda.Available() {
		require.False(t, CUDAAvailable())
		require.Same(t, cpu.Default(), d)
		_, err := Get("cuda")
		require.ErrorIs(t, err, cuda.ErrNoDriver)
		t.Skip("no CUDA driver on this machine; the CUDA branch is covered by the gpu-tagged test")
	}
	require.Equal(t, backend.CUDA, d.Kind())
	require.Equal(t, 0, d.Ordinal())
}

// TestDescribe: one record carries every field Python reads.
func TestDescribe(t *testing.T) {
	in, err := Describe(cpu.Default())
	require.NoError(t, err)
	require.Equal(t, "cpu", in.Kind)
	require.Equal(t, [2]int{0, 0}, in.ComputeCapability)
	require.Equal(t, [2]int{0, 0}, in.PriorityRange)
	require.Positive(t, in.TotalMemory)
	require.LessOrEqual(t, in.FreeMemory, in.TotalMemory)
}

// TestCUDAStatus: the record agrees with CUDAAvailable on this machine.
func TestCUDAStatus(t *testing.T) {
	st := CUDAStatus()
	require.Equal(t, CUDAAvailable(), st.Available)
	require.Equal(t, st.Available, st.Reason == "", "a reason exactly when unavailable")
	require.Equal(t, st.Available, st.Devices > 0)
}
