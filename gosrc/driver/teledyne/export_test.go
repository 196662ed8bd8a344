package teledyne

// RawInt reads an ADQParameters field as the board was given it (the
// header's value, not the driver's enumeration), for the tests.
func (b *Board) RawInt(name string, idx ...int) (int64, error) { return b.p.getInt(name, idx...) }

// The names of the fields the tests read.
const (
	FieldTriggerSource = fTriggerSource
	FieldNofRecords    = fNofRecords
	FieldReference     = fReferenceSource
	FieldSyncFunction  = fSyncFunction
)
