// eventring.h: the layout of the engine's event queue (gosrc/engine/eventring.go),
// which the Python dispatcher's C loop (python/vortexgo/_fastcall.c ring_next)
// reads with the GIL released and no call into Go.
//
// The ring is int64 words: a header of VG_RING_HEADER words, then the slots,
// VG_RING_FIELDS words each (an event record: engine.EventFields). Positions
// count records since the session began; the record at position p is in slot
// p % slots. Producers (Go) write records, then store head; the consumer reads
// head, copies the records below it and stores tail. Every header word is read
// and written atomically (sequentially consistent), as Go's sync/atomic does.
// TestEventRingHeader (gosrc/engine) checks these numbers against Go's.
#ifndef VG_ENGINE_EVENTRING_H
#define VG_ENGINE_EVENTRING_H
#include <stdint.h>
#define VG_RING_MAGIC 0             /* word: VG_RING_MAGIC_VALUE */
#define VG_RING_VERSION 1           /* word: VG_RING_VERSION_VALUE */
#define VG_RING_SLOTS 2             /* word: capacity in records */
#define VG_RING_FIELDS 3            /* word: int64 fields per record */
#define VG_RING_HEAD 8              /* records published (producers) */
#define VG_RING_TAIL 16             /* records taken (the consumer) */
#define VG_RING_ACKED 17            /* records taken before the consumer's last call */
#define VG_RING_PARKED 24           /* 1 while the consumer is parked in Go */
#define VG_RING_WAITERS 25          /* producers waiting for acked */
#define VG_RING_CLOSED 26           /* 1 once no record follows head */
#define VG_RING_HEADER 32           /* header words */
#define VG_RING_MAGIC_VALUE 0x5647524e47LL /* "VGRNG" */
#define VG_RING_VERSION_VALUE 1
#endif
