package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEventQueue(t *testing.T) {
	tests := []struct {
		name    string
		policy  QueuePolicy
		posts   int
		dropped int64
	}{
		{"drop counts overflow", QueueDrop, 5, 2},
		{"block after stop is best-effort", QueueBlock, 5, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newEventQueue(3, tc.policy, 0)
			stopping := make(chan struct{})
			close(stopping) // a stopped engine: posting must not block
			for i := range tc.posts {
				q.post(Event{Kind: EventUpdate, Sample: int64(i)}, stopping)
			}
			require.Equal(t, tc.dropped, q.dropped.Load())
			buf := make([]Event, 2)
			require.Equal(t, 2, q.next(buf, 0))
			require.Equal(t, []int64{0, 1}, []int64{buf[0].Sample, buf[1].Sample}, "FIFO order")
			q.close()
			require.Equal(t, 2, q.next(buf, -1), "the last event, then done")
			require.Equal(t, int64(2), buf[0].Sample)
			require.Equal(t, EventDone, buf[1].Kind)
			require.Zero(t, q.next(buf, time.Millisecond), "done is reported once")
		})
	}
}

func TestEventQueueTimeout(t *testing.T) {
	q := newEventQueue(1, QueueBlock, -1)
	buf := make([]Event, 1)
	start := time.Now()
	require.Zero(t, q.next(buf, 20*time.Millisecond))
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	go func() {
		time.Sleep(10 * time.Millisecond)
		q.post(Event{Kind: EventVolume}, nil)
	}()
	require.Equal(t, 1, q.next(buf, -1), "negative timeout waits")
	require.Equal(t, EventVolume, buf[0].Kind)
}

func TestPercentile(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	require.Equal(t, 5.0, percentile(v, 0.5))
	require.Equal(t, 10.0, percentile(v, 0.99))
	require.Zero(t, percentile(nil, 0.5))
}
