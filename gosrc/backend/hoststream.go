package backend

// HostStream is implemented by streams whose work runs on the host (the CPU
// backend). Enqueue runs fn in stream order: at once on a CPU stream, or
// recorded for replay while the stream is capturing a graph. Backend-neutral
// operations (gosrc/ops) use it to run their Go implementations.
type HostStream interface {
	Stream
	Enqueue(fn func()) error
}
