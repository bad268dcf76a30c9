package storage

import (
	"strings"
	"testing"
)

// FuzzParseRemoteURI: the Azure and HDFS location parsers never panic, and what they accept is
// well-formed: a container and account, an https Blob URL on that account, a prefix without
// slashes at its ends; an absolute HDFS path.
func FuzzParseRemoteURI(f *testing.F) {
	for _, s := range []string{
		"abfss://fs@acct.dfs.core.windows.net/ckpt/q1", "wasbs://c@acct.blob.core.windows.net/", "abfs://c@a.dfs.x",
		"wasb://@a.blob.core.windows.net/x", "abfss://c@acct.file.core.windows.net/x",
		"hdfs://nn:8020/ckpt", "hdfs:///ckpt", "webhdfs://127.0.0.1:9870/a/b", "swebhdfs://h:1/", "hdfs://nn:port/x", "hdfs:x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		if loc, err := ParseAzureURI(uri); err == nil {
			if loc.Container == "" || loc.Account == "" || !strings.HasPrefix(loc.BlobURL, "https://"+loc.Account+".blob.") ||
				!strings.HasSuffix(loc.BlobURL, "/"+loc.Container) || strings.HasPrefix(loc.Prefix, "/") || strings.HasSuffix(loc.Prefix, "/") {
				t.Fatalf("ParseAzureURI(%q) = %+v", uri, loc)
			}
		}
		if scheme, host, p, err := parseHDFSURI(uri); err == nil {
			if !strings.HasPrefix(p, "/") || (scheme != "hdfs" && host == "") {
				t.Fatalf("parseHDFSURI(%q) = %q %q %q", uri, scheme, host, p)
			}
			if ep, err := hdfsEndpoint(scheme, host, Options{WebHDFSEndpoint: "http://x:1"}); err == nil && !strings.HasPrefix(ep, "http") {
				t.Fatalf("endpoint of %q = %q", uri, ep)
			}
		}
	})
}
