package migration

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
)

// fixture is a source partition of 10 records (a tombstone at 4, offset 7
// dead-lettered) and the slim records the pipeline made of them: those
// over 100 bytes as pointers.
func fixture() (src, slim, dead []*pipeline.Record) {
	for i := range 10 {
		r := &pipeline.Record{Topic: "raw", Partition: 2, Offset: int64(i), Key: fmt.Appendf(nil, "k%d", i),
			Value: []byte(strings.Repeat("v", 40*i)), Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i)),
			Headers: []pipeline.Header{{Key: "h", Value: []byte("x")}}}
		if i == 4 {
			r.Value = nil
		}
		src = append(src, r)
		if i == 7 {
			dead = append(dead, &pipeline.Record{Topic: "raw.dlt", Headers: []pipeline.Header{
				{Key: dlt.HeaderTopic, Value: []byte("raw")}, {Key: dlt.HeaderPartition, Value: []byte("2")}, {Key: dlt.HeaderOffset, Value: []byte("7")}}})
			continue
		}
		out := r.Clone()
		out.Topic, out.Offset = "slim", int64(100+i)
		if len(r.Value) > 100 {
			out.Value = []byte(`{"v":1}`)
			out.Headers = append(out.Headers, pipeline.Header{Key: pointer.HeaderLargeMessage, Value: []byte("true")},
				pipeline.Header{Key: pointer.HeaderPointer, Value: []byte("v1")})
		}
		out.Headers = append(out.Headers, pipeline.Header{Key: pointer.HeaderSource, Value: pointer.Source("raw", 2, int64(i))})
		slim = append(slim, out)
	}
	return src, slim, dead
}

// check runs parity over the fixture's partition; the slim records at the
// indexes of broken did not resolve, for the reason given.
func check(src, slim, dead []*pipeline.Record, values [][]byte, broken ...map[int]string) Result {
	p := NewParity()
	for _, r := range src {
		p.AddSource(r)
	}
	for i, r := range slim {
		if len(broken) > 0 && broken[0][i] != "" {
			p.AddBrokenSlim(r, broken[0][i])
			continue
		}
		if values[i] == nil {
			p.AddSlim(r, nil)
			continue
		}
		sum := sha256.Sum256(values[i])
		p.AddSlim(r, &sum)
	}
	for _, r := range dead {
		p.AddDeadLetter(r)
	}
	res, _ := p.Check(map[Partition]Range{{Topic: "raw", Partition: 2}: {0, 10}})
	return res[0]
}

// originals are the original values of the slim records, as the pointers'
// sha256 fields (or the inline values) give them.
func originals(src []*pipeline.Record, slim []*pipeline.Record) [][]byte {
	var out [][]byte
	for _, s := range slim {
		_, _, o, _ := pointer.ParseSource(func() []byte { v, _ := s.Header(pointer.HeaderSource); return v }())
		out = append(out, src[o].Value)
	}
	return out
}

func TestParityPassesWhenEveryRecordIsThereOnce(t *testing.T) {
	src, slim, dead := fixture()
	res := check(src, slim, dead, originals(src, slim))
	if !res.OK() || res.Source != 10 || res.Slim != 9 || res.DeadLettered != 1 || res.SourceDigest != res.SlimDigest {
		t.Errorf("%+v, want a pass with 10 = 9 + 1", res)
	}
}

