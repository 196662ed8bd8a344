package cuda

// The C fast path's entry points, for the tests in package cuda_test.
var (
	FastEventRecord = fastEventRecord
	FastEventQuery  = fastEventQuery
	FastEventSync   = fastEventSync
	FastStreamSync  = fastStreamSync
	FastStreamQuery = fastStreamQuery
	FastStreamWait  = fastStreamWait
)

// PeerTwin is another Device on d's context, as ordinal: the fake driver
// has one device, and peer access needs two.
func PeerTwin(d *Device, ordinal int) *Device {
	return &Device{ordinal: ordinal, dev: d.dev + 1, ctx: d.ctx, name: d.name}
}
