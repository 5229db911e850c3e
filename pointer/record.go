package pointer

import (
	"encoding/json"
	"fmt"
)

// HeaderRecord marks a pointer record whose object is a whole Kafka record
// (key, value, headers, coordinates) rather than a value: the dead-letter
// record of a record whose key or headers alone do not fit the dead-letter
// topic. Its value is "v1", the Record format below.
const HeaderRecord = "offloader-record"

// Record is a whole Kafka record kept as one object: a JSON object whose
// byte fields are base64 (standard alphabet, padded) and null when absent,
// so that keys, values and header names come back byte for byte.
//
//	{"topic":"orders.raw","partition":3,"offset":1207,"timestamp":1764583200000,
//	 "key":"a2V5","value":null,"headers":[{"key":"dHJhY2U=","value":"dDE="}]}
type Record struct {
	Topic     string         `json:"topic"`
	Partition int32          `json:"partition"`
	Offset    int64          `json:"offset"`
	Timestamp int64          `json:"timestamp"` // ms since the epoch
	Key       []byte         `json:"key"`
	Value     []byte         `json:"value"`
	Headers   []RecordHeader `json:"headers"`
}

// RecordHeader is one header of a Record; Value is null for a null header.
type RecordHeader struct {
	Key   []byte `json:"key"`
	Value []byte `json:"value"`
}

// Encode returns the record's JSON.
func (r Record) Encode() []byte {
	if r.Headers == nil {
		r.Headers = []RecordHeader{}
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic("pointer: encoding a record of strings, integers and bytes failed: " + err.Error())
	}
	return b
}

// DecodeRecord parses a Record object (the payload a HeaderRecord pointer
// resolves to).
func DecodeRecord(b []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("%w: not a record object: %v", ErrMalformed, err)
	}
	return r, nil
}
