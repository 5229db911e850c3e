package migration

import "testing"

// Slim partition 0 holds raw[0]@0..9 at slim offsets 0, 2, 4, ... (commit
// markers between), with raw[0]@5 dead-lettered (no slim record).
func preserved() *Index {
	x := NewIndex()
	slim := int64(0)
	for o := range int64(10) {
		if o == 5 {
			continue
		}
		x.Add(0, slim, Partition{Topic: "raw", Partition: 0}, o)
		slim += 2
	}
	return x
}

func TestTranslateFindsTheNextRecord(t *testing.T) {
	x := preserved()
	raw0 := Partition{Topic: "raw", Partition: 0}
	for _, tc := range []struct {
		committed int64
		offset    int64
		next      string
	}{
		{0, 0, "raw[0]@0"},  // read nothing yet (committed at the start)
		{3, 6, "raw[0]@3"},  // read 0..2
		{5, 10, "raw[0]@6"}, // read 0..4; 5 was dead-lettered, so 6 is next
		{6, 10, "raw[0]@6"}, // read 0..5
		{10, 18, ""},        // read everything: at the end, past the trailing commit marker (lag 0)
		{42, 18, ""},        // read more than was migrated (the live pipeline has the rest)
	} {
		m := x.Translate(map[Partition]int64{raw0: tc.committed}, map[int32]int64{0: 18})
		if len(m) != 1 || m[0].Keep || m[0].Offset != tc.offset || m[0].Next != tc.next {
			t.Errorf("committed %d: %+v, want offset %d next %q", tc.committed, m, tc.offset, tc.next)
		}
	}
	// No commit on raw[0]: the slim partition is left as it is.
	if m := x.Translate(map[Partition]int64{}, map[int32]int64{0: 18, 1: 0}); len(m) != 2 || !m[0].Keep || !m[1].Keep {
		t.Errorf("no commit: %+v", m)
	}
}

// With key_hash a slim partition mixes source partitions: the group starts
// at the first record it had not read, and the plan counts what it reads again.
func TestTranslateCountsRereadsOfMixedPartitions(t *testing.T) {
	x := NewIndex()
	a, b := Partition{Topic: "raw", Partition: 0}, Partition{Topic: "raw", Partition: 1}
	x.Add(0, 0, a, 0)
	x.Add(0, 1, b, 0)
	x.Add(0, 2, a, 1)
	x.Add(0, 3, b, 1)
	m := x.Translate(map[Partition]int64{a: 2, b: 1}, map[int32]int64{0: 4})
	if len(m) != 1 || m[0].Offset != 3 || m[0].Reread != 0 || m[0].Next != "raw[1]@1" {
		t.Errorf("%+v", m)
	}
	m = x.Translate(map[Partition]int64{a: 1, b: 2}, map[int32]int64{0: 4})
	if len(m) != 1 || m[0].Offset != 2 || m[0].Reread != 1 {
		t.Errorf("%+v, want offset 2 with 1 record read again", m)
	}
}
