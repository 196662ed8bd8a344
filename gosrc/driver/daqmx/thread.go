package daqmx

import "runtime"

// runtimeLock and runtimeUnlock pin the goroutine to its OS thread for one
// NI call and the read of its per-thread error information.
func runtimeLock()   { runtime.LockOSThread() }
func runtimeUnlock() { runtime.UnlockOSThread() }
