package nova

import "testing"

// TestKeyOf holds Key's contract: its text back as it was read, and two
// Keys equal exactly when their texts are, whether a text is kept as 16
// bytes or as is.
func TestKeyOf(t *testing.T) {
	texts := []string{
		"",
		"4c2f6b1e-7d3a-4e5f-9a0b-1c2d3e4f5a6b", // as uuidutils writes it: 16 bytes
		"4C2F6B1E-7D3A-4E5F-9A0B-1C2D3E4F5A6B", // upper case: kept as is
		"4c2f6b1e7d3a4e5f9a0b1c2d3e4f5a6b",     // no hyphens
		"4c2f6b1e-7d3a-4e5f-9a0b-1c2d3e4f5a6",  // 35 characters
		"4c2f6b1e-7d3a-4e5f-9a0b-1c2d3e4f5a6g", // not hex
		"4c2f6b1e-7d3a-4e5f-9a0b1-c2d3e4f5a6b", // a hyphen out of place
		"4c2f6b1e-7d3a-4e5f-9a0b-1c2d3e4f5a6b ",
		"00000000-0000-0000-0000-000000000000", // the nil uuid, not ""
		"ffffffff-ffff-ffff-ffff-ffffffffffff",
		"n1",
		"ironic-node-1.example.org",
	}
	packed := map[string]bool{
		"4c2f6b1e-7d3a-4e5f-9a0b-1c2d3e4f5a6b": true,
		"ffffffff-ffff-ffff-ffff-ffffffffffff": true,
	}
	for _, s := range texts {
		k := KeyOf(s)
		if got := k.String(); got != s {
			t.Errorf("KeyOf(%q).String() = %q", s, got)
		}
		if (k.text == "" && s != "") != packed[s] {
			t.Errorf("KeyOf(%q) = %+v: kept as 16 bytes %v, want %v", s, k, k.text == "" && s != "", packed[s])
		}
		for _, o := range texts {
			if (k == KeyOf(o)) != (s == o) {
				t.Errorf("KeyOf(%q) == KeyOf(%q) is %v", s, o, k == KeyOf(o))
			}
		}
	}
	if (Key{}) != KeyOf("") {
		t.Error(`the zero Key is not KeyOf("")`)
	}
}
