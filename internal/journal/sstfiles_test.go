package journal

import "testing"

// TestIsSSTFile: a RocksDB store's SST files and their checksums, and nothing else.
func TestIsSSTFile(t *testing.T) {
	for p, want := range map[string]bool{
		"state/0/1/SSTs/000008-3d07ed6d-9f5d-40f1-afc2-ede61373810f.sst":      true,
		"state/0/1/SSTs/.000008-3d07ed6d-9f5d-40f1-afc2-ede61373810f.sst.crc": true,
		"state/2/13/left-keyToNumValues/SSTs/000012-aa.sst":                   true,
		"state/0/1/SSTs/000008.sst":                                           false,
		"state/0/1/SSTs/000008-x.sst.crc":                                     false,
		"state/0/1/000008-x.sst":                                              false,
		"state/0/1/SSTs/6.zip":                                                false,
		"state/a/1/SSTs/000008-x.sst":                                         false,
		"offsets/SSTs/000008-x.sst":                                           false,
		"state/0/1/SSTs/../SSTs/000008-x.sst":                                 false,
		"state/0/1/store/extra/SSTs/000008-x.sst":                             false,
		"state/0/1/SSTs/000008-x.sst/":                                        false,
		"state/0/1/SSTs/abc-x.sst":                                            false,
	} {
		if got := IsSSTFile(p); got != want {
			t.Errorf("IsSSTFile(%q) = %v, want %v", p, got, want)
		}
	}
}