// Each planted fault fails the partition and names the offset.
func TestParityNamesEachFault(t *testing.T) {
	for name, plant := range map[string]func(src, slim []*pipeline.Record) ([]*pipeline.Record, [][]byte){
		"offset 3 is missing from the slim topic": func(src, slim []*pipeline.Record) ([]*pipeline.Record, [][]byte) {
			slim = append(slim[:3:3], slim[4:]...)
			return slim, originals(src, slim)
		},
		"offset 5 differs in the slim topic": func(src, slim []*pipeline.Record) ([]*pipeline.Record, [][]byte) {
			values := originals(src, slim)
			values[5] = []byte("altered")
			return slim, values
		},
		"offset 2 is in the slim topic more than once": func(src, slim []*pipeline.Record) ([]*pipeline.Record, [][]byte) {
			slim = append(slim, slim[2])
			return slim, originals(src, slim)
		},
		"offset 6 differs in the slim topic": func(src, slim []*pipeline.Record) ([]*pipeline.Record, [][]byte) {
			slim[6] = slim[6].WithHeader("added", []byte("by a step"))
			return slim, originals(src, slim)
		},
	} {
		src, slim, dead := fixture()
		slim, values := plant(src, slim)
		if res := check(src, slim, dead, values); res.OK() || !strings.HasPrefix(res.Problem, name) {
			t.Errorf("%s: got %q", name, res.Problem)
		}
	}
}

// A slim record whose payload does not resolve fails its offset with why.
func TestParityNamesABrokenPayload(t *testing.T) {
	src, slim, dead := fixture()
	res := check(src, slim, dead, originals(src, slim), map[int]string{3: "payload does not match the pointer"})
	if res.OK() || res.Problem != "offset 3: payload does not match the pointer" {
		t.Errorf("got %q", res.Problem)
	}
}

// Records in another order in the slim topic than in the source fail
// parity, naming both offsets: the order decides which value a compacted
// slim topic keeps.
func TestParityNamesASwappedPair(t *testing.T) {
	src, slim, dead := fixture()
	slim[1].Offset, slim[2].Offset = slim[2].Offset, slim[1].Offset
	if res := check(src, slim, dead, originals(src, slim)); res.OK() || !strings.HasPrefix(res.Problem, "offsets 2 and 1 are out of order in the slim topic (partition 2, at 101 and 102)") {
		t.Errorf("got %q", res.Problem)
	}
}

// A record that already was a pointer on the source passes the pipeline
// unchanged, and parity compares it pointer to pointer: it passes.
func TestParityComparesAPassThroughPointerToItself(t *testing.T) {
	src, slim, dead := fixture()
	payload := []byte("the payload a serializer stored")
	ptr := pointer.Pointer{Store: "blob", Key: "producer/sha256/x", Size: int64(len(payload)), SHA256: pointer.Digest(sha256.Sum256(payload)), Codec: "none", StoredSize: int64(len(payload))}
	marked := []pipeline.Header{{Key: "h", Value: []byte("x")}, {Key: pointer.HeaderLargeMessage, Value: []byte("true")}, {Key: pointer.HeaderPointer, Value: []byte("v1")}}
	src[3].Value, src[3].Headers = ptr.Encode(), marked
	slim[3].Value = ptr.Encode()
	slim[3].Headers = append(append([]pipeline.Header(nil), marked...), pipeline.Header{Key: pointer.HeaderSource, Value: pointer.Source("raw", 2, 3)})
	values := originals(src, slim)
	values[3] = payload // the slim side takes the SHA-256 the pointer claims
	if res := check(src, slim, dead, values); !res.OK() {
		t.Errorf("a pass-through pointer: %q", res.Problem)
	}
}

// A dead-lettered record whose payload does not resolve (verify --deep)
// fails its offset with why: it is the only copy once the fat topic is gone.
func TestParityNamesABrokenDeadLetteredPayload(t *testing.T) {
	src, slim, dead := fixture()
	p := NewParity()
	for _, r := range src {
		p.AddSource(r)
	}
	for i, r := range slim {
		sum := sha256.Sum256(originals(src, slim)[i])
		if originals(src, slim)[i] == nil {
			p.AddSlim(r, nil)
			continue
		}
		p.AddSlim(r, &sum)
	}
	p.AddBrokenDeadLetter(dead[0], "payload does not match the pointer")
	res, _ := p.Check(map[Partition]Range{{Topic: "raw", Partition: 2}: {0, 10}})
	if res[0].OK() || res[0].Problem != "offset 7: payload does not match the pointer" || res[0].DeadLettered != 1 {
		t.Errorf("got %+v", res[0])
	}
}
