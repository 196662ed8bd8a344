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
